// An SSE response read as it arrives, for tests that act while a stream is open.

/** Reads an SSE response as it arrives. */
export class StreamReader {
  raw = '';
  chunks: any[] = [];
  done = false;
  ended = false;
  private readonly reading: Promise<void>;

  constructor(response: Response) {
    const decoder = new TextDecoder();
    this.reading = (async () => {
      try {
        for await (const piece of response.body as unknown as AsyncIterable<Uint8Array>) {
          this.raw += decoder.decode(piece, { stream: true });
          this.parse();
        }
      } catch {
        // aborted by the test
      }
      this.ended = true;
    })();
  }

  private parse(): void {
    const frames = this.raw.split('\n\n');
    this.chunks = [];
    for (const frame of frames.slice(0, -1)) {
      const data = frame.replace(/^data: /, '');
      if (data === '[DONE]') this.done = true;
      else this.chunks.push(JSON.parse(data));
    }
  }

  get content(): string {
    return this.chunks.map((chunk) => chunk.choices?.[0]?.delta?.content ?? '').join('');
  }

  get error(): any {
    return this.chunks.find((chunk) => chunk.error)?.error;
  }

  finished(): Promise<void> {
    return this.reading;
  }
}
