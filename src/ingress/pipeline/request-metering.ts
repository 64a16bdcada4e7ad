import { errorFromDescription, GatewayError } from '../../shared/errors.js';
import { recordFirstToken, recordRefusal, recordRequest, streamClosed, streamOpened, unresolvedModel } from '../../shared/observability/metrics.js';
import { endSpan, startRequestSpan } from '../../shared/observability/tracing.js';
import type { PendingJob } from '../job-router.js';
import type { RequestContext, RouteHandler } from './request-wrapper.js';

// The ingress side of the metrics: every client request is counted once, when it ends, with the
// requested catalog model (set on the context once resolved, `none` before), the model that
// served it and its status. A request refused before it reached the queue is a refusal, by code.

/**
 * Counts what a route's handler throws (refusals: authentication, validation, limits, budget,
 * overload). What happens after enqueue is counted by meterJob.
 */
export function meteredHandler(surface: string, handler: RouteHandler): RouteHandler {
  return async (call) => {
    const startedAt = performance.now();
    call.startedAt = startedAt;
    call.span = startRequestSpan(surface, call.headers.traceparent, call.headers.tracestate);
    try {
      await handler(call);
    } catch (error) {
      const known = error instanceof GatewayError;
      if (known) recordRefusal(error.code);
      const status = known ? error.status : 500;
      recordRequest(surface, call.model ?? unresolvedModel, unresolvedModel, status, startedAt);
      if (call.span) endSpan(call.span, { 'http.response.status_code': status, 'gen_ai.request.model': call.model ?? unresolvedModel, 'error.type': known ? error.code : 'internal_error' }, true, known ? error.code : 'internal_error');
      throw error;
    }
  };
}

export interface MeteredJob extends PendingJob {
  /** The client left before the end: counted as 499. */
  clientGone(): void;
  /** The job never reached the queue (the handler's refusal is counted instead). */
  discard(): void;
}

/** Wraps a job's event handling so that its end (answer, failure, lost events, client gone) is counted once. */
export function meterJob(surface: string, call: RequestContext, stream: boolean, pending: PendingJob): MeteredJob {
  const model = call.model ?? unresolvedModel;
  const startedAt = call.startedAt ?? performance.now();
  let ended = false;
  let firstToken = false;
  if (stream) streamOpened();
  const end = (servedModel: string, status: number) => {
    if (ended) return;
    ended = true;
    if (stream) streamClosed();
    recordRequest(surface, model, servedModel, status, startedAt);
    if (call.span) endSpan(call.span, { 'http.response.status_code': status, 'gen_ai.request.model': model, 'gen_ai.response.model': servedModel }, status >= 500);
  };
  return {
    onEvent(event) {
      switch (event.type) {
        case 'started':
          if (!firstToken) {
            firstToken = true;
            recordFirstToken(surface, model, startedAt);
          }
          break;
        case 'finished':
        case 'completed':
          end(event.model, 200);
          break;
        case 'failed':
          end(unresolvedModel, errorFromDescription(event.error).status);
          break;
        default:
          break;
      }
      pending.onEvent(event);
    },
    onGap(expected, received) {
      end(unresolvedModel, 502);
      pending.onGap(expected, received);
    },
    clientGone() {
      end(unresolvedModel, 499);
    },
    discard() {
      if (ended) return;
      ended = true;
      if (stream) streamClosed();
      // The handler's refusal ends the span.
    },
  };
}
