import { randomUUID } from 'node:crypto';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { Logger } from 'pino';
import type { Catalog } from '../../shared/catalog/catalog-types.js';
import type { Counters } from '../../shared/counters/counters.js';
import { errorFromDescription, GatewayError } from '../../shared/errors.js';
import type { CompletionJob } from '../../shared/job.js';
import type { IngressTransport } from '../../shared/transport/transport.js';
import { admitRequest } from '../admission.js';
import { authenticate } from '../authenticate.js';
import { parseJsonBody, readBody } from '../body-reader.js';
import type { ReplyState } from '../http-reply.js';
import type { JobRouter, PendingJob } from '../job-router.js';
import type { KeyDirectory } from '../key-directory.js';
import { SseWriter } from '../sse-writer.js';
import { resolveTargets } from './model-resolution.js';
import { replyRendered } from './surface-reply.js';
import type { JobTakeover, RenderContext, RenderingSurface, Surface, SurfaceHeaders } from './surface.js';

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
  logger: Logger;
  maxBodyBytes: number;
  maxQueuedStreamBytes: number;
  /** Open requests, so that a draining server knows when it may exit. */
  openRequests: Set<string>;
  lifecycle: { draining: boolean };
}

interface Copied {
  credential: string;
  headers: SurfaceHeaders;
  /** Until the body is read, an answer must close the connection: the unread rest would be taken for the next request. */
  bodyRead: boolean;
}

/** Bearer keys, or the key alone in x-api-key as Anthropic clients send it. */
function credentialOf(req: HttpRequest): string {
  const authorization = req.getHeader('authorization');
  if (authorization) return authorization;
  const apiKey = req.getHeader('x-api-key');
  return apiKey ? `Bearer ${apiKey}` : '';
}

export function createSurfaceHandler(surface: Surface, dependencies: PipelineDependencies) {
  const { catalog, counters, keys, transport, router, logger } = dependencies;

  async function handle(res: HttpResponse, state: ReplyState, copied: Copied, onCancel: { cancel?: () => void }): Promise<void> {
    const body = await readBody(res, dependencies.maxBodyBytes, state);
    if (!body) return;
    copied.bodyRead = true;
    const key = await authenticate(keys, copied.credential);
    const request = await surface.parse(parseJsonBody(body), copied.headers, { keyId: key.id });
    const targets = resolveTargets(catalog, request);
    const admitted = await admitRequest(counters, key, request, targets, state.requestId);
    state.extraHeaders = admitted.headers;
    const release = () => counters.settle({ keyId: key.id, reservationId: admitted.reservationId, costNanos: 0, tokens: 0, budgetPeriod: key.budgetPeriod, now: Date.now() });
    if (state.aborted) {
      await release();
      return;
    }
    const job: CompletionJob = {
      id: state.requestId,
      replyTo: transport.ingressId,
      keyId: key.id,
      targets: targets.map((target) => target.id),
      request,
      stream: request.stream,
      reservationId: admitted.reservationId,
      reservedNanos: admitted.reservedNanos,
      budgetPeriod: key.budgetPeriod,
      enqueuedAt: Date.now(),
    };
    const context: RenderContext = { jobId: job.id, created: Math.floor(job.enqueuedAt / 1000), request };
    if (surface.headers) state.extraHeaders = [...admitted.headers, ...surface.headers(context)];
    const finish = () => {
      router.unregister(job.id);
      dependencies.openRequests.delete(job.id);
    };
    let takeover: JobTakeover | undefined;
    let pending: PendingJob;
    if (surface.takeOver === undefined) pending = job.stream ? streamingReply(surface, res, state, context, finish) : jsonReply(surface, res, state, context, finish);
    else {
      takeover = surface.takeOver({
        res, state, context, keyId: key.id, maxQueuedStreamBytes: dependencies.maxQueuedStreamBytes, finish,
        cancelJob: () => transport.cancel(job.id),
        fail: (error) => fail(res, state, error),
      });
      pending = takeover.pending;
    }
    onCancel.cancel = takeover ? takeover.clientGone : () => {
      finish();
      transport.cancel(job.id);
    };
    router.register(job.id, pending);
    dependencies.openRequests.add(job.id);
    try {
      await takeover?.ready;
      await transport.enqueue(job);
    } catch (error) {
      finish();
      takeover?.refused?.();
      await release();
      throw error;
    }
    takeover?.enqueued?.();
  }

  function fail(res: HttpResponse, state: ReplyState, error: unknown, closeConnection = false): void {
    const gatewayError = error instanceof GatewayError ? error : new GatewayError('internal_error', 'The gateway failed while handling this request.');
    replyRendered(res, state, surface.renderError(gatewayError), closeConnection);
  }

  function jsonReply(rendering: RenderingSurface, res: HttpResponse, state: ReplyState, context: RenderContext, finish: () => void): PendingJob {
    return {
      onEvent(event) {
        if (event.type === 'completed') {
          finish();
          replyRendered(res, state, { status: 200, body: rendering.renderCompletion(context, event), headers: [] });
        } else if (event.type === 'failed') {
          finish();
          fail(res, state, errorFromDescription(event.error));
        }
      },
      onGap() {
        finish();
        fail(res, state, new GatewayError('worker_lost', 'Events of this request were lost between the worker and the gateway.'));
      },
    };
  }

  function streamingReply(rendering: RenderingSurface, res: HttpResponse, state: ReplyState, context: RenderContext, finish: () => void): PendingJob {
    const writer = new SseWriter(res, state, dependencies.maxQueuedStreamBytes, () => {
      finish();
      transport.cancel(state.requestId);
    });
    const renderer = rendering.createStream(context);
    let opened = false;
    const failStream = (error: GatewayError) => {
      finish();
      if (writer.started && opened) writer.end(renderer.error({ code: error.code, message: error.message, status: error.status }));
      else fail(res, state, error);
    };
    return {
      onEvent(event) {
        switch (event.type) {
          case 'started':
            opened = true;
            writer.send(renderer.start(event.model));
            return;
          case 'deltas':
            if (opened) writer.send(renderer.deltas(event.deltas));
            return;
          case 'finished':
            finish();
            if (!opened) {
              opened = true;
              writer.send(renderer.start(event.model));
            }
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

  return (res: HttpResponse, req: HttpRequest): void => {
    // HttpRequest is only valid until the first await: copy what is needed now.
    const copied: Copied = {
      credential: credentialOf(req),
      headers: { anthropicVersion: req.getHeader('anthropic-version'), anthropicBeta: req.getHeader('anthropic-beta') },
      bodyRead: false,
    };
    const state: ReplyState = { aborted: false, done: false, requestId: randomUUID() };
    const onCancel: { cancel?: () => void } = {};
    res.onAborted(() => {
      state.aborted = true;
      onCancel.cancel?.();
    });
    if (dependencies.lifecycle.draining) {
      fail(res, state, new GatewayError('service_unavailable', 'This gateway instance is shutting down; retry on another.', { retryAfterSeconds: 1 }), true);
      return;
    }
    handle(res, state, copied, onCancel).catch((error) => {
      if (!(error instanceof GatewayError)) logger.error({ err: error, requestId: state.requestId, surface: surface.name }, 'request failed');
      fail(res, state, error, !copied.bodyRead);
    });
  };
}
