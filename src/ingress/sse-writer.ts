import type { HttpResponse } from 'uWebSockets.js';
import type { ReplyState } from './http-reply.js';

// Streams server-sent events to one client. When the socket is backed up (write returns false)
// later frames wait in our own queue until onWritable; a reader that falls further behind than
// `maxQueuedBytes` is cut off rather than allowed to grow memory without bound.

export class SseWriter {
  private headersSent = false;
  private queue: string[] = [];
  private queuedBytes = 0;
  private backedUp = false;
  closed = false;

  constructor(
    private readonly res: HttpResponse,
    private readonly state: ReplyState,
    private readonly maxQueuedBytes: number,
    private readonly onOverflow: () => void,
  ) {}

  get started(): boolean {
    return this.headersSent;
  }

  /** Writes frames (each already `data: ...\n\n`) inside one cork. */
  send(frames: string): void {
    if (this.closed || this.state.aborted) return;
    if (this.backedUp) {
      this.queue.push(frames);
      this.queuedBytes += frames.length;
      if (this.queuedBytes > this.maxQueuedBytes) this.overflow();
      return;
    }
    this.res.cork(() => {
      this.writeHeadersOnce();
      if (!this.res.write(frames)) this.waitForDrain();
    });
  }

  /**
   * Sends the last frames and ends the response (after any queued frames). The chunked body is
   * terminated properly; uWS would write a stray Connection header into a started body if asked
   * to close the connection here.
   */
  end(frames: string): void {
    if (this.closed || this.state.aborted) return;
    if (this.backedUp) {
      this.queue.push(frames);
      this.closed = true;
      this.state.done = true;
      return;
    }
    this.closed = true;
    this.state.done = true;
    this.res.cork(() => {
      this.writeHeadersOnce();
      this.res.end(frames);
    });
  }

  private writeHeadersOnce(): void {
    if (this.headersSent) return;
    this.headersSent = true;
    this.res.writeStatus('200 OK');
    this.res.writeHeader('content-type', 'text/event-stream');
    this.res.writeHeader('cache-control', 'no-cache');
    this.res.writeHeader('x-request-id', this.state.requestId);
    if (this.state.extraHeaders) for (const [name, value] of this.state.extraHeaders) this.res.writeHeader(name, value);
  }

  private waitForDrain(): void {
    this.backedUp = true;
    this.res.onWritable(() => {
      if (this.state.aborted) return true;
      const pending = this.queue.join('');
      this.queue = [];
      this.queuedBytes = 0;
      const finishing = this.closed;
      if (finishing) {
        this.res.end(pending);
        return true;
      }
      const ok = pending.length === 0 ? true : this.res.write(pending);
      this.backedUp = !ok;
      return ok;
    });
  }

  private overflow(): void {
    this.closed = true;
    this.queue = [];
    this.queuedBytes = 0;
    this.state.done = true;
    this.onOverflow();
    this.res.close();
  }
}
