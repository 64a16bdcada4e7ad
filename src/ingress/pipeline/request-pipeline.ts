import type { HttpResponse } from 'uWebSockets.js';
import type { Catalog } from '../../shared/catalog/catalog-types.js';
import type { Counters } from '../../shared/counters/counters.js';
import { errorFromDescription, GatewayError } from '../../shared/errors.js';
import type { CompletionJob } from '../../shared/job.js';
import { checkProviderCallLimit } from '../../shared/providers/provider-call-limit.js';
import type { KeyRecord } from '../../shared/store/store.js';
import type { IngressTransport } from '../../shared/transport/transport.js';
import { admitRequest } from '../admission.js';
import { authenticate } from '../authenticate.js';
import type { ReplyState } from '../http-reply.js';
import type { JobRouter, PendingJob } from '../job-router.js';
import type { KeyDirectory } from '../key-directory.js';
import { noteRefusal, type RefusalCounts } from '../refusal-counts.js';
import { SseWriter } from '../sse-writer.js';
import { costHeaders } from './cost-header.js';
import { admittedJobFields, answerOnCompletion, enqueueWithReply, type JobReply } from './job-registration.js';
import { resolveTargets } from './model-resolution.js';
import { meteredHandler, meterJob } from './request-metering.js';
import { tracingEnabled } from '../../shared/observability/tracing.js';
import type { RequestContext, RouteHandler, RouteOptions } from './request-wrapper.js';
import { replyRendered } from './surface-reply.js';
import type { RenderContext, RenderingSurface, Surface, SurfaceHeaders } from './surface.js';

// The one request pipeline every client API runs on: authenticate from the headers, read and parse
// the body (the surface's part), resolve the models, admit (limits and reservation), register for
// the job's events, enqueue, and relay the events to the surface's renderers. Cancellation and the
// settlement of refused or dropped requests are handled here once for every surface.

export interface PipelineDependencies {
  catalog: Catalog;
  counters: Counters;
  keys: KeyDirectory;
  transport: IngressTransport;
  router: JobRouter;
  maxQueuedStreamBytes: number;
  /** Output tokens below which a budget refuses a request instead of lowering its max tokens. */
  minOutputTokens?: number;
  /** Open requests, so that a draining server knows when it may exit. */
  openRequests: Set<string>;
  /** Counts 401/402/403/429 refusals per key and model (absent: not counted). */
  refusals?: RefusalCounts;
}

/** Who a request is, as far as it got: what a refusal is counted against. */
export interface RequestParty {
  keys: KeyDirectory;
  credential: string;
  keyId?: string;
  model?: string;
}

/** Runs a route's handler, counting the refusal it ends with (if any) against its key and model. */
export async function countingRefusals(refusals: RefusalCounts | undefined, party: RequestParty, run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (error) {
    await noteRefusal(refusals, error, party);
    throw error;
  }
}

/** Bearer keys, or the key alone in x-api-key as Anthropic clients send it. */
export function credentialOf(headers: SurfaceHeaders): string {
  const authorization = headers.authorization ?? '';
  if (authorization) return authorization;
  const apiKey = headers['x-api-key'] ?? '';
  return apiKey ? `Bearer ${apiKey}` : '';
}

/** How the request wrapper serves a surface's route: its headers, a body, its error shape. */
export function surfaceRouteOptions(surface: Surface): RouteOptions {
  return {
    // The W3C trace context is read only when traces are on (startTracing runs before the routes exist).
    headers: tracingEnabled() ? [...surface.headerNames, 'traceparent', 'tracestate'] : surface.headerNames,
    body: true,
    renderError: (res, state, error, closeConnection) => replyRendered(res, state, surface.renderError(asGatewayError(error)), closeConnection),
  };
}

function asGatewayError(error: unknown): GatewayError {
  return error instanceof GatewayError ? error : new GatewayError('internal_error', 'The gateway failed while handling this request.');
}

export function createSurfaceHandler(surface: Surface, dependencies: PipelineDependencies): RouteHandler {
  const { catalog, counters, keys, transport } = dependencies;

  const fail = (res: HttpResponse, state: ReplyState, error: unknown) => replyRendered(res, state, surface.renderError(asGatewayError(error)));

  function jsonReply(rendering: RenderingSurface, res: HttpResponse, state: ReplyState, context: RenderContext, finish: () => void): PendingJob {
    return answerOnCompletion(
      finish,
      (event) => replyRendered(res, state, { status: 200, body: rendering.renderCompletion(context, event), headers: costHeaders(event.usage) }),
      (error) => fail(res, state, error),
    );
  }

  function streamingReply(rendering: RenderingSurface, res: HttpResponse, state: ReplyState, context: RenderContext, finish: () => void): PendingJob {
    const writer = new SseWriter(res, state, dependencies.maxQueuedStreamBytes, () => {
      finish();
      transport.cancel(state.requestId);
    });
    const renderer = rendering.createStream(context);
    let opened = false;
    const open = (model: string) => {
      opened = true;
      writer.send(renderer.start(model));
    };
    const failStream = (error: GatewayError) => {
      finish();
      if (writer.started && opened) writer.end(renderer.error({ code: error.code, message: error.message, status: error.status }));
      else fail(res, state, error);
    };
    return {
      onEvent(event) {
        switch (event.type) {
          case 'started':
            open(event.model);
            return;
          case 'deltas':
            if (opened) writer.send(renderer.deltas(event.deltas));
            return;
          case 'finished':
            finish();
            if (!opened) open(event.model);
            writer.end(renderer.finish(event.model, event.usage));
            return;
          case 'failed':
            failStream(errorFromDescription(event.error));
            return;
          default:
            return;
        }
      },
      onGap() {
        failStream(new GatewayError('worker_lost', 'Events of this stream were lost between the worker and the gateway.'));
      },
    };
  }

  /** Registered through the request wrapper with surfaceRouteOptions. */
  return meteredHandler(surface.name, (call: RequestContext) => {
    const party: RequestParty = { keys, credential: credentialOf(call.headers) };
    return countingRefusals(dependencies.refusals, party, () => handle(call, party));
  });

  async function handle(call: RequestContext, party: RequestParty): Promise<void> {
    const { res, state } = call;
    const idHeaders = surface.requestIdHeader ? [surface.requestIdHeader(state.requestId)] : [];
    state.extraHeaders = idHeaders;
    // The key is checked from the headers before the body is wanted: an unauthenticated upload is
    // answered (and its connection closed) while it is still arriving, with nothing kept of it.
    const key = await authenticate(keys, party.credential);
    party.keyId = key.id;
    const body = await call.body!.json();
    if (body === undefined) return;
    const request = await surface.parse(body, call.headers, { keyId: key.id });
    party.model = request.model;
    const targets = resolveTargets(catalog, request, 'chat', key.allowedModels);
    call.model = targets[0]?.id;
    checkProviderCallLimit(request, targets, catalog);
    const project = await keys.projectOf(key);
    const admitted = await admitRequest(counters, key, request, targets, state.requestId, { minOutputTokens: dependencies.minOutputTokens, project });
    state.extraHeaders = [...idHeaders, ...admitted.headers];
    const release = () => counters.settle({ keyId: key.id, reservationId: admitted.reservationId, costNanos: 0, tokens: 0, budgetPeriod: key.budgetPeriod, project: admitted.project, now: Date.now() });
    if (state.aborted) {
      await release();
      return;
    }
    const job: CompletionJob = { ...admittedJobFields(call, transport, key, project, admitted), targets: targets.map((target) => target.id), request, stream: request.stream };
    const context: RenderContext = { jobId: job.id, created: Math.floor(job.enqueuedAt / 1000), request };
    await enqueueWithReply(call, dependencies, job, (finish): JobReply => {
      if (surface.takeOver === undefined) return { pending: job.stream ? streamingReply(surface, res, state, context, finish) : jsonReply(surface, res, state, context, finish) };
      // A surface whose answers outlive the request (Responses) relays the job's events itself.
      return surface.takeOver({
        res, state, context, keyId: key.id, maxQueuedStreamBytes: dependencies.maxQueuedStreamBytes, finish,
        cancelJob: () => transport.cancel(job.id),
        fail: (error) => fail(res, state, error),
      });
    }, release, (pending) => meterJob(surface.name, call, job.stream, pending));
  }
}

/**
 * An authenticated POST that answers at once from its body, with no job (count_tokens): the
 * surface's headers and error shape, the same key rules as the pipeline.
 */
export function createSurfaceJsonHandler(surface: Surface, keys: KeyDirectory, answer: (body: unknown, headers: SurfaceHeaders, key: KeyRecord) => string): RouteHandler {
  return async (call) => {
    if (surface.requestIdHeader) call.state.extraHeaders = [surface.requestIdHeader(call.state.requestId)];
    const key = await authenticate(keys, credentialOf(call.headers));
    const body = await call.body!.json();
    if (body === undefined) return;
    replyRendered(call.res, call.state, { status: 200, body: answer(body, call.headers, key), headers: [] });
  };
}
