import type { Logger } from 'pino';
import type { Counters } from '../shared/counters/counters.js';
import type { QueuedJob } from '../shared/job.js';
import type { LedgerEntry, Store } from '../shared/store/store.js';
import { createUsageSettler } from '../shared/store/usage-settler.js';

// How every kind of job ends in the books: its ledger record, and its reservation settled to the
// record's cost in the same step (see usage-settler.ts), so a store outage only delays the row.

export interface SettlementParts {
  store: Store;
  counters: Counters;
  logger: Logger;
}

export type JobSettler = (job: QueuedJob, entry: LedgerEntry, tokens: number) => Promise<void>;

export function createJobSettler(parts: SettlementParts): JobSettler {
  const settleUsage = createUsageSettler(parts);
  return async (job, entry, tokens) => {
    if (!job.reservationId) {
      // Admission made no reservation: nothing to settle in the counters, only the ledger.
      await parts.store.recordUsage(entry).catch((error: Error) => parts.logger.error({ err: error, jobId: job.id }, 'could not write the usage ledger'));
      return;
    }
    await settleUsage({
      keyId: job.keyId,
      reservationId: job.reservationId,
      costNanos: entry.costNanos,
      tokens,
      budgetPeriod: job.budgetPeriod ?? 'none',
      // The period of the admission, as the ledger row's createdAt: a request admitted before
      // midnight and settled after it is spend of the day it was admitted, in both.
      now: job.enqueuedAt,
      ledger: entry,
    });
  };
}
