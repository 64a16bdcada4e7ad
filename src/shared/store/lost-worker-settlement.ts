import type { Logger } from 'pino';
import { highestPricing, type Catalog } from '../catalog/catalog-types.js';
import type { LostJob } from '../transport/lost-job-tracker.js';
import { costNanos } from '../pricing.js';
import { countPromptTokens, countTextTokens } from '../token-counter.js';
import type { LedgerEntry } from './store.js';
import { jobSettlement, type FinalSettlement, type SettleResult } from './usage-settler.js';

// Bills a stream whose worker died after its first token: the provider charged for what it
// streamed, and the worker's settlement will never come. The estimate is the tokenizer's count of
// the prompt and of the text the ingress delivered, at the model's dearest deployment price
// (admission reserved at that price, so the reservation covers it, and the estimate is capped by
// it). The ledger row is marked estimated, status 502, attempt outcome `worker_lost`. It is
// settled under the request's own ledger id, so if the worker was only slow and settles after
// all, whichever comes first is the one charge.

export function lostWorkerEntry(catalog: Catalog, lost: LostJob, now: number): { entry: LedgerEntry; tokens: number } {
  const { job } = lost;
  const modelId = lost.model ?? job.targets[0]!;
  const model = catalog.models.get(modelId);
  const promptTokens = countPromptTokens(job.request);
  const completionTokens = countTextTokens(lost.deliveredText);
  let cost = model ? costNanos(highestPricing(model), promptTokens, completionTokens) : 0;
  if (job.reservedNanos && job.reservedNanos > 0) cost = Math.min(cost, job.reservedNanos);
  const latencyMs = Math.max(0, now - job.enqueuedAt);
  const entry: LedgerEntry = {
    id: job.id,
    keyId: job.keyId,
    requestedModel: job.targets[0]!,
    servedModel: modelId,
    attempts: [{
      model: modelId,
      provider: model?.provider ?? 'unknown',
      outcome: 'worker_lost',
      message: 'The worker died after the first token; usage estimated from the prompt and the delivered text.',
      latencyMs,
    }],
    promptTokens,
    completionTokens,
    costNanos: cost,
    status: 502,
    latencyMs,
    estimated: true,
    stream: job.stream,
    createdAt: new Date(job.enqueuedAt).toISOString(),
  };
  return { entry, tokens: promptTokens + completionTokens };
}

export function createLostWorkerBiller(options: {
  catalog: Catalog;
  settle: (settlement: FinalSettlement) => Promise<SettleResult>;
  logger: Logger;
}): (lost: LostJob) => void {
  const { catalog, settle, logger } = options;
  return (lost) => {
    const { job } = lost;
    const { entry, tokens } = lostWorkerEntry(catalog, lost, Date.now());
    settle(jobSettlement(job, entry, tokens))
      .then((result) => logger.info({ jobId: job.id, keyId: job.keyId, costNanos: entry.costNanos, result }, 'billed a lost worker\'s stream by estimate'))
      .catch((error: Error) => logger.error({ err: error, jobId: job.id }, 'could not bill a lost worker\'s stream'));
  };
}
