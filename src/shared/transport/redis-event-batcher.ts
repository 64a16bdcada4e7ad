import type { Redis } from 'ioredis';
import type { JobEvent } from '../job.js';

// Worker side of the event path. Events bound for one ingress channel are gathered for the rest of
// the current event-loop turn and sent as ONE PUBLISH (a JSON array; each event names its job).
// Measured (docs/scale-out.md, bench/transport-design.ts): about a third of the CPU per stream of a
// PUBLISH per delta, and, unlike a trailing timer, no added latency when idle (setImmediate runs
// right after the current I/O phase). Order is kept: one connection, PUBLISHes in order.

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
    for (const [channel, batch] of batches) this.publish(channel, batch.events).then(batch.resolve);
  };

  private publish(channel: string, events: JobEvent[]): Promise<void> {
    const sent = this.redis.publish(channel, JSON.stringify(events)).then(
      (receivers) => {
        if (receivers === 0) this.onProblem(channel, jobIdsOf(events), 'no_subscriber');
      },
      () => this.onProblem(channel, jobIdsOf(events), 'publish_failed'),
    );
    const done = sent.finally(() => {
      if (this.inFlight.get(channel) === done) this.inFlight.delete(channel);
    });
    this.inFlight.set(channel, done);
    return done;
  }
}

function jobIdsOf(events: JobEvent[]): Set<string> {
  return new Set(events.map((event) => event.jobId));
}
