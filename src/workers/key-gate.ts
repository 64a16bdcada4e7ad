import type { Counters } from '../shared/counters/counters.js';
import { describeError, GatewayError, invalidApiKey, type ErrorDescription } from '../shared/errors.js';
import type { Logger } from 'pino';
import { releaseReservation } from '../shared/counters/release-reservation.js';
import type { QueuedJob } from '../shared/job.js';
import type { JobControl } from '../shared/transport/transport.js';

// The one check, made just before a queued job starts, that its key may still spend: a key
// revoked while its jobs waited in the queue must not reach a provider (nor be billed). Admission
// checked the same at enqueue time; a backlog can be seconds old. A key that expired while its job
// waited is refused the same way (the job carries the expiry). Scaled out, the transport read the
// revocation flag as the job started, in the round trip of its cancelled check (control.keyRevoked);
// otherwise one counters read (a Set lookup in the embedded default).

export async function keyRefusal(counters: Counters, job: QueuedJob, known?: boolean): Promise<ErrorDescription | null> {
  if (job.keyExpiresAt !== undefined && Date.parse(job.keyExpiresAt) <= Date.now()) return describeError(invalidApiKey());
  let revoked: boolean;
  try {
    revoked = known ?? (await counters.isRevoked(job.keyId));
  } catch {
    // Cannot tell: refuse rather than risk running (and billing) a revoked key's job.
    return describeError(new GatewayError('service_unavailable', 'The gateway could not check this key before running the request; try again shortly.', { retryAfterSeconds: 1 }));
  }
  return revoked ? describeError(invalidApiKey()) : null;
}

/**
 * Ends a job whose key may no longer spend before it reaches a provider: it costs nothing and gives
 * its reservation back. True when the job was refused.
 */
export async function refusedBeforeStart(counters: Counters, job: QueuedJob, control: JobControl, logger: Logger): Promise<boolean> {
  const refusal = await keyRefusal(counters, job, control.keyRevoked);
  if (!refusal) return false;
  control.publish({ type: 'failed', error: refusal, started: false });
  await releaseReservation(counters, job, logger);
  await control.flush();
  logger.info({ jobId: job.id, keyId: job.keyId, code: refusal.code }, 'queued job refused before it started');
  return true;
}
