import type { LedgerStream } from './ledger-stream.js';

// Removes written ledger records from the Redis ledger stream in batches: one XDEL for every
// record forgotten within `delayMs` (or `maxBatch` of them), instead of one per request. A record
// stays in the stream that much longer, which is harmless: the LedgerStreamConsumer leaves records
// younger than its grace period (2 s) to their settler, a record written twice is charged once
// (store writes are idempotent by ledger id), and a spend seed that reads the stream meanwhile
// counts it twice for a moment (too much, never too little: see LedgerStream.pendingNanos).

interface Batch {
  ids: string[];
  done: Promise<void>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class BatchedRecordRemoval {
  private batch?: Batch;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly stream: LedgerStream,
    private readonly delayMs = 100,
    private readonly maxBatch = 500,
  ) {}

  /** Resolves once the batch holding this record has been removed (rejects if that failed). */
  remove(streamId: string): Promise<void> {
    let batch = this.batch;
    if (!batch) {
      let resolve!: () => void;
      let reject!: (error: unknown) => void;
      const done = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      batch = { ids: [], done, resolve, reject };
      this.batch = batch;
      this.timer = setTimeout(() => void this.flush().catch(() => undefined), this.delayMs);
      this.timer.unref();
    }
    batch.ids.push(streamId);
    const done = batch.done;
    if (batch.ids.length >= this.maxBatch) void this.flush().catch(() => undefined);
    return done;
  }

  /** Sends what is gathered now (at close, before the connection goes). */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    const batch = this.batch;
    if (!batch) return Promise.resolve();
    this.batch = undefined;
    this.stream.remove(batch.ids).then(batch.resolve, batch.reject);
    return batch.done;
  }
}
