import { randomUUID } from 'node:crypto';
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import type { Logger } from 'pino';
import type { Catalog } from '../shared/catalog/catalog-types.js';
import type { Counters } from '../shared/counters/counters.js';
import { GatewayError } from '../shared/errors.js';
import type { Store } from '../shared/store/store.js';
import type { IngressTransport } from '../shared/transport/transport.js';
import { registerAdminRoutes, type AdminDependencies } from './admin-routes.js';
import { authenticate } from './authenticate.js';
import { replyError, replyJson, type ReplyState } from './http-reply.js';
import { replyRendered } from './pipeline/surface-reply.js';
import { JobRouter } from './job-router.js';
import { KeyDirectory } from './key-directory.js';
import { modelsListBody } from './models-route.js';
import { createSurfaceHandler } from './pipeline/request-pipeline.js';
import { createSurfaceJsonRoute } from './pipeline/surface-json-route.js';
import { chatCompletionsSurface } from './surfaces/chat-completions/chat-surface.js';
import { countMessageTokens } from './surfaces/messages/count-tokens.js';
import { renderMessagesError } from './surfaces/messages/messages-errors.js';
import { messagesSurface } from './surfaces/messages/messages-surface.js';
import { loadUws } from './uws-loader.js';
import { registerResponsesRoutes } from './surfaces/responses/responses-routes.js';
import type { ResponseEventLog } from '../shared/responses/response-event-log.js';
import { MemoryResponseEventLog } from '../shared/responses/memory-response-event-log.js';

export interface IngressOptions {
  port: number;
  host: string;
  catalog: Catalog;
  store: Store;
  counters: Counters;
  transport: IngressTransport;
  logger: Logger;
  adminToken: string;
  maxBodyBytes: number;
  maxQueuedStreamBytes: number;
  keyCacheMs: number;
  announceKeyChange?: (publicId: string) => void | Promise<void>;
  /** The Responses API's stored responses and replay log (a memory log when absent). */
  responses?: { log: ResponseEventLog; retentionMs: number; purgeIntervalMs: number };
  /** Extra routes (the dashboard) registered on the same app. */
  extend?: (app: TemplatedApp, context: IngressContext) => void;
}

/** What `extend` gets besides the app: the admin API's dependencies (to serve the same actions), the catalog and limits. */
export interface IngressContext {
  admin: AdminDependencies;
  catalog: Catalog;
  maxBodyBytes: number;
}

/** What a request that arrives on a kept-alive connection during a drain gets. */
export function shuttingDown(): GatewayError {
  return new GatewayError('service_unavailable', 'This gateway instance is shutting down; retry on another.', { retryAfterSeconds: 1 });
}

export interface RunningIngress {
  port: number;
  build: string;
  keys: KeyDirectory;
  /** Stops accepting, waits for open requests (up to the deadline), then closes the listener's app. */
  drain(deadlineMs: number): Promise<void>;
}

export async function startIngress(options: IngressOptions): Promise<RunningIngress> {
  const { uws, build } = loadUws();
  const app = uws.App();
  const router = new JobRouter();
  const keys = new KeyDirectory(options.store, options.keyCacheMs);
  const openRequests = new Set<string>();
  const lifecycle = { draining: false };
  await options.transport.start(router.dispatch);

  const modelsBody = modelsListBody(options.catalog);
  const simple = (handler: (state: ReplyState, authorization: string) => Promise<[number, string]>) => (res: HttpResponse, req: HttpRequest) => {
    const authorization = req.getHeader('authorization');
    const state: ReplyState = { aborted: false, done: false, requestId: randomUUID() };
    res.onAborted(() => {
      state.aborted = true;
    });
    if (lifecycle.draining) return replyError(res, state, shuttingDown(), true);
    handler(state, authorization)
      .then(([status, body]) => replyJson(res, state, status, body))
      .catch((error) => replyError(res, state, error));
  };

  app.get('/healthz', simple(async () => [200, JSON.stringify({ status: 'ok', uws: build, open_requests: openRequests.size })]));
  app.get('/v1/models', simple(async (_state, authorization) => {
    await authenticate(keys, authorization);
    return [200, modelsBody];
  }));
  app.get('/v1/models/*', simple(async (_state, authorization) => {
    await authenticate(keys, authorization);
    throw new GatewayError('not_found', 'Look models up in the list at GET /v1/models.');
  }));
  const pipeline = {
    catalog: options.catalog,
    counters: options.counters,
    keys,
    transport: options.transport,
    router,
    logger: options.logger,
    maxBodyBytes: options.maxBodyBytes,
    maxQueuedStreamBytes: options.maxQueuedStreamBytes,
    openRequests,
    lifecycle,
  };
  app.post('/v1/chat/completions', createSurfaceHandler(chatCompletionsSurface, pipeline));
  app.any('/v1/chat/completions', simple(async () => {
    throw new GatewayError('method_not_allowed', 'Use POST for /v1/chat/completions.');
  }));
  app.post('/v1/messages', createSurfaceHandler(messagesSurface, pipeline));
  app.post('/v1/messages/count_tokens', createSurfaceJsonRoute(messagesSurface, pipeline, (body, headers) => countMessageTokens(options.catalog, body, headers)));
  for (const path of ['/v1/messages', '/v1/messages/count_tokens']) {
    app.any(path, (res) => {
      const state: ReplyState = { aborted: false, done: false, requestId: randomUUID() };
      replyRendered(res, state, renderMessagesError(new GatewayError('method_not_allowed', `Use POST for ${path}.`)));
    });
  }
  const responses = options.responses ?? { log: new MemoryResponseEventLog(), retentionMs: 30 * 86_400_000, purgeIntervalMs: 3_600_000 };
  registerResponsesRoutes(app, { ...responses, pipeline, keys, store: options.store, logger: options.logger, cancelJob: (jobId) => options.transport.cancel(jobId) });
  const admin: AdminDependencies = { store: options.store, counters: options.counters, keys, adminToken: options.adminToken, logger: options.logger, announceKeyChange: options.announceKeyChange };
  registerAdminRoutes(app, admin, options.maxBodyBytes);
  options.extend?.(app, { admin, catalog: options.catalog, maxBodyBytes: options.maxBodyBytes });
  app.any('/*', simple(async () => {
    throw new GatewayError('not_found', 'Unknown path. The API lives under /v1 (POST /v1/chat/completions, GET /v1/models).');
  }));

  const listenSocket = await new Promise<us_listen_socket>((resolve, reject) => {
    app.listen(options.host, options.port, (socket) => (socket ? resolve(socket) : reject(new Error(`Cannot listen on ${options.host}:${options.port}.`))));
  });
  const port = uws.us_socket_local_port(listenSocket);
  options.logger.info({ port, uws: build }, 'ingress listening');

  return {
    port,
    build,
    keys,
    async drain(deadlineMs: number) {
      lifecycle.draining = true;
      uws.us_listen_socket_close(listenSocket);
      const deadline = Date.now() + deadlineMs;
      while (openRequests.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      if (openRequests.size > 0) options.logger.warn({ open: openRequests.size }, 'drain deadline reached with requests still open');
      await options.transport.close();
    },
  };
}
