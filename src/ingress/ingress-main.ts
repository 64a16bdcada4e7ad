import { loadCatalog } from '../shared/catalog/catalog-loader.js';
import { readConfig, resolveAdminToken, readDashboardSignIn, signInDescription } from '../shared/config.js';
import { openRedisCounters, openStore, readScaleOutSettings, requireScaleOutServices } from '../shared/deployment.js';
import { listenAddress } from '../shared/listen-address.js';
import { createLogger } from '../shared/logger.js';
import { prepareTokenCounter } from '../shared/token-counter.js';
import { openRedis, quitQuietly, waitUntilReady } from '../shared/transport/redis-connections.js';
import { createRedisIngressTransport } from '../shared/transport/redis-transport-factory.js';
import { exitOnShutdownSignal } from '../shared/shutdown.js';
import { createLostWorkerBiller } from '../shared/store/lost-worker-settlement.js';
import { createUsageSettler } from '../shared/store/usage-settler.js';
import { openResponseEventLog } from '../shared/responses/open-response-event-log.js';
import { metricsToken } from '../shared/observability/metrics-endpoint.js';
import { startTracing, stopTracing } from '../shared/observability/tracing.js';
import { Dashboard, dashboardPort } from './dashboard/dashboard.js';
import { startIngress, type RunningIngress } from './server.js';

// The `web` process of the scaled-out deployment (Procfile): authenticates, admits and enqueues
// completion jobs in BullMQ, and streams the events that workers publish back over Redis pub/sub.
// Reads PORT, HOST, REDIS_URL, DATABASE_URL, SWITCHBOARD_CATALOG and the SWITCHBOARD_* settings.

async function main(): Promise<void> {
  const environment = process.env;
  const config = readConfig(environment);
  // Read before anything opens: a wrong single sign-on setting stops the start with its message.
  const signIn = readDashboardSignIn(environment);
  const logger = createLogger(config.logLevel, 'switchboard-ingress');
  // Before the routes are built: they read the trace headers only when traces are on.
  if (startTracing(environment, 'switchboard-ingress')) logger.info('OpenTelemetry traces on (OTLP/HTTP)');
  const { redisUrl } = requireScaleOutServices(config, 'ingress');
  const settings = readScaleOutSettings(environment);
  const catalog = loadCatalog(environment);
  const admin = resolveAdminToken(config, environment);
  if (admin.generated) {
    process.stdout.write(`Generated an admin token (stored in ${admin.path}; shown once): ${admin.token}\n`);
    logger.warn('SWITCHBOARD_ADMIN_TOKEN is not set: every ingress instance must share one admin token, so set it for a scaled-out deployment');
  }
  await prepareTokenCounter();
  const store = await openStore(config, { schema: settings.databaseSchema });
  const countersRedis = openRedis(redisUrl, 'fail-fast', 'sb:ingress:counters', logger);
  await waitUntilReady(countersRedis, redisUrl);
  const counters = openRedisCounters(countersRedis, settings, store);

  let ingress: RunningIngress | undefined;
  const dashboard = new Dashboard({ port: dashboardPort(environment), host: config.host, logger, signIn });
  // A key changed through any ingress: drop our cached record now.
  // A stream whose worker died after its first token is billed here, by estimate (the worker's own
  // settlement never comes); the record goes through the Redis ledger stream like any other.
  const settle = createUsageSettler({ counters, store, logger });
  const billLostWorker = createLostWorkerBiller({ catalog, settle, logger });
  const transport = createRedisIngressTransport(redisUrl, settings, config, logger, (publicId) => ingress?.keys.invalidate(publicId), billLostWorker);
  const responseEvents = openResponseEventLog(config, settings.redisPrefix, logger);
  ingress = await startIngress({
    port: config.port,
    host: config.host,
    catalog,
    store,
    counters,
    transport,
    logger,
    adminToken: admin.token,
    maxBodyBytes: config.maxBodyBytes,
    maxInflightBodyBytes: config.maxInflightBodyBytes,
    maxJsonDepth: config.maxJsonDepth,
    maxQueuedStreamBytes: config.maxQueuedStreamBytes,
    minOutputTokens: config.minOutputTokens,
    keyCacheMs: config.keyCacheMs,
    announceKeyChange: (publicId) => transport.announceKeyChange(publicId),
    responses: { log: responseEvents.log, retentionMs: config.responseRetentionMs, purgeIntervalMs: config.responsePurgeIntervalMs },
    metricsToken: metricsToken(environment),
    extend: dashboard.extend,
  });
  const dashboardOwnPort = await dashboard.listen();
  const address = listenAddress(config.host, ingress.port);
  process.stdout.write(`Switchboard ingress ${transport.ingressId} listening on ${address.describe} (uWebSockets.js build ${ingress.build})\n`);
  process.stdout.write(`Dashboard: ${listenAddress(config.host, dashboardOwnPort ?? ingress.port).local}/dashboard/ (sign in with ${signInDescription(signIn)})\n`);

  exitOnShutdownSignal(logger, 'ingress', async (signal) => {
    logger.info({ signal }, 'ingress draining');
    dashboard.close();
    await ingress!.drain(config.drainDeadlineMs); // stops accepting, waits for open streams, closes the transport
    await counters.close();
    await quitQuietly(countersRedis);
    await responseEvents.close();
    await store.close();
    await stopTracing();
  });
}

main().catch((error: Error) => {
  process.stderr.write(`Switchboard ingress could not start: ${error.message}\n`);
  process.exit(1);
});
