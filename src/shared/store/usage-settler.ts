import type { Logger } from 'pino';
import type { Counters, ProjectCharge, SettleReceipt, Settlement } from '../counters/counters.js';
import type { BudgetPeriod, LedgerEntry, Store } from './store.js';

// The one way a request's cost is settled, by a worker when its job ends and by an ingress that
// bills a lost worker's stream: the counters first (spend, reservation release and, in Redis, the
// durable ledger stream record, in one atomic step; at most once per ledger id), then the store.
// With Redis counters a failed store write loses nothing: the record stays in the stream and a
// LedgerStreamConsumer writes it once the store is back. With the memory counters (embedded, one
// process, SQLite beside it) the store is written directly.

export type FinalSettlement = Settlement & { ledger: LedgerEntry };

/** What a job's settlement needs of the job: its key, its admission's reservation, period and project, and when it was admitted. */
export interface SettledJob {
  keyId: string;
  reservationId?: string;
  budgetPeriod?: BudgetPeriod;
  project?: ProjectCharge;
  enqueuedAt: number;
}

/**
 * A job's final settlement: its ledger record, charged against the reservation admission made, in
 * the admission's period (the ledger row's createdAt): a request admitted before midnight and
 * settled after it is spend of the day it was admitted, in both.
 */
export function jobSettlement(job: SettledJob, entry: LedgerEntry, tokens: number): FinalSettlement {
  return {
    keyId: job.keyId,
    reservationId: job.reservationId ?? '',
    costNanos: entry.costNanos,
    tokens,
    budgetPeriod: job.budgetPeriod ?? 'none',
    project: job.project,
    now: job.enqueuedAt,
    ledger: entry,
  };
}

export interface UsageSettlerParts {
  counters: Counters;
  store: Store;
  logger: Logger;
}

export type SettleResult = 'settled' | 'deferred' | 'duplicate' | 'failed';

/** How long a settlement whose record is already in the ledger stream waits for the store. */
const DURABLE_WRITE_WAIT_MS = 2000;

async function settledWithin(work: Promise<unknown>, ms: number): Promise<'done' | 'slow'> {
  let timer: NodeJS.Timeout | undefined;
  const slow = new Promise<'slow'>((resolve) => {
    timer = setTimeout(() => resolve('slow'), ms);
  });
  try {
    // A rejection counts as done: the caller awaits the work again and handles the error.
    return await Promise.race([work.then(() => 'done' as const, () => 'done' as const), slow]);
  } finally {
    clearTimeout(timer);
  }
}

export function createUsageSettler(parts: UsageSettlerParts): (settlement: FinalSettlement) => Promise<SettleResult> {
  const { counters, store, logger } = parts;
  return async (settlement) => {
    const jobId = settlement.ledger.id;
    let receipt: SettleReceipt | undefined;
    try {
      receipt = await counters.settle(settlement);
    } catch (error) {
      // Unknown whether the counters applied it; the store write below is idempotent either way.
      logger.error({ err: error, jobId }, 'could not settle the budget reservation');
    }
    if (receipt && !receipt.applied) return 'duplicate';
    try {
      const written = store.recordUsage(settlement.ledger);
      if (receipt?.streamId && (await settledWithin(written, DURABLE_WRITE_WAIT_MS)) === 'slow') {
        // A store that hangs (not refusing, just silent) must not hold the answer: the record is
        // safe in the stream, and this write, if it ever lands, is idempotent.
        written.catch(() => undefined);
        logger.warn({ jobId }, 'ledger write deferred: the store is slow; the record waits in the Redis ledger stream');
        return 'deferred';
      }
      await written;
    } catch (error) {
      if (receipt?.streamId) {
        logger.warn({ err: error, jobId }, 'ledger write deferred: the record waits in the Redis ledger stream until the store is back');
        return 'deferred';
      }
      logger.error({ err: error, jobId }, 'could not write the usage ledger');
      return 'failed';
    }
    if (receipt?.streamId) {
      // Not awaited: the answer need not wait for it. A record left behind is written again
      // later, idempotently: no money is lost or doubled.
      void counters.forgetLedgerRecord(receipt.streamId).catch((error: Error) => logger.warn({ err: error.message, jobId }, 'could not remove a written ledger record from the stream'));
    }
    return 'settled';
  };
}
