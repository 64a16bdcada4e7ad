import type { JobEvent } from '../shared/job.js';

// Routes events from this ingress's channel to the request waiting for them, and checks their
// sequence: a gap means an event was lost, which must end the request with an error, not silence.

export interface PendingJob {
  onEvent(event: JobEvent): void;
  onGap(expected: number, received: number): void;
}

export class JobRouter {
  private readonly pending = new Map<string, { job: PendingJob; nextSeq: number }>();

  register(jobId: string, job: PendingJob): void {
    this.pending.set(jobId, { job, nextSeq: 0 });
  }

  unregister(jobId: string): void {
    this.pending.delete(jobId);
  }

  get size(): number {
    return this.pending.size;
  }

  readonly dispatch = (event: JobEvent): void => {
    const entry = this.pending.get(event.jobId);
    if (!entry) return;
    // A job picked up again by another worker (after a crash) starts its sequence anew.
    if (event.type === 'accepted' && event.seq === 0) entry.nextSeq = 0;
    if (event.seq < entry.nextSeq) return;
    if (event.seq > entry.nextSeq) {
      entry.job.onGap(entry.nextSeq, event.seq);
      return;
    }
    entry.nextSeq = event.seq + 1;
    entry.job.onEvent(event);
  };
}
