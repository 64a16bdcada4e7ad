import type { EmbeddingsJob } from '../shared/job.js';
import { costNanos } from '../shared/pricing.js';
import type { LedgerEntry } from '../shared/store/store.js';
import type { Usage } from '../shared/usage.js';
import type { ChainOutcome, ChainAttemptResult } from './fallback-chain.js';


/** The ledger record of an embeddings job: input tokens only, priced as the deployment that served it. */
export function embeddingsLedgerEntry(job: EmbeddingsJob, outcome: ChainOutcome<ChainAttemptResult>, usage: Usage | undefined, status: number): LedgerEntry {
  const served = outcome.servedModel;
  return {
    id: job.id,
    keyId: job.keyId,
    requestedModel: job.targets[0]!,
    servedModel: served?.id ?? null,
    attempts: outcome.attempts,
    promptTokens: usage?.prompt_tokens ?? 0,
    completionTokens: 0,
    costNanos: served && usage ? costNanos(served.pricing, usage.prompt_tokens, 0) : 0,
    status,
    latencyMs: Date.now() - job.enqueuedAt,
    estimated: usage?.estimated === true,
    stream: false,
    createdAt: new Date(job.enqueuedAt).toISOString(),
  };
}
