import type { Logger } from 'pino';
import type { QueuedJob } from '../job.js';
import type { Counters } from './counters.js';

/** A job that never ran (its client left, or it could not be run) gives back its reservation and concurrency slot at once. */
export async function releaseReservation(counters: Counters, job: QueuedJob, logger: Logger): Promise<void> {
  if (!job.reservationId) return;
  await counters
    .settle({ keyId: job.keyId, reservationId: job.reservationId, costNanos: 0, tokens: 0, budgetPeriod: job.budgetPeriod ?? 'none', project: job.project, now: job.enqueuedAt })
    .catch((error: Error) => logger.error({ err: error, jobId: job.id }, 'could not release the reservation of a dropped job'));
}
