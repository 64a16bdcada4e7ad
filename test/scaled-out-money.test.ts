import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from './doubles/openai-provider-double.js';
import { adminRequest, chat, createKey, eventually, hello, type CreatedKey, ledgerView, type LedgerView } from './support/api-client.js';
import { DATABASE_URL, REDIS_URL, scaledOutAvailable, scaledOutSkipNotice, startScaledDeployment, type ScaledDeployment } from './support/scaled-harness.js';
import { PrivateRedis } from './support/private-redis.js';
import { StreamReader } from './support/stream-reader.js';
import { TcpRelay } from './support/tcp-relay.js';

// Money under faults, against real processes (2 ingresses, 1 worker), real Redis and a real
// PostgreSQL that the gateway reaches through a relay the test cuts: every answered request is
// in the ledger after a store outage and Redis counted exactly what the ledger holds; a stream
// whose worker is killed is billed by estimate, once; a key revoked with a backlog has none of
// its queued jobs reach the provider.

type LedgerRow = LedgerView;

/** Durations the faults took, printed with SB_REPORT_TIMINGS=1 (the numbers in docs/scale-out.md). */
const timings: Record<string, number> = {};
afterAll(() => {
  if (process.env.SB_REPORT_TIMINGS) console.log(`money fault timings (ms): ${JSON.stringify(timings)}`);
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Answer {
  status: number;
  id: string;
  at: number;
  code?: string;
}

/** Clients sending requests of one key back to back (half of them streams) until stopped. */
function startTraffic(deployment: ScaledDeployment, key: CreatedKey, clients = 4): { results: Answer[]; stop(): Promise<void> } {
  const results: Answer[] = [];
  let running = true;
  const client = async (stream: boolean) => {
    while (running) {
      const response = await chat(deployment, key.key, { model: 'svc/alpha', messages: hello, stream });
      const text = await response.text();
      const code = response.status === 200 ? undefined : (JSON.parse(text) as { error: { code: string } }).error.code;
      results.push({ status: response.status, id: response.headers.get('x-request-id')!, at: Date.now(), code });
    }
  };
  const all = Array.from({ length: clients }, (_, i) => client(i % 2 === 1));
  return {
    results,
    async stop() {
      running = false;
      await Promise.all(all);
    },
  };
}
const words = (count: number) => Array.from({ length: count }, (_, i) => `w${i} `);

if (!scaledOutAvailable) {
  console.warn(`scaled-out money: ${scaledOutSkipNotice}`);
  describe.skip('scaled-out money under faults (REDIS_URL / DATABASE_URL not set)', () => {
    it('needs REDIS_URL and DATABASE_URL', () => undefined);
  });
} else {
  describe('scaled-out money under faults: 2 ingress + 1 worker, PostgreSQL behind a relay', () => {
    const storeRelay = TcpRelay.for(DATABASE_URL!, 5432);
    let double: OpenAiProviderDouble;
    let deployment: ScaledDeployment;
    let redis: Redis;

    const ledgerOf = async (key: CreatedKey): Promise<LedgerRow[]> => {
      const { status, body } = await adminRequest(deployment, 'GET', `/admin/v1/requests?key_id=${key.id}&limit=1000`);
      expect(status).toBe(200);
      return (body.data as Array<Record<string, unknown>>).map(ledgerView);
    };
    /** What the Redis counters hold as the key's spend of its (all-time) budget period, in nano-USD. */
    const redisSpend = async (key: CreatedKey): Promise<number> => Number(await redis.hget(`${deployment.prefix}:counters:{${key.id}}:spend`, 'n'));

    beforeAll(async () => {
      await storeRelay.up();
      redis = new Redis(REDIS_URL!);
      double = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
      deployment = await startScaledDeployment({
        openAiUrl: double.url,
        ingressCount: 2,
        workerCount: 1,
        environment: {
          DATABASE_URL: storeRelay.url(DATABASE_URL!),
          LOG_LEVEL: process.env.SB_DEBUG_LOG ?? 'silent',
          // Keys used before the outage stay cached through it, as on a busy gateway.
          SWITCHBOARD_KEY_CACHE_MS: '600000',
          SWITCHBOARD_WORKER_CONCURRENCY: '8',
          SWITCHBOARD_WORKER_SILENCE_MS: '2000',
        },
      });
    }, 60_000);
    beforeEach(() => double?.reset());
    afterAll(async () => {
      await storeRelay.up();
      if (process.env.SB_DEBUG_LOG) for (const p of [...deployment.ingresses, ...deployment.workers]) console.log(p.role, p.output().slice(-4000));
      await deployment?.close();
      await double?.close();
      await redis?.quit();
      await storeRelay.down();
    }, 30_000);

    it('keeps every answered request in the ledger through a store outage, Redis spend equal to it, and refuses with 503, never 500', async () => {
      const key = await createKey(deployment, { name: 'outage', budget_usd: 1000 });
      const unseen = await createKey(deployment, { name: 'first used during the outage' });
      double.script('alpha', { kind: 'text', chunks: words(3), chunkDelayMs: 20 });
      // Each ingress caches the key and the counters seed its spend, before the outage.
      for (const url of deployment.urls) {
        const warm = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'svc/alpha', messages: hello }) });
        expect(warm.status).toBe(200);
      }

      const traffic = startTraffic(deployment, key);
      const { results } = traffic;
      await sleep(500);

      let outageFrom = 0;
      let outageUntil = 0;
      let storeBackAt = 0;
      try {
        await storeRelay.down();
        outageFrom = Date.now();
        const refused = await chat(deployment, unseen.key, { model: 'svc/alpha', messages: hello });
        expect(refused.status).toBe(503);
        expect(refused.headers.get('retry-after')).toBe('1');
        expect((await refused.json()).error.code).toBe('service_unavailable');
        await sleep(5000);
      } finally {
        outageUntil = Date.now();
        await storeRelay.up();
        storeBackAt = Date.now();
        await sleep(500);
        await traffic.stop();
      }

      expect(results.filter((result) => result.status !== 200 && result.status !== 503)).toEqual([]);
      const answered = results.filter((result) => result.status === 200);
      expect(answered.filter((result) => result.at > outageFrom && result.at < outageUntil).length).toBeGreaterThan(5);
      // Every 200 is in the ledger once the store is back (written from the Redis ledger stream).
      const rows = await eventually(async () => {
        const ledger = await ledgerOf(key);
        const ids = new Set(ledger.map((row) => row.id));
        expect(answered.filter((result) => !ids.has(result.id)).map((result) => result.id)).toEqual([]);
        return ledger;
      }, 20_000);
      timings.storeBackToAllRows = Date.now() - storeBackAt;
      timings.answeredDuringOutage = answered.filter((result) => result.at > outageFrom && result.at < outageUntil).length;
      timings.refusedDuringOutage = results.filter((result) => result.status === 503).length;
      const ledgerNanos = rows.reduce((sum, row) => sum + row.costNanos, 0);
      expect(ledgerNanos).toBeGreaterThan(0);
      expect(await redisSpend(key)).toBe(ledgerNanos);
      const { body: record } = await adminRequest(deployment, 'GET', `/admin/v1/keys/${key.id}`);
      expect(Math.round(record.spent_usd * 1e9)).toBe(ledgerNanos);
      // With the store back, a key nobody had cached works again.
      expect((await chat(deployment, unseen.key, { model: 'svc/alpha', messages: hello })).status).toBe(200);
    }, 60_000);

    it('answers while the store hangs, and has the ledger complete once it answers again', async () => {
      const key = await createKey(deployment, { name: 'hanging store', budget_usd: 1000 });
      double.script('alpha', { kind: 'text', text: 'ok' });
      for (const url of deployment.urls) {
        const warm = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'svc/alpha', messages: hello }) });
        expect(warm.status).toBe(200);
      }
      storeRelay.pause();
      let answers: { status: number; id: string; ms: number }[] = [];
      try {
        answers = await Promise.all(Array.from({ length: 4 }, async () => {
          const startedAt = Date.now();
          const response = await chat(deployment, key.key, { model: 'svc/alpha', messages: hello });
          await response.text();
          return { status: response.status, id: response.headers.get('x-request-id')!, ms: Date.now() - startedAt };
        }));
        await sleep(Math.max(0, 9000 - Math.max(...answers.map((answer) => answer.ms))));
      } finally {
        storeRelay.resume();
      }
      timings.answerWhileStoreHangs = Math.max(...answers.map((answer) => answer.ms));
      for (const answer of answers) {
        expect(answer.status).toBe(200);
        expect(answer.ms).toBeLessThan(6000);
      }
      const rows = await eventually(async () => {
        const ledger = await ledgerOf(key);
        expect(answers.filter((answer) => !ledger.some((row) => row.id === answer.id))).toEqual([]);
        return ledger;
      }, 20_000);
      expect(await redisSpend(key)).toBe(rows.reduce((sum, row) => sum + row.costNanos, 0));
    }, 60_000);

    it('bills a stream whose worker is killed after the first token by estimate, once', async () => {
      const key = await createKey(deployment, { name: 'killed worker', budget_usd: 1000 });
      double.script('alpha', { kind: 'text', chunks: words(60), chunkDelayMs: 150 });
      const response = await chat(deployment, key.key, { model: 'svc/alpha', messages: hello, stream: true });
      const id = response.headers.get('x-request-id')!;
      const reader = new StreamReader(response);
      await eventually(() => expect(reader.content.length).toBeGreaterThan(20), 5000);
      const victim = deployment.workers[0]!;
      victim.child.kill('SIGKILL');
      await victim.exited;
      const killedAt = Date.now();
      deployment.workers.splice(0, 1);
      // A new worker takes the dead one's job again; the first-token claim makes it refuse.
      await deployment.spawnProcess('worker');
      await reader.finished();
      expect(reader.error).toMatchObject({ code: 'worker_lost' });

      const row = await eventually(async () => {
        const found = (await ledgerOf(key)).find((entry) => entry.id === id);
        expect(found).toBeDefined();
        return found!;
      }, 15_000);
      timings.killToEstimatedRow = Date.now() - killedAt;
      expect(row).toMatchObject({ estimated: true, status: 502, servedModel: 'svc/alpha' });
      expect(row.attempts.map((attempt) => attempt.outcome)).toEqual(['worker_lost']);
      expect(row.costNanos).toBeGreaterThan(0);
      expect(row.completionTokens).toBeGreaterThanOrEqual(reader.content.trim().split(' ').length);
      // Whichever of the watchdog and the re-run reported the loss, the key was charged once.
      await sleep(Math.max(0, killedAt + 6000 - Date.now()));
      expect(await ledgerOf(key)).toHaveLength(1);
      expect(await redisSpend(key)).toBe(row.costNanos);
      expect(double.requests).toHaveLength(1);
    }, 40_000);

    it('lets no queued job of a key revoked with a backlog reach the provider: they end 401', async () => {
      const key = await createKey(deployment, { name: 'revoked with a backlog' });
      double.script('alpha', { kind: 'text', chunks: words(10), chunkDelayMs: 150 });
      const answers = Array.from({ length: 30 }, () =>
        chat(deployment, key.key, { model: 'svc/alpha', messages: hello }).then(async (response) => ({ status: response.status, body: await response.json() })),
      );
      // The worker runs 8 at a time, each 1.5 s upstream; the other 22 wait in the queue.
      await eventually(() => expect(double.requests).toHaveLength(8), 10_000);
      const revoked = await adminRequest(deployment, 'DELETE', `/admin/v1/keys/${key.id}`);
      expect(revoked.status).toBe(200);
      const revokedAt = Date.now();
      const started = double.requests.length;
      const results = await Promise.all(answers);
      expect(double.requests.filter((request) => request.receivedAt >= revokedAt)).toEqual([]);
      expect(results.filter((result) => result.status === 200)).toHaveLength(started);
      const refused = results.filter((result) => result.status === 401);
      expect(refused).toHaveLength(30 - started);
      for (const result of refused) expect(result.body.error.code).toBe('invalid_api_key');
      // Refused jobs cost nothing and leave no charge.
      const { body: record } = await adminRequest(deployment, 'GET', `/admin/v1/keys/${key.id}`);
      const ledger = await ledgerOf(key);
      expect(ledger.filter((row) => row.status === 200)).toHaveLength(started);
      expect(Math.round(record.spent_usd * 1e9)).toBe(ledger.reduce((sum, row) => sum + row.costNanos, 0));
    }, 40_000);
  });
  describe('scaled-out money under faults: Redis (append-only file) crashes while PostgreSQL is down', () => {
    const storeRelay = TcpRelay.for(DATABASE_URL!, 5432);
    // appendfsync always: the test crashes Redis right after the writes it checks.
    const redisServer = new PrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always']);
    let double: OpenAiProviderDouble;
    let deployment: ScaledDeployment;

    beforeAll(async () => {
      await storeRelay.up();
      await redisServer.start();
      double = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
      deployment = await startScaledDeployment({
        openAiUrl: double.url,
        ingressCount: 1,
        workerCount: 1,
        environment: {
          REDIS_URL: redisServer.url,
          DATABASE_URL: storeRelay.url(DATABASE_URL!),
          LOG_LEVEL: process.env.SB_DEBUG_LOG ?? 'silent',
          SWITCHBOARD_KEY_CACHE_MS: '600000',
        },
      });
    }, 60_000);
    afterAll(async () => {
      await storeRelay.up();
      if (process.env.SB_DEBUG_LOG) for (const p of [...deployment.ingresses, ...deployment.workers]) console.log(p.role, p.output().slice(-4000));
      await deployment?.close();
      await double?.close();
      await redisServer.destroy();
      await storeRelay.down();
    }, 30_000);

    it('loses no ledger record nor spend of requests answered during a store outage when Redis restarts', async () => {
      const key = await createKey(deployment, { name: 'redis restart', budget_usd: 1000 });
      double.script('alpha', { kind: 'text', chunks: words(3), chunkDelayMs: 20 });
      expect((await chat(deployment, key.key, { model: 'svc/alpha', messages: hello })).status).toBe(200);
      const traffic = startTraffic(deployment, key, 2);
      try {
        await storeRelay.down();
        await sleep(2000);
      } finally {
        await traffic.stop();
      }
      const answered = traffic.results.filter((result) => result.status === 200);
      expect(answered.length).toBeGreaterThan(5);
      // Their records wait in Redis only; Redis crashes and comes back from its append-only file.
      await redisServer.crash();
      await redisServer.start();
      // (Until the store is back, only cached keys work, and a Redis reconnect empties the cache.)
      await storeRelay.up();
      await eventually(async () => expect((await chat(deployment, key.key, { model: 'svc/alpha', messages: hello })).status).toBe(200), 15_000);

      const { body: all } = await eventually(async () => {
        const page = await adminRequest(deployment, 'GET', `/admin/v1/requests?key_id=${key.id}&limit=1000`);
        const ids = new Set((page.body.data as LedgerRow[]).map((row) => row.id));
        expect(answered.filter((result) => !ids.has(result.id)).map((result) => result.id)).toEqual([]);
        return page;
      }, 20_000);
      const ledgerNanos = (all.data as Array<Record<string, unknown>>).map(ledgerView).reduce((sum, row) => sum + row.costNanos, 0);
      const redis = new Redis(redisServer.url);
      try {
        await eventually(async () => expect(Number(await redis.hget(`${deployment.prefix}:counters:{${key.id}}:spend`, 'n'))).toBe(ledgerNanos), 5000);
      } finally {
        await redis.quit();
      }
    }, 60_000);
  });
}
