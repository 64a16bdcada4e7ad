import type { HttpResponse, TemplatedApp } from 'uWebSockets.js';
import type { Logger } from 'pino';
import { GatewayError } from '../../../shared/errors.js';
import type { KeyRecord, Store } from '../../../shared/store/store.js';
import type { ResponseEventLog } from '../../../shared/responses/response-event-log.js';
import { authenticate } from '../../authenticate.js';
import { replyJson, type ReplyState } from '../../http-reply.js';
import type { KeyDirectory } from '../../key-directory.js';
import { createSurfaceHandler, credentialOf, surfaceRouteOptions, type PipelineDependencies } from '../../pipeline/request-pipeline.js';
import type { RouteWrapper } from '../../pipeline/request-wrapper.js';
import { replyRendered } from '../../pipeline/surface-reply.js';
import { SseWriter } from '../../sse-writer.js';
import { renderResponsesError } from './responses-errors.js';
import { sseFrames } from './responses-events.js';
import { jobIdOf } from './responses-object.js';
import type { ResponseRun } from './response-run.js';
import { createResponsesSurface } from './responses-surface.js';

// The Responses API's routes: create (the pipeline), retrieve (optionally as a replayed and
// followed stream), delete, input items and cancel. Every route answers in OpenAI's error shape
// and sees only the caller's key's responses.

type Json = Record<string, unknown>;

export interface ResponsesRouteOptions {
  pipeline: PipelineDependencies;
  route: RouteWrapper;
  keys: KeyDirectory;
  store: Store;
  log: ResponseEventLog;
  logger: Logger;
  retentionMs: number;
  purgeIntervalMs: number;
  cancelJob(jobId: string): void;
}

interface Call {
  res: HttpResponse;
  state: ReplyState;
  key: KeyRecord;
  id: string;
  query: URLSearchParams;
  /** Run when the client goes away. */
  onAborted: Array<() => void>;
}

const finishedStatuses = new Set(['completed', 'failed', 'cancelled', 'incomplete']);

function notFound(id: string): GatewayError {
  return new GatewayError('not_found', `Response with id '${id}' not found.`, { param: 'response_id' });
}

export function registerResponsesRoutes(app: TemplatedApp, options: ResponsesRouteOptions): void {
  const runs = new Map<string, ResponseRun>();
  const surface = createResponsesSurface({ catalog: options.pipeline.catalog, store: options.store, log: options.log, logger: options.logger, retentionMs: options.retentionMs, runs });

  const routeOptions = { ...surfaceRouteOptions(surface), parameters: 1 };
  const route = (name: string, handler: (call: Call) => Promise<void>, readsBody = false) =>
    options.route(name, { ...routeOptions, body: readsBody }, async (context) => {
      const aborted: Array<() => void> = [];
      context.onAbort = () => {
        for (const action of aborted) action();
      };
      const key = await authenticate(options.keys, credentialOf(context.headers));
      // The cancel route's body (if any) carries nothing the gateway needs; it is read and let go.
      if (readsBody && (await context.body!.read()) === undefined) return;
      const query = new URLSearchParams(context.query);
      await handler({ res: context.res, state: context.state, key, id: context.parameters[0] ?? '', query, onAborted: aborted });
    });

  /** The response as it stands: from the run relaying it here, else from the store. */
  async function current(call: Call): Promise<Json> {
    const record = await options.store.getResponse(call.id, call.key.id);
    if (!record) throw notFound(call.id);
    const run = runs.get(call.id);
    return run && !finishedStatuses.has(record.status) ? run.snapshot() : record.response;
  }

  async function replay(call: Call): Promise<void> {
    const record = await options.store.getResponse(call.id, call.key.id);
    if (!record) throw notFound(call.id);
    if (!record.background) throw new GatewayError('invalid_value', 'Only background responses can be streamed again; create the response with background: true.', { param: 'stream' });
    const raw = call.query.get('starting_after');
    const after = raw === null || raw === '' ? -1 : Number(raw);
    if (!Number.isInteger(after) || after < -1) throw new GatewayError('invalid_value', "Invalid value for 'starting_after': expected a sequence number.", { param: 'starting_after' });
    const writer = new SseWriter(call.res, call.state, options.pipeline.maxQueuedStreamBytes, () => stop());
    let delivered = false;
    const stop = options.log.follow(call.id, after, {
      onEvents(events) {
        delivered = true;
        writer.send(sseFrames(events));
      },
      onEnd() {
        if (delivered || writer.started) writer.end('');
        else replyRendered(call.res, call.state, renderResponsesError(new GatewayError('not_found', `The stream of response '${call.id}' is no longer kept; retrieve the response without stream.`)));
      },
    });
    call.onAborted.push(stop);
  }

  app.post('/v1/responses', options.route('responses', surfaceRouteOptions(surface), createSurfaceHandler(surface, options.pipeline)));
  app.get('/v1/responses/:id', route('responses.get', async (call) => {
    if (call.query.get('stream') === 'true') return replay(call);
    replyJson(call.res, call.state, 200, JSON.stringify(await current(call)));
  }));
  app.del('/v1/responses/:id', route('responses.delete', async (call) => {
    if (!(await options.store.deleteResponse(call.id, call.key.id))) throw notFound(call.id);
    replyJson(call.res, call.state, 200, JSON.stringify({ id: call.id, object: 'response', deleted: true }));
  }));
  app.get('/v1/responses/:id/input_items', route('responses.input_items', async (call) => {
    const record = await options.store.getResponse(call.id, call.key.id);
    if (!record) throw notFound(call.id);
    const limit = Math.min(100, Math.max(1, Number(call.query.get('limit') ?? 20) || 20));
    let items = [...record.contextItems, ...record.inputItems];
    if (call.query.get('order') !== 'asc') items.reverse();
    const after = call.query.get('after');
    if (after) items = items.slice(items.findIndex((item) => item.id === after) + 1);
    const data = items.slice(0, limit);
    replyJson(call.res, call.state, 200, JSON.stringify({ object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: items.length > limit }));
  }));
  app.post('/v1/responses/:id/cancel', route('responses.cancel', async (call) => {
    const record = await options.store.getResponse(call.id, call.key.id);
    if (!record) throw notFound(call.id);
    if (!record.background) throw new GatewayError('invalid_value', 'Only background responses can be cancelled.', { param: 'response_id' });
    if (finishedStatuses.has(record.status)) return replyJson(call.res, call.state, 200, JSON.stringify(record.response));
    const run = runs.get(call.id);
    if (run) return replyJson(call.res, call.state, 200, JSON.stringify(await run.cancel()));
    // Relayed by another ingress: stop the job, record the cancellation and end the replay log;
    // that ingress will not overwrite a finished response.
    const jobId = jobIdOf(call.id);
    if (jobId) options.cancelJob(jobId);
    const response = { ...record.response, status: 'cancelled' };
    await options.store.saveResponse({ ...record, status: 'cancelled', response }, { onlyIfUnfinished: true });
    await options.log.end(call.id);
    replyJson(call.res, call.state, 200, JSON.stringify(response));
  }, true));

  const purge = () => {
    options.store.purgeResponses(new Date().toISOString())
      .then((purged) => purged > 0 && options.logger.info({ purged }, 'expired stored responses purged'))
      .catch((error: Error) => options.logger.warn({ err: error.message }, 'could not purge expired stored responses'));
  };
  purge();
  setInterval(purge, options.purgeIntervalMs).unref();
}
