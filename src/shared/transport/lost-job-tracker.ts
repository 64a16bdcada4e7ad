import type { CompletionJob, ChoiceDelta, JobEvent } from '../job.js';

// Ingress side of "money is exact" when a worker dies after the first token: its own settlement
// never comes, yet the provider billed what was streamed. The ingress that held the stream knows
// what it delivered, so it keeps, per job it enqueued, the served model and the delivered text,
// and hands them over when the job ends with `worker_lost` after content began (the watchdog's
// verdict or a re-run refusing to repeat content). The text is kept as the deltas' own strings
// (no copies); the tokenizer runs only for a lost job.

export interface LostJob {
  job: CompletionJob;
  /** Model id of the `started` event; undefined when the job never started. */
  model?: string;
  deliveredText: string;
}

interface Tracked {
  job: CompletionJob;
  model?: string;
  pieces: string[];
}

/** The text a delta carries to the client: content, refusal and tool-call arguments. */
function deltaText(delta: ChoiceDelta, into: string[]): void {
  if (delta.content) into.push(delta.content);
  if (delta.refusal) into.push(delta.refusal);
  for (const call of delta.toolCalls ?? []) {
    if (call.function?.name) into.push(call.function.name);
    if (call.function?.arguments) into.push(call.function.arguments);
  }
}

export class LostJobTracker {
  private readonly jobs = new Map<string, Tracked>();

  track(job: CompletionJob): void {
    this.jobs.set(job.id, { job, pieces: [] });
  }

  forget(jobId: string): void {
    this.jobs.delete(jobId);
  }

  get size(): number {
    return this.jobs.size;
  }

  /** Follows one event of a job; returns the job when this event says its worker was lost mid-answer. */
  observe(event: JobEvent): LostJob | undefined {
    const tracked = this.jobs.get(event.jobId);
    if (!tracked) return undefined;
    switch (event.type) {
      case 'started':
        tracked.model = event.model;
        return undefined;
      case 'deltas':
        for (const delta of event.deltas) deltaText(delta, tracked.pieces);
        return undefined;
      case 'finished':
      case 'completed':
        this.jobs.delete(event.jobId);
        return undefined;
      case 'failed':
        this.jobs.delete(event.jobId);
        if (event.error.code !== 'worker_lost' || !event.started) return undefined;
        return { job: tracked.job, model: tracked.model, deliveredText: tracked.pieces.join('') };
      default:
        return undefined;
    }
  }
}
