import type { TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import type { Logger } from 'pino';
import type { Catalog } from '../shared/catalog/catalog-types.js';
import type { Counters } from '../shared/counters/counters.js';
import { GatewayError } from '../shared/errors.js';
import type { Store } from '../shared/store/store.js';
import type { IngressTransport } from '../shared/transport/transport.js';
import { registerAdminRoutes, type AdminDependencies } from './admin-routes.js';
import { authenticate } from './authenticate.js';
import { replyJson } from './http-reply.js';
import { JobRouter } from './job-router.js';
import { KeyDirectory } from './key-directory.js';
import { modelBody, modelsListBody } from './models-route.js';
import { RefusalCounts } from './refusal-counts.js';
import { InflightBodyBudget } from './pipeline/inflight-body-budget.js';
import { keepProcessAliveOnHandlerErrors } from './pipeline/process-safety.js';
import { countingRefusals, createSurfaceHandler, createSurfaceJsonHandler, surfaceRouteOptions, type RequestParty } from './pipeline/request-pipeline.js';
import { createRequestWrapper, type RouteHandler, type RouteWrapper } from './pipeline/request-wrapper.js';
import { chatCompletionsSurface } from './surfaces/chat-completions/chat-surface.js';
import { createEmbeddingsHandler, embeddingsRouteOptions } from './surfaces/embeddings/embeddings-route.js';
import { countMessageTokens } from './surfaces/messages/count-tokens.js';
import { messagesSurface } from './surfaces/messages/messages-surface.js';
import { listenExclusive } from './listen-exclusive.js';
import { registerMetricsRoute } from './metrics-route.js';
import { registerPayloadLogRoutes } from './payload-log-routes.js';
import { watchQueueDepth } from '../shared/observability/metrics.js';
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
  /** Bytes of request bodies held at once while they arrive (default 64 MiB); beyond, 503 overloaded. */
  maxInflightBodyBytes?: number;
  /** Nesting depth a JSON body may have (default 64). */
  maxJsonDepth?: number;
  maxQueuedStreamBytes: number;
  keyCacheMs: number;
  /** Output tokens below which a budget refuses a request instead of lowering its max tokens (default 16). */
  minOutputTokens?: number;
  announceKeyChange?: (publicId: string) => void | Promise<void>;
  /** The Responses API's stored responses and replay log (a memory log when absent). */
  responses?: { log: ResponseEventLog; retentionMs: number; purgeIntervalMs: number };
  /** Bearer token GET /metrics requires (SWITCHBOARD_METRICS_TOKEN); open when absent. */
  metricsToken?: string;
  /** Extra routes (the dashboard) registered on the same app. */
  extend?: (app: TemplatedApp, context: IngressContext) => void;
}

/**
 * What `extend` gets besides the app: the admin API's dependencies (to serve the same actions), the
 * catalog, and `route`, the request wrapper every handler must be registered through.
 */
export interface IngressContext {
  admin: AdminDependencies;
  catalog: Catalog;
  route: RouteWrapper;
}

export { shuttingDown } from './pipeline/request-wrapper.js';

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
  keepProcessAliveOnHandlerErrors(options.logger);
  const route = createRequestWrapper({
    logger: options.logger,
    lifecycle,
    limits: {
      maxBodyBytes: options.maxBodyBytes,
      maxJsonDepth: options.maxJsonDepth ?? 64,
      budget: new InflightBodyBudget(options.maxInflightBodyBytes ?? 64 * 1024 * 1024),
    },
  });
  await options.transport.start(router.dispatch);

  const refusals = new RefusalCounts(options.store, options.logger);
  const modelsBody = modelsListBody(options.catalog);
  const authorized = { headers: ['authorization'] } as const;
  const json = (name: string, handler: (authorization: string) => Promise<string>, routeOptions: { headers?: readonly string[] } = {}) => {
    const wrapped: RouteHandler = async ({ res, state, headers }) => replyJson(res, state, 200, await handler(headers.authorization ?? ''));
    return route(name, routeOptions, wrapped);
  };

  app.get('/healthz', json('healthz', async () => JSON.stringify({ status: 'ok', uws: build, open_requests: openRequests.size })));
  app.get('/v1/models', json('models', async (authorization) => {
    let body = modelsBody;
    await countingRefusals(refusals, { keys, credential: authorization }, async () => {
      const key = await authenticate(keys, authorization);
      // The whole catalog is rendered once; only keys with an allow-list get their own list.
      if (key.allowedModels !== null) body = modelsListBody(options.catalog, key.allowedModels);
    });
    return body;
  }, authorized));
  app.get('/v1/models/*', route('model', authorized, async ({ res, state, headers, url }) => {
    const party: RequestParty = { keys, credential: headers.authorization ?? '' };
    await countingRefusals(refusals, party, async () => {
      const key = await authenticate(keys, party.credential);
      party.keyId = key.id;
      replyJson(res, state, 200, modelBody(options.catalog, url, key.allowedModels));
    });
  }));
  const pipeline = {
    catalog: options.catalog,
    counters: options.counters,
    keys,
    transport: options.transport,
    router,
    maxQueuedStreamBytes: options.maxQueuedStreamBytes,
    minOutputTokens: options.minOutputTokens,
    openRequests,
    refusals,
  };
  app.post('/v1/chat/completions', route('chat.completions', surfaceRouteOptions(chatCompletionsSurface), createSurfaceHandler(chatCompletionsSurface, pipeline)));
  app.any('/v1/chat/completions', json('chat.completions', async () => {
    throw new GatewayError('method_not_allowed', 'Use POST for /v1/chat/completions.');
  }));
  app.post('/v1/embeddings', route('embeddings', embeddingsRouteOptions, createEmbeddingsHandler(pipeline)));
  app.any('/v1/embeddings', json('embeddings', async () => {
    throw new GatewayError('method_not_allowed', 'Use POST for /v1/embeddings.');
  }));
  const messagesRoute = surfaceRouteOptions(messagesSurface);
  app.post('/v1/messages', route('messages', messagesRoute, createSurfaceHandler(messagesSurface, pipeline)));
  app.post('/v1/messages/count_tokens', route('messages.count_tokens', messagesRoute, createSurfaceJsonHandler(messagesSurface, keys, (body, headers, key) => countMessageTokens(options.catalog, body, headers, key.allowedModels))));
  for (const path of ['/v1/messages', '/v1/messages/count_tokens']) {
    app.any(path, route(path, { renderError: messagesRoute.renderError }, () => {
      throw new GatewayError('method_not_allowed', `Use POST for ${path}.`);
    }));
  }
  const responses = options.responses ?? { log: new MemoryResponseEventLog(), retentionMs: 30 * 86_400_000, purgeIntervalMs: 3_600_000 };
  registerResponsesRoutes(app, { ...responses, pipeline, route, keys, store: options.store, logger: options.logger, cancelJob: (jobId) => options.transport.cancel(jobId) });
  const admin: AdminDependencies = { store: options.store, counters: options.counters, keys, adminToken: options.adminToken, logger: options.logger, announceKeyChange: options.announceKeyChange, refusals };
  registerAdminRoutes(app, admin, route);
  registerPayloadLogRoutes(app, admin, route);
  registerMetricsRoute(app, route, options.metricsToken);
  if (options.transport.waitingCount) watchQueueDepth(options.transport.waitingCount);
  options.extend?.(app, { admin, catalog: options.catalog, route });
  app.any('/*', json('unknown', async () => {
    throw new GatewayError('not_found', 'Unknown path. The API lives under /v1 (POST /v1/chat/completions, POST /v1/messages, POST /v1/embeddings, GET /v1/models).');
  }));

  const listenSocket: us_listen_socket = await listenExclusive(app, options.host, options.port, 'The gateway');
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
      await refusals.close();
      await options.transport.close();
    },
  };
}
