import { randomUUID } from 'node:crypto';
import { GatewayError } from '../errors.js';
import type { QueuedJob, JobEventBody } from '../job.js';
import type { IngressTransport, JobControl, JobEventListener, JobHandler, WorkerTransport } from './transport.js';

// The embedded default: ingress and workers in one process. Jobs wait in an array and events are
// handed over as objects, with no serialisation, so this path adds next to nothing.

interface RunningJob {
  controller: AbortController;
}

export interface InProcessTransportOptions {
  /** Jobs allowed to wait for a free worker slot before enqueue answers `overloaded`. */
  maxQueued?: number;
  /** A job cancelled while it waited never runs; this releases what its admission reserved. */
  onDropped?: (job: QueuedJob) => Promise<void>;
}

export class InProcessTransport {
  readonly ingressId = `ingress-${randomUUID()}`;
  readonly workerId = `worker-${randomUUID()}`;
  private listener?: JobEventListener;
  private handler?: JobHandler;
  private concurrency = 0;
  private active = 0;
  private closing = false;
  private readonly waiting: QueuedJob[] = [];
  private readonly running = new Map<string, RunningJob>();
  private readonly maxQueued: number;
  private idleResolvers: Array<() => void> = [];

  constructor(private readonly options: InProcessTransportOptions = {}) {
    this.maxQueued = options.maxQueued ?? 10_000;
  }

  readonly ingress: IngressTransport = {
    ingressId: this.ingressId,
    start: async (listener) => {
      this.listener = listener;
    },
    enqueue: async (job) => {
      if (this.closing) throw new GatewayError('service_unavailable', 'The gateway is shutting down.');
      if (this.waiting.length >= this.maxQueued) {
        throw new GatewayError('overloaded', 'The gateway is saturated; try again shortly.', { retryAfterSeconds: 1 });
      }
      this.waiting.push(job);
      this.pump();
    },
    waitingCount: async () => this.waiting.length,
    cancel: (jobId) => {
      const running = this.running.get(jobId);
      if (running) running.controller.abort();
      else {
        // Still waiting for a worker: it never runs, and gives back what its admission reserved now.
        const index = this.waiting.findIndex((job) => job.id === jobId);
        if (index === -1) return;
        const [job] = this.waiting.splice(index, 1);
        this.options.onDropped?.(job!).catch(() => undefined);
      }
    },
    close: async () => {},
  };

  readonly worker: WorkerTransport = {
    workerId: this.workerId,
    start: async (handler, options) => {
      this.handler = handler;
      this.concurrency = options.concurrency;
      this.pump();
    },
    close: async (deadlineMs = 30_000) => {
      this.closing = true;
      if (this.active === 0) return;
      await Promise.race([
        new Promise<void>((resolve) => this.idleResolvers.push(resolve)),
        new Promise<void>((resolve) => setTimeout(resolve, deadlineMs).unref()),
      ]);
    },
  };

  private pump(): void {
    while (this.handler && this.active < this.concurrency && this.waiting.length > 0) {
      const job = this.waiting.shift()!;
      this.run(job);
    }
  }

  private run(job: QueuedJob): void {
    const controller = new AbortController();
    this.running.set(job.id, { controller });
    this.active += 1;
    let seq = 0;
    const control: JobControl = {
      signal: controller.signal,
      publish: (body: JobEventBody) => {
        this.listener?.({ ...body, jobId: job.id, seq: seq++ });
      },
      claimFirstToken: async () => true,
      flush: async () => {},
    };
    this.handler!(job, control)
      .catch(() => {})
      .finally(() => {
        this.running.delete(job.id);
        this.active -= 1;
        if (this.active === 0) for (const resolve of this.idleResolvers.splice(0)) resolve();
        this.pump();
      });
  }
}
