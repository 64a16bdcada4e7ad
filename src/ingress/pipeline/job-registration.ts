import { errorFromDescription, GatewayError } from '../../shared/errors.js';
import type { JobEvent, QueuedJob } from '../../shared/job.js';
import { carrierOf } from '../../shared/observability/tracing.js';
import type { KeyRecord, ProjectRecord } from '../../shared/store/store.js';
import type { IngressTransport } from '../../shared/transport/transport.js';
import type { AdmittedRequest } from '../admission.js';
import type { JobRouter, PendingJob } from '../job-router.js';
import type { MeteredJob } from './request-metering.js';
import type { RequestContext } from './request-wrapper.js';

// The last steps every job-backed route shares: register the reply for the job's events, queue the
// job, cancel it when the client leaves; a job that cannot be queued is unregistered and its
// reservation given back.

export interface JobRegistrationParts {
  transport: IngressTransport;
  router: JobRouter;
  /** Open requests, so that a draining server knows when it may exit. */
  openRequests: Set<string>;
}

/** How a route answers a job: its event handler, and optional steps around queueing. */
export interface JobReply {
  pending: PendingJob;
  /** Awaited before the job is queued (a background response is stored first). */
  ready?: Promise<void>;
  /** The job is queued. */
  enqueued?(): void;
  /** The job could not be queued (the caller answers the error): undo what `ready` did. */
  refused?(): void;
  /** The client went away; by default the job is cancelled. */
  clientGone?(): void;
}

/**
 * The fields every job takes from its admission: where its events go, the reservation to settle
 * (at the project too), whether budget alerts follow it, the key's expiry for the worker's last
 * check, and the trace it continues.
 */
export function admittedJobFields(call: RequestContext, transport: IngressTransport, key: KeyRecord, project: ProjectRecord | null, admitted: AdmittedRequest) {
  return {
    id: call.state.requestId,
    replyTo: transport.ingressId,
    keyId: key.id,
    reservationId: admitted.reservationId,
    reservedNanos: admitted.reservedNanos,
    budgetPeriod: key.budgetPeriod,
    ...(admitted.project ? { project: admitted.project } : {}),
    ...(key.alerts.length > 0 || (project?.alerts.length ?? 0) > 0 ? { alerting: true as const } : {}),
    ...(key.expiresAt ? { keyExpiresAt: key.expiresAt } : {}),
    enqueuedAt: Date.now(),
    trace: carrierOf(call.span),
  };
}

/**
 * A reply that answers once: from the job's `completed` event, or with the error of a failure or of
 * a lost event (the worker's events could not be followed).
 */
export function answerOnCompletion(finish: () => void, complete: (event: Extract<JobEvent, { type: 'completed' }>) => void, fail: (error: GatewayError) => void): PendingJob {
  return {
    onEvent(event) {
      if (event.type === 'completed') {
        finish();
        complete(event);
      } else if (event.type === 'failed') {
        finish();
        fail(errorFromDescription(event.error));
      }
    },
    onGap() {
      finish();
      fail(new GatewayError('worker_lost', 'Events of this request were lost between the worker and the gateway.'));
    },
  };
}

/** Watches a job's events for the request metrics (request-metering.ts). */
export type JobMeter = (pending: PendingJob) => MeteredJob;

/** `reply` gets `finish`, which releases the job's registration here; call it once, at the end. */
export async function enqueueWithReply(call: RequestContext, parts: JobRegistrationParts, job: QueuedJob, reply: (finish: () => void) => JobReply, release: () => Promise<unknown>, meter?: JobMeter): Promise<void> {
  const { transport, router, openRequests } = parts;
  const finish = () => {
    router.unregister(job.id);
    openRequests.delete(job.id);
  };
  const answer = reply(finish);
  const metered = meter?.(answer.pending);
  const gone = answer.clientGone ?? (() => {
    finish();
    transport.cancel(job.id);
  });
  call.onAbort = metered
    ? () => {
        metered.clientGone();
        gone();
      }
    : gone;
  router.register(job.id, metered ?? answer.pending);
  openRequests.add(job.id);
  try {
    await answer.ready;
    await transport.enqueue(job);
  } catch (error) {
    finish();
    metered?.discard();
    answer.refused?.();
    await release();
    throw error;
  }
  answer.enqueued?.();
}
