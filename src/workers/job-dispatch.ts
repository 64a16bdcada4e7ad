import { jobFinished, jobTaken } from '../shared/observability/metrics.js';
import { inJobSpans, tracingEnabled } from '../shared/observability/tracing.js';
import type { JobHandler } from '../shared/transport/transport.js';
import { createCompletionHandler, type CompletionWorkerDependencies } from './completion-worker.js';
import { createEmbeddingsHandler } from './embeddings-worker.js';

/** The handler a worker process gives its transport: each job goes to the handler of its kind. */
export function createJobHandler(dependencies: CompletionWorkerDependencies): JobHandler {
  const completions = createCompletionHandler(dependencies);
  const embeddings = createEmbeddingsHandler(dependencies);
  return async (job, control) => {
    jobTaken(job.enqueuedAt);
    try {
      if (!tracingEnabled()) await (job.kind === 'embeddings' ? embeddings(job, control) : completions(job, control));
      // The queue wait and the chain become spans of the request's trace, which the job carries.
      else await inJobSpans(job.trace, job.enqueuedAt, { 'switchboard.job.id': job.id, 'switchboard.model': job.targets[0] ?? '' }, () =>
        job.kind === 'embeddings' ? embeddings(job, control) : completions(job, control));
    } finally {
      jobFinished();
    }
  };
}
