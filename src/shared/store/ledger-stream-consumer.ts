import type { Logger } from 'pino';
import type { LedgerStream } from '../counters/ledger-stream.js';
import type { Store } from './store.js';

// Writes ledger records that their settler could not (store unreachable, process killed between
// settling and writing) from the Redis ledger stream to the store. Only records older than
// `graceMs` are taken, so the settler's own write, normally done within milliseconds, is not
// duplicated in the common case; when both write, the store's idempotency by ledger id keeps
// the charge single. Every worker process runs one; they may race on a record, harmlessly.

export interface LedgerStreamConsumerOptions {
  /** How often pending records are looked for. */
  intervalMs?: number;
  /** Records younger than this are left to their settler. */
  graceMs?: number;
  /** Records written per round trip. */
  batch?: number;
}

export class LedgerStreamConsumer {
  private timer?: NodeJS.Timeout;
  private round?: Promise<void>;
  private failing = false;
  private readonly intervalMs: number;
  private readonly graceMs: number;
  private readonly batch: number;

  constructor(
    private readonly stream: LedgerStream,
    private readonly store: Store,
    private readonly logger: Logger,
    options: LedgerStreamConsumerOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 1000;
    this.graceMs = options.graceMs ?? 2000;
    this.batch = options.batch ?? 200;
  }

  start(): void {
    this.timer = setInterval(() => {
      this.round ??= this.drain()
        .then(() => undefined)
        .finally(() => {
          this.round = undefined;
        });
    }, this.intervalMs);
    this.timer.unref();
  }

  /** Stops looking; resolves once a round under way has finished. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.round;
  }

  /** Writes every pending record older than the grace period; returns how many it wrote. */
  async drain(): Promise<number> {
    let written = 0;
    try {
      for (;;) {
        const pending = await this.stream.pendingBefore(Date.now() - this.graceMs, this.batch);
        if (pending.length === 0) break;
        // One failure ends the round (the store is likely down); what was written is removed.
        const results = await Promise.allSettled(pending.map((record) => this.store.recordUsage(record.entry)));
        const done = pending.filter((_, index) => results[index]!.status === 'fulfilled').map((record) => record.streamId);
        await this.stream.remove(done);
        written += done.length;
        const failure = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
        if (failure) throw failure.reason;
        if (pending.length < this.batch) break;
      }
      if (this.failing) this.logger.info({ written }, 'ledger stream: the store is back; pending records written');
      this.failing = false;
    } catch (error) {
      // One line per outage, not one per round.
      if (!this.failing) this.logger.warn({ err: error instanceof Error ? error.message : String(error) }, 'ledger stream: cannot write pending records yet; they stay in Redis');
      this.failing = true;
    }
    return written;
  }
}
