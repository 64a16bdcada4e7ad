import type { Logger } from 'pino';
import type { AlertMonitor } from '../shared/alerts/alert-monitor.js';
import type { Counters } from '../shared/counters/counters.js';
import type { AttemptRecord, QueuedJob } from '../shared/job.js';
import type { ModelEntry } from '../shared/catalog/catalog-types.js';
import { usageCostNanos } from '../shared/pricing.js';
import { usageSplit, type Usage } from '../shared/usage.js';
import type { LedgerEntry, Store } from '../shared/store/store.js';
import { createUsageSettler, jobSettlement } from '../shared/store/usage-settler.js';

// How every kind of job ends in the books: its ledger record, and its reservation settled to the
// record's cost in the same step (see usage-settler.ts), so a store outage only delays the row.

export interface SettlementParts {
  store: Store;
  counters: Counters;
  logger: Logger;
  alerts?: AlertMonitor;
}

export type JobSettler = (job: QueuedJob, entry: LedgerEntry, tokens: number) => Promise<void>;

export function createJobSettler(parts: SettlementParts): JobSettler {
  const settleUsage = createUsageSettler(parts);
  return async (job, entry, tokens) => {
    await settle(job, entry, tokens);
    // After the ledger has the cost: the alert check reads the period's spend from the store.
    if (job.alerting) parts.alerts?.check(job.keyId, job.project?.id);
  };

  async function settle(job: QueuedJob, entry: LedgerEntry, tokens: number): Promise<void> {
    if (!job.reservationId) {
      // Admission made no reservation: nothing to settle in the counters, only the ledger.
      await parts.store.recordUsage(entry).catch((error: Error) => parts.logger.error({ err: error, jobId: job.id }, 'could not write the usage ledger'));
      return;
    }
    await settleUsage(jobSettlement(job, entry, tokens));
  }
}

/** A job's ledger record: the model that served it (if any), priced as the deployment that did. */
export function ledgerEntry(job: QueuedJob, outcome: { attempts: AttemptRecord[]; servedModel?: ModelEntry }, usage: Usage | undefined, status: number): LedgerEntry {
  const served = outcome.servedModel;
  const split = usage ? usageSplit(usage) : undefined;
  return {
    id: job.id,
    keyId: job.keyId,
    requestedModel: job.targets[0]!,
    servedModel: served?.id ?? null,
    attempts: outcome.attempts,
    promptTokens: usage?.prompt_tokens ?? 0,
    completionTokens: usage?.completion_tokens ?? 0,
    costNanos: served && usage ? usageCostNanos(served.pricing, usage) : 0,
    cacheReadTokens: split?.cacheReadTokens ?? 0,
    cacheWriteTokens: split?.cacheWriteTokens ?? 0,
    cacheWrite1hTokens: split?.cacheWrite1hTokens ?? 0,
    reasoningTokens: split?.reasoningTokens ?? 0,
    status,
    latencyMs: Date.now() - job.enqueuedAt,
    estimated: usage?.estimated === true,
    stream: job.stream,
    createdAt: new Date(job.enqueuedAt).toISOString(),
  };
}
