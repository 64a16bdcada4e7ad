import type { SseEvent } from './chat-adapter.js';

/**
 * Decodes a server-sent-event byte stream into events. Network chunks split lines, multi-byte
 * characters and events anywhere, so text is buffered until a blank line closes an event.
 * One decoder serves every provider; adapters only see whole events.
 */
export class SseDecoder {
  private readonly textDecoder = new TextDecoder();
  private buffer = '';
  private eventName: string | undefined;
  private dataLines: string[] = [];

  push(chunk: Uint8Array | string): SseEvent[] {
    this.buffer += typeof chunk === 'string' ? chunk : this.textDecoder.decode(chunk, { stream: true });
    return this.drainLines();
  }

  /** Flushes an event left open when the stream ended without its closing blank line. */
  end(): SseEvent[] {
    this.buffer += this.textDecoder.decode();
    const events = this.drainLines();
    if (this.buffer.length > 0) {
      this.takeLine(this.buffer, events);
      this.buffer = '';
    }
    this.dispatch(events);
    return events;
  }

  private drainLines(): SseEvent[] {
    const events: SseEvent[] = [];
    let start = 0;
    for (;;) {
      const newline = this.buffer.indexOf('\n', start);
      if (newline === -1) break;
      let end = newline;
      if (end > start && this.buffer.charCodeAt(end - 1) === 13) end -= 1;
      this.takeLine(this.buffer.slice(start, end), events);
      start = newline + 1;
    }
    this.buffer = start === 0 ? this.buffer : this.buffer.slice(start);
    // A lone carriage return can only end a line once we know no \n follows; keep it buffered.
    return events;
  }

  private takeLine(line: string, events: SseEvent[]): void {
    if (line === '') {
      this.dispatch(events);
      return;
    }
    if (line.charCodeAt(0) === 58) return; // ':' starts a comment (keep-alive)
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') this.dataLines.push(value);
    else if (field === 'event') this.eventName = value;
  }

  private dispatch(events: SseEvent[]): void {
    if (this.dataLines.length === 0) {
      this.eventName = undefined;
      return;
    }
    const event: SseEvent = { data: this.dataLines.join('\n') };
    if (this.eventName !== undefined) event.event = this.eventName;
    events.push(event);
    this.dataLines = [];
    this.eventName = undefined;
  }
}
