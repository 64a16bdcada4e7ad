// Minimal Server-Sent Events reader for tests that check exact framing.
// Parsing follows the WHATWG event-stream rules: events end at a blank line; `data:` lines are joined
// with "\n"; one space after the colon is dropped; lines starting with ":" are comments; an event with
// no data line is not dispatched; an unterminated trailing block is discarded (check `raw` for it).

export interface SseEvent {
  event?: string;
  data: string;
}

export function parseSseText(raw: string): SseEvent[] {
  const events: SseEvent[] = [];
  const text = raw.replace(/^\uFEFF/, '').replace(/\r\n|\r/g, '\n');
  const blocks = text.split('\n\n');
  blocks.pop(); // whatever follows the last blank line is not a complete event
  for (const block of blocks) {
    let event: string | undefined;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line === '' || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
    if (data.length === 0) continue;
    events.push(event === undefined ? { data: data.join('\n') } : { event, data: data.join('\n') });
  }
  return events;
}

/** Reads a fetch Response body to the end (rejects if the stream errors) and splits it into SSE events. */
export async function readSse(response: Response): Promise<{ events: SseEvent[]; raw: string }> {
  const raw = await response.text();
  return { events: parseSseText(raw), raw };
}
