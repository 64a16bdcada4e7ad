import type { QueuedJob, JobEvent, JobEventBody } from '../job.js';

// The contract between ingress and workers. The in-process transport (embedded default) and the
// BullMQ + Redis pub/sub transport (scaled out) both implement it, and both pass the same
// conformance suite (test/transport-conformance.test.ts).

export type JobEventListener = (event: JobEvent) => void;

export interface IngressTransport {
  /** Identifies this ingress process; jobs name it in `replyTo`. */
  readonly ingressId: string;
  /** Subscribes to this ingress's event channel. Resolves once events can no longer be missed. */
  start(listener: JobEventListener): Promise<void>;
  /** Queues a job. Throws GatewayError `overloaded` when the queue is saturated, `service_unavailable` when the queue cannot be reached. */
  enqueue(job: QueuedJob): Promise<void>;
  /** Asks whichever worker holds the job (or will take it) to stop it. */
  cancel(jobId: string): void;
  /** Jobs waiting for a worker now (the queue_waiting gauge reads it at scrape time). */
  waitingCount?(): Promise<number>;
  close(): Promise<void>;
}

export interface JobControl {
  /** Aborted when the client went away (cancel, or nobody listening to the events). */
  readonly signal: AbortSignal;
  /** Publishes the next event of this job; sequence numbers are assigned here. */
  publish(event: JobEventBody): void;
  /**
   * Claims the right to emit the first token. False when an earlier run of this job (a worker that
   * died) already emitted content: running again would repeat it, so the job must fail instead.
   */
  claimFirstToken(): Promise<boolean>;
  /** Waits until published events have been handed to the transport. */
  flush(): Promise<void>;
  /**
   * Whether the job's key was revoked, when the transport read it as the job started (scaled out:
   * in the same round trip as its cancelled check); undefined when the handler must ask the counters.
   */
  readonly keyRevoked?: boolean;
}

/** Runs jobs of one kind (`J`), or of every kind (the worker's dispatch, which the transport takes). */
export type JobHandler<J extends QueuedJob = QueuedJob> = (job: J, control: JobControl) => Promise<void>;

export interface WorkerTransport {
  readonly workerId: string;
  start(handler: JobHandler, options: { concurrency: number }): Promise<void>;
  /** Stops taking jobs and waits (up to `deadlineMs`) for running jobs to finish. */
  close(deadlineMs?: number): Promise<void>;
}
