import type { LedgerStream } from './ledger-stream.js';

// Removes written ledger records from the Redis ledger stream in batches: one XDEL for every record
// forgotten during the same event-loop turn (or `maxBatch` of them), instead of one per request;
// under load many settlements end in one turn. The batch goes out right after the current I/O
// phase (setImmediate), not after a timer: a record the store already holds must leave the stream
// about as soon as before, because a spend seed read meanwhile (the first admission of a key in a
// period, LedgerStream.pendingNanos plus the store) counts it twice, and the seed is kept for the
// period. A timer of 100 ms was tried and failed test/budgets-scaled.test.ts exactly so.

interface Batch {
  ids: string[];
  done: Promise<void>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class BatchedRecordRemoval {
  private batch?: Batch;
  private timer?: NodeJS.Immediate;

  constructor(
    private readonly stream: LedgerStream,
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
      this.timer = setImmediate(() => void this.flush().catch(() => undefined));
    }
    batch.ids.push(streamId);
    const done = batch.done;
    if (batch.ids.length >= this.maxBatch) void this.flush().catch(() => undefined);
    return done;
  }

  /** Sends what is gathered now (at close, before the connection goes). */
  flush(): Promise<void> {
    clearImmediate(this.timer);
    const batch = this.batch;
    if (!batch) return Promise.resolve();
    this.batch = undefined;
    this.stream.remove(batch.ids).then(batch.resolve, batch.reject);
    return batch.done;
  }
}
