import type { ErrorDescription } from '../errors.js';
import type { JobEvent } from '../job.js';

// Ingress side of "nothing runs twice" when scaled out. Workers send a heartbeat for every running
// job that has been otherwise silent for a second, so silence means the worker is gone:
// - a stream that already started is ended with an error event (never re-run: no content twice);
// - a job that was taken but had not started waits for BullMQ to hand it to another worker, up to
//   `rerunWaitMs`, then fails;
// - a job that no worker has taken fails after `queueWaitMs`.
// The failure is delivered as the job's next event (next sequence number), so the route handles it
// like any failure from a worker.

export interface WatchdogTimings {
  /** Silence (no event, no heartbeat) after which a running job's worker is taken for dead. */
  silenceMs: number;
  /** How long a job whose worker died before its first token may wait for another worker. */
  rerunWaitMs: number;
  /** How long a job may wait in the queue before any worker takes it. */
  queueWaitMs: number;
}

export const defaultWatchdogTimings: WatchdogTimings = { silenceMs: 4000, rerunWaitMs: 15_000, queueWaitMs: 60_000 };

type Phase = 'queued' | 'running' | 'streaming';

interface Watched {
  phase: Phase;
  nextSeq: number;
  lastEventAt: number;
  /** Events may have been lost (the subscriber reconnected): any silence past `silenceMs` fails. */
  suspect?: boolean;
}

export class JobWatchdog {
  private readonly jobs = new Map<string, Watched>();
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly timings: WatchdogTimings,
    /** Delivers a synthesized failure to the listener and stops the job wherever it is. */
    private readonly fail: (event: JobEvent) => void,
  ) {}

  start(): void {
    const every = Math.max(100, Math.min(500, Math.floor(this.timings.silenceMs / 4)));
    this.timer = setInterval(() => this.check(Date.now()), every);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  get size(): number {
    return this.jobs.size;
  }

  watch(jobId: string): void {
    this.jobs.set(jobId, { phase: 'queued', nextSeq: 0, lastEventAt: Date.now() });
  }

  forget(jobId: string): void {
    this.jobs.delete(jobId);
  }

  /** The event channel was down for a while: a job that now stays silent lost its events. */
  suspectAll(): void {
    const now = Date.now();
    for (const watched of this.jobs.values()) {
      watched.suspect = true;
      watched.lastEventAt = now;
    }
  }

  /** Called for every event from the channel, before the listener sees it. */
  observe(event: JobEvent): void {
    const watched = this.jobs.get(event.jobId);
    if (!watched) return;
    watched.lastEventAt = Date.now();
    // An event after the outage: a loss would show as a sequence gap, which the router reports.
    watched.suspect = false;
    if (event.type === 'accepted' && event.seq === 0) {
      watched.nextSeq = 0;
      watched.phase = 'running';
    }
    if (event.seq >= watched.nextSeq) watched.nextSeq = event.seq + 1;
    switch (event.type) {
      case 'started':
      case 'deltas':
        watched.phase = 'streaming';
        return;
      case 'finished':
      case 'completed':
      case 'failed':
        this.jobs.delete(event.jobId);
        return;
      default:
        return;
    }
  }

  check(now: number): void {
    for (const [jobId, watched] of this.jobs) {
      const silent = now - watched.lastEventAt;
      let error: ErrorDescription | undefined;
      if (watched.phase === 'streaming' && silent > this.timings.silenceMs) {
        error = { code: 'worker_lost', message: `The worker streaming this response stopped answering (silent for ${Math.round(silent / 1000)} s); the response is incomplete and was not retried, to avoid repeating content.` };
      } else if (watched.suspect && silent > this.timings.silenceMs) {
        error = { code: 'worker_lost', message: 'Events of this request were lost while the gateway\'s connection to Redis was down.' };
      } else if (watched.phase === 'running' && silent > this.timings.rerunWaitMs) {
        error = { code: 'worker_lost', message: `The worker running this request stopped and no other worker took it up within ${Math.round(silent / 1000)} s.` };
      } else if (watched.phase === 'queued' && silent > this.timings.queueWaitMs) {
        error = { code: 'service_unavailable', message: `No worker took this request within ${Math.round(silent / 1000)} s; the worker pool may be down or saturated.` };
      }
      if (!error) continue;
      this.jobs.delete(jobId);
      this.fail({ type: 'failed', error, started: watched.phase === 'streaming', jobId, seq: watched.nextSeq });
    }
  }
}
