import type { Redis } from 'ioredis';
import type { JobEvent } from '../job.js';

// Worker side of the event path. Events bound for one ingress channel are gathered for the rest of
// the current event-loop turn and sent as ONE PUBLISH (a JSON array; each event names its job).
// Measured (docs/scale-out.md): half the CPU per stream of a PUBLISH per delta, and no added
// latency when idle, unlike a trailing timer. Order is kept: one connection, batches in order.

export type DeliveryProblem = 'no_subscriber' | 'publish_failed';

interface PendingBatch {
  events: JobEvent[];
  done: Promise<void>;
  resolve: () => void;
}

export class RedisEventBatcher {
  private readonly pending = new Map<string, PendingBatch>();
  /** The last PUBLISH sent per channel, so flush() can wait for what is already on its way. */
  private readonly inFlight = new Map<string, Promise<void>>();
  private scheduled = false;

  /**
   * `onProblem` hears of events nobody received: no subscriber (the ingress holding the client is
   * gone) or a failed PUBLISH (Redis unreachable), with the job ids of the lost batch.
   */
  constructor(
    private readonly redis: Redis,
    private readonly onProblem: (channel: string, jobIds: Set<string>, problem: DeliveryProblem) => void,
  ) {}

  add(channel: string, event: JobEvent): void {
    let batch = this.pending.get(channel);
    if (!batch) {
      let resolve!: () => void;
      const done = new Promise<void>((r) => (resolve = r));
      batch = { events: [], done, resolve };
      this.pending.set(channel, batch);
    }
    batch.events.push(event);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.sendAll);
    }
  }

  /** Resolves once every event added so far for `channel` has been published (or given up on). */
  flush(channel: string): Promise<void> {
    const batch = this.pending.get(channel);
    if (batch) return batch.done;
    return this.inFlight.get(channel) ?? Promise.resolve();
  }

  /** Waits for everything pending on every channel. */
  async flushAll(): Promise<void> {
    await Promise.all([...this.pending.keys(), ...this.inFlight.keys()].map((channel) => this.flush(channel)));
  }

  private readonly sendAll = (): void => {
    this.scheduled = false;
    const batches = [...this.pending];
    this.pending.clear();
    for (const [channel, batch] of batches) {
      const sent = this.redis.publish(channel, JSON.stringify(batch.events)).then(
        (receivers) => {
          if (receivers === 0) this.onProblem(channel, jobIdsOf(batch.events), 'no_subscriber');
        },
        () => this.onProblem(channel, jobIdsOf(batch.events), 'publish_failed'),
      );
      const done = sent.finally(() => {
        batch.resolve();
        if (this.inFlight.get(channel) === done) this.inFlight.delete(channel);
      });
      this.inFlight.set(channel, done);
    }
  };
}

function jobIdsOf(events: JobEvent[]): Set<string> {
  return new Set(events.map((event) => event.jobId));
}
