import type { JobHandler } from '../shared/transport/transport.js';
import { createCompletionHandler, type CompletionWorkerDependencies } from './completion-worker.js';
import { createEmbeddingsHandler } from './embeddings-worker.js';

/** The handler a worker process gives its transport: each job goes to the handler of its kind. */
export function createJobHandler(dependencies: CompletionWorkerDependencies): JobHandler {
  const completions = createCompletionHandler(dependencies);
  const embeddings = createEmbeddingsHandler(dependencies);
  return (job, control) => (job.kind === 'embeddings' ? embeddings(job, control) : completions(job, control));
}
