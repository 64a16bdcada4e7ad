import { alertMonitorFromEnvironment } from './shared/alerts/alert-monitor.js';
import type { TemplatedApp } from 'uWebSockets.js';
import { Dashboard, dashboardPort } from './ingress/dashboard/dashboard.js';
import { startIngress, type IngressContext, type RunningIngress } from './ingress/server.js';
import { loadCatalog } from './shared/catalog/catalog-loader.js';
import type { Catalog } from './shared/catalog/catalog-types.js';
import { readConfig, resolveAdminToken, type GatewayConfig, readDashboardSignIn } from './shared/config.js';
import { openJoinedParts, openStore, readScaleOutSettings } from './shared/deployment.js';
import { releaseReservation } from './shared/counters/release-reservation.js';
import { createLogger } from './shared/logger.js';
import { createLostWorkerBiller } from './shared/store/lost-worker-settlement.js';
import { createUsageSettler } from './shared/store/usage-settler.js';
import { prepareTokenCounter } from './shared/token-counter.js';
import { openResponseEventLog } from './shared/responses/open-response-event-log.js';
import { metricsToken } from './shared/observability/metrics-endpoint.js';
import { startTracing, stopTracing } from './shared/observability/tracing.js';
import { readPayloadLogSettings, startPayloadPurge } from './shared/store/payload-log-settings.js';
import { createJobHandler } from './workers/job-dispatch.js';
import { createPayloadRecorder } from './workers/payload-recorder.js';
import { ProviderClient } from './workers/provider-client.js';

// The embedded default: ingress and workers in one process, joined by the in-process transport,
// with the embedded database file and in-memory counters. No Redis or PostgreSQL needed.

export interface EmbeddedGateway {
  url: string;
  port: number;
  adminToken: string;
  config: GatewayConfig;
  ingress: RunningIngress;
  /** The dashboard's address: on its own port when SWITCHBOARD_DASHBOARD_PORT is set, else on the ingress. */
  dashboardUrl: string;
  /** Stops accepting, drains open streams and jobs, closes everything. */
  close(): Promise<void>;
}

export interface EmbeddedOptions {
  environment?: NodeJS.ProcessEnv;
  catalog?: Catalog;
  extend?: (app: TemplatedApp, context: IngressContext) => void;
}

export async function startEmbeddedGateway(options: EmbeddedOptions = {}): Promise<EmbeddedGateway> {
  const environment = options.environment ?? process.env;
  const config = readConfig(environment);
  // Read before anything opens: a wrong single sign-on setting stops the start with its message.
  const signIn = readDashboardSignIn(environment);
  const logger = createLogger(config.logLevel, 'switchboard');
  // Before the routes are built: they read the trace headers only when traces are on.
  const tracing = startTracing(environment, 'switchboard');
  const catalog = options.catalog ?? loadCatalog(environment);
  const admin = resolveAdminToken(config, environment);
  if (admin.generated) {
    process.stdout.write(`Generated an admin token (stored in ${admin.path}; shown once): ${admin.token}\n`);
  }
  await prepareTokenCounter();
  const store = await openStore(config, { schema: readScaleOutSettings(environment).databaseSchema });
  // In-process transport and memory counters; with REDIS_URL, BullMQ + pub/sub and Redis counters.
  // A request cancelled while it waited for a worker gives back its budget and concurrency slot.
  const transport = await openJoinedParts(config, environment, store, logger, (job) => releaseReservation(counters, job, logger));
  const { counters } = transport;
  const client = new ProviderClient();
  const dashboard = new Dashboard({ port: dashboardPort(environment), host: config.host, logger, signIn });
  const responseEvents = openResponseEventLog(config, readScaleOutSettings(environment).redisPrefix, logger);
  const alerts = alertMonitorFromEnvironment(store, logger, environment, admin.token);
  const payloadSettings = readPayloadLogSettings(environment);
  const payloadPurge = startPayloadPurge(store, payloadSettings, logger);
  const payloads = createPayloadRecorder(store, catalog, payloadSettings, logger);
  await transport.worker.start(createJobHandler({ catalog, client, store, counters, logger, workerId: transport.worker.workerId, alerts, payloads }), { concurrency: config.workerConcurrency });
  const ingress = await startIngress({
    port: config.port,
    host: config.host,
    catalog,
    store,
    counters,
    transport: transport.ingress,
    logger,
    adminToken: admin.token,
    maxBodyBytes: config.maxBodyBytes,
    maxInflightBodyBytes: config.maxInflightBodyBytes,
    maxJsonDepth: config.maxJsonDepth,
    maxQueuedStreamBytes: config.maxQueuedStreamBytes,
    minOutputTokens: config.minOutputTokens,
    keyCacheMs: transport.keyCacheMs,
    announceKeyChange: transport.announceKeyChange,
    responses: { log: responseEvents.log, retentionMs: config.responseRetentionMs, purgeIntervalMs: config.responsePurgeIntervalMs },
    metricsToken: metricsToken(environment),
    extend: (app, context) => {
      dashboard.extend(app, context);
      options.extend?.(app, context);
    },
  });
  transport.onKeyChange((publicId) => ingress.keys.invalidate(publicId));
  transport.onWorkerLost(createLostWorkerBiller({ catalog, settle: createUsageSettler({ counters, store, logger }), logger }));
  const ownDashboardPort = await dashboard.listen();
  const host = config.host === '0.0.0.0' ? '127.0.0.1' : config.host;
  return {
    url: `http://${host}:${ingress.port}`,
    port: ingress.port,
    adminToken: admin.token,
    config,
    ingress,
    dashboardUrl: `http://${host}:${ownDashboardPort ?? ingress.port}/dashboard/`,
    async close() {
      dashboard.close();
      await ingress.drain(config.drainDeadlineMs);
      await transport.worker.close(config.drainDeadlineMs);
      await client.close();
      await counters.close();
      await transport.close();
      await responseEvents.close();
      payloadPurge.stop();
      await store.close();
      if (tracing) await stopTracing();
    },
  };
}
