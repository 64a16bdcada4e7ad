import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { describe, it } from 'vitest';
import { startIngress, type RunningIngress } from '../src/ingress/server.js';
import { loadCatalog } from '../src/shared/catalog/catalog-loader.js';
import { openRedisCounters, readScaleOutSettings } from '../src/shared/deployment.js';
import { createLogger } from '../src/shared/logger.js';
import { openPostgresStore } from '../src/shared/store/postgres-store.js';
import { prepareTokenCounter } from '../src/shared/token-counter.js';
import { InProcessTransport } from '../src/shared/transport/in-process-transport.js';
import { createJobHandler } from '../src/workers/job-dispatch.js';
import { ProviderClient } from '../src/workers/provider-client.js';
import { describeBudgetPeriods, describeBudgets } from './http/budget-behaviour.js';
import { useGateway, type GatewayContext } from './http/gateway-context.js';
import { testAdminToken, testEnvironment, type TestDeployment } from './support/gateway-harness.js';
import { DATABASE_URL, dropSchema, REDIS_URL, removeRedisPrefix, scaledOutAvailable, scaledOutSkipNotice } from './support/scaled-harness.js';

// Budgets, rate limits, billing and the usage API against real Redis and PostgreSQL.
//
// 1. The scaled-out deployment as real processes (2 ingress + 2 workers, BullMQ, Redis counters,
//    PostgreSQL): requests alternate between the two ingress ports, so every budget race and rate
//    limit burst in the suite runs through both instances.
// 2. Budget periods need the gateway's clock moved, which only works in this process: two ingress
//    instances here, each with its own Redis connection, Redis counters, PostgreSQL pool and worker,
//    sharing one Redis prefix and one schema exactly as separate processes would. Only the
//    transport between ingress and worker is in-process (it carries no budget state).

/** Two ingress instances in this process over the shared Redis counters and PostgreSQL store. */
async function startSharedStateDeployment(openAiUrl: string): Promise<TestDeployment> {
  const id = randomBytes(5).toString('hex');
  const prefix = `sbtest-${id}`;
  const schema = `sb_test_${id}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'switchboard-shared-'));
  const environment = testEnvironment({ openAiUrl }, dataDir);
  const catalog = loadCatalog(environment);
  const logger = createLogger('silent', 'switchboard-test');
  const settings = readScaleOutSettings({ SWITCHBOARD_REDIS_PREFIX: prefix });
  await prepareTokenCounter();
  const ingresses: RunningIngress[] = [];
  const closers: Array<() => Promise<unknown>> = [];
  for (let i = 0; i < 2; i++) {
    const store = await openPostgresStore(DATABASE_URL!, { schema, max: 4 });
    const redis = new Redis(REDIS_URL!);
    const counters = openRedisCounters(redis, settings, store);
    const transport = new InProcessTransport();
    const client = new ProviderClient();
    await transport.worker.start(createJobHandler({ catalog, client, store, counters, logger, workerId: transport.workerId }), { concurrency: 64 });
    const ingress = await startIngress({
      port: 0,
      host: '127.0.0.1',
      catalog,
      store,
      counters,
      transport: transport.ingress,
      logger,
      adminToken: testAdminToken,
      maxBodyBytes: 1_000_000,
      maxQueuedStreamBytes: 1_000_000,
      keyCacheMs: 5_000,
      // What the Redis transport's key-change broadcast does between processes.
      announceKeyChange: (publicId) => ingresses.forEach((other) => other.keys.invalidate(publicId)),
    });
    ingresses.push(ingress);
    closers.push(async () => {
      await ingress.drain(2_000);
      await transport.worker.close(2_000);
      await client.close();
      await counters.close();
      await redis.quit();
      await store.close();
    });
  }
  const urls = ingresses.map((ingress) => `http://127.0.0.1:${ingress.port}`);
  let turn = 0;
  return {
    kind: 'scaled',
    urls,
    adminToken: testAdminToken,
    url: () => urls[turn++ % urls.length]!,
    async close() {
      await Promise.all(closers.map((close) => close()));
      await removeRedisPrefix(REDIS_URL!, prefix).catch(() => undefined);
      await dropSchema(DATABASE_URL!, schema).catch(() => undefined);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

function useSharedStateGateway(): GatewayContext {
  return useGateway(startSharedStateDeployment);
}

if (scaledOutAvailable) {
  describe('scaled-out deployment (2 ingress + 2 worker processes): budgets, rate limits and usage', () => {
    const context = useGateway('scaled');
    describeBudgets(context);
  });
  describe('Redis counters + PostgreSQL store, two ingress instances in this process: budget periods', () => {
    const context = useSharedStateGateway();
    describeBudgetPeriods(context);
  });
} else {
  console.warn(`budgets (scaled out): ${scaledOutSkipNotice}`);
  describe.skip('budgets, rate limits and usage against Redis and PostgreSQL (REDIS_URL / DATABASE_URL not set)', () => {
    it('needs REDIS_URL and DATABASE_URL', () => undefined);
  });
}
