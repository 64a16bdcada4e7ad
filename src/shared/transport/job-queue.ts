import type { QueuedJob } from '../job.js';

// The queue under the scaled-out transport, behind two small interfaces so that the transport's
// event path, cancellation and first-token claim stay one piece of code whichever queue carries the
// jobs: BullMQ (bullmq-job-queue.ts) or lists of our own (list-job-queue.ts), chosen with
// SWITCHBOARD_QUEUE. Both run under the same transport conformance and scaled-out fault suites.

export const queueKinds = ['bullmq', 'lists'] as const;
export type QueueKind = (typeof queueKinds)[number];

/** Ingress side: puts jobs in, and says how many wait for a worker (load shedding, metrics). */
export interface JobProducer {
  add(job: QueuedJob): Promise<void>;
  waitingCount(): Promise<number>;
  close(): Promise<void>;
}

/** Worker side: takes jobs and runs them, at most `concurrency` at once. */
export interface JobConsumer {
  start(run: (job: QueuedJob) => Promise<void>, concurrency: number): Promise<void>;
  /** Stops taking jobs and resolves once the running ones have finished. */
  close(): Promise<void>;
}

export interface ConsumerTimings {
  /** A running job is handed to another worker once its worker has been silent this long. */
  lockDurationMs: number;
  /** How often jobs of silent workers are looked for. */
  stalledIntervalMs: number;
}
