import type { Counters } from '../shared/counters/counters.js';
import type { EmbeddingsJob } from '../shared/job.js';
import type { Logger } from 'pino';
import { costNanos } from '../shared/pricing.js';
import type { LedgerEntry, Store } from '../shared/store/store.js';
import type { Usage } from '../shared/usage.js';
import type { ChainOutcome, ChainAttemptResult } from './fallback-chain.js';

// Settles an embeddings job as completions are settled: one ledger row (input tokens only, priced
// as the deployment that served it) and the budget reservation settled to that cost.

export interface SettlementParts {
  store: Store;
  counters: Counters;
  logger: Logger;
}

export async function settleEmbeddingsJob(parts: SettlementParts, job: EmbeddingsJob, outcome: ChainOutcome<ChainAttemptResult>, usage: Usage | undefined, status: number): Promise<void> {
  const { store, counters, logger } = parts;
  const served = outcome.servedModel;
  const cost = served && usage ? costNanos(served.pricing, usage.prompt_tokens, 0) : 0;
  const entry: LedgerEntry = {
    id: job.id,
    keyId: job.keyId,
    requestedModel: job.targets[0]!,
    servedModel: served?.id ?? null,
    attempts: outcome.attempts,
    promptTokens: usage?.prompt_tokens ?? 0,
    completionTokens: 0,
    costNanos: cost,
    status,
    latencyMs: Date.now() - job.enqueuedAt,
    estimated: usage?.estimated === true,
    stream: false,
    createdAt: new Date(job.enqueuedAt).toISOString(),
  };
  try {
    await store.recordUsage(entry);
  } catch (error) {
    logger.error({ err: error, jobId: job.id }, 'could not write the usage ledger');
  }
  if (!job.reservationId) return;
  try {
    // The admission's period (its time), as for completions: spend belongs to the day it was admitted.
    await counters.settle({ keyId: job.keyId, reservationId: job.reservationId, costNanos: cost, tokens: usage?.prompt_tokens ?? 0, budgetPeriod: job.budgetPeriod ?? 'none', now: job.enqueuedAt });
  } catch (error) {
    logger.error({ err: error, jobId: job.id }, 'could not settle the budget reservation');
  }
}
