import { alertMonitorFromEnvironment } from '../shared/alerts/alert-monitor.js';
import { loadCatalog } from '../shared/catalog/catalog-loader.js';
import { readConfig } from '../shared/config.js';
import { openLedgerStream, openRedisCounters, openStore, readScaleOutSettings, requireScaleOutServices, startLedgerStreamConsumer } from '../shared/deployment.js';
import { createLogger } from '../shared/logger.js';
import { prepareTokenCounter } from '../shared/token-counter.js';
import { openRedis, quitQuietly, waitUntilReady } from '../shared/transport/redis-connections.js';
import { releaseReservation } from '../shared/counters/release-reservation.js';
import { exitOnShutdownSignal } from '../shared/shutdown.js';
import { createRedisWorkerTransport } from '../shared/transport/redis-transport-factory.js';
import { metricsPort, metricsToken, startMetricsServer } from '../shared/observability/metrics-endpoint.js';
import { startTracing, stopTracing } from '../shared/observability/tracing.js';
import { readPayloadLogSettings, startPayloadPurge } from '../shared/store/payload-log-settings.js';
import { createJobHandler } from './job-dispatch.js';
import { createPayloadRecorder } from './payload-recorder.js';
import { ProviderClient } from './provider-client.js';

// The `worker` process of the scaled-out deployment (Procfile): pulls completion jobs from BullMQ,
// runs the fallback chain against the providers (SWITCHBOARD_WORKER_CONCURRENCY jobs at once; each
// is mostly waiting on an upstream stream, so hundreds per process are fine) and publishes job
// events to the ingress holding each client. Scale by running more of these.

async function main(): Promise<void> {
  const environment = process.env;
  const config = readConfig(environment);
  const logger = createLogger(config.logLevel, 'switchboard-worker');
  if (startTracing(environment, 'switchboard-worker')) logger.info('OpenTelemetry traces on (OTLP/HTTP)');
  const { redisUrl } = requireScaleOutServices(config, 'worker');
  const settings = readScaleOutSettings(environment);
  const catalog = loadCatalog(environment);
  await prepareTokenCounter();
  const store = await openStore(config, { schema: settings.databaseSchema });
  // Settlements wait out a short Redis outage rather than lose money (offline queue on).
  const countersRedis = openRedis(redisUrl, 'worker', 'sb:worker:counters', logger);
  await waitUntilReady(countersRedis, redisUrl);
  const counters = openRedisCounters(countersRedis, settings, store);
  // Ledger records settled while the store was unreachable (or by a process that died before
  // writing them) wait in Redis; this writes them once the store is back.
  const ledgerStream = openLedgerStream(countersRedis, settings);
  const ledgerConsumer = startLedgerStreamConsumer(ledgerStream, store, logger);
  const client = new ProviderClient();

  const transport = createRedisWorkerTransport(redisUrl, settings, logger, async (job, reason) => {
    logger.info({ jobId: job.id, reason }, 'job dropped without running');
    await releaseReservation(counters, job, logger);
  });
  const alerts = alertMonitorFromEnvironment(store, logger, environment);
  const payloadSettings = readPayloadLogSettings(environment);
  const payloadPurge = startPayloadPurge(store, payloadSettings, logger);
  const payloads = createPayloadRecorder(store, catalog, payloadSettings, logger);
  const handler = createJobHandler({ catalog, client, store, counters, logger, workerId: transport.workerId, alerts, payloads });
  await transport.start(handler, { concurrency: config.workerConcurrency });
  // Workers have no HTTP server of their own: Prometheus scrapes this one (SWITCHBOARD_METRICS_PORT).
  const scrapePort = metricsPort(environment);
  const metricsServer = scrapePort === undefined ? undefined : await startMetricsServer(scrapePort, config.host, metricsToken(environment), logger);
  if (metricsServer) process.stdout.write(`Worker metrics on http://${config.host}:${metricsServer.port}/metrics\n`);
  process.stdout.write(`Switchboard worker ${transport.workerId} ready (concurrency ${config.workerConcurrency})\n`);

  exitOnShutdownSignal(logger, 'worker', async (signal) => {
    logger.info({ signal, active: transport.active }, 'worker finishing its active jobs');
    await transport.close(config.drainDeadlineMs);
    await metricsServer?.close();
    await client.close();
    await ledgerConsumer.stop();
    payloadPurge.stop();
    await counters.close();
    await quitQuietly(countersRedis);
    await store.close();
    await stopTracing();
  });
}

main().catch((error: Error) => {
  process.stderr.write(`Switchboard worker could not start: ${error.message}\n`);
  process.exit(1);
});
