import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, Socket, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from './doubles/openai-provider-double.js';
import { adminRequest, chat, createKey, eventually, hello, type CreatedKey } from './support/api-client.js';
import { startEmbeddedGateway, type EmbeddedGateway } from '../src/embedded-gateway.js';
import { testEnvironment } from './support/gateway-harness.js';
import { StreamReader } from './support/stream-reader.js';
import { DATABASE_URL, dropSchema, REDIS_URL, removeRedisPrefix, scaledOutAvailable, scaledOutSkipNotice, startScaledDeployment, stopProcess, type ManagedProcess, type ScaledDeployment } from './support/scaled-harness.js';

// Faults of the scaled-out deployment, against real processes and on both queues: workers killed (SIGKILL) before and
// after the first token, clients that disconnect, SIGTERM on workers and ingresses, a deep queue,
// Redis going away and coming back, and key changes across ingress instances.

/** A TCP relay in front of Redis that the test can cut and restore, to make Redis unreachable. */
class RedisRelay {
  private server?: Server;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(private readonly target: URL) {}

  async up(): Promise<void> {
    if (this.server?.listening) return;
    this.server = createServer((client) => {
      const upstream = new Socket();
      upstream.connect(Number(this.target.port || 6379), this.target.hostname);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('error', () => undefined);
        socket.on('close', () => this.sockets.delete(socket));
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  async down(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server?.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }
}

/** Durations the faults took, printed with SB_REPORT_TIMINGS=1 (the numbers in docs/scale-out.md). */
const timings: Record<string, number> = {};
afterAll(() => {
  if (process.env.SB_REPORT_TIMINGS) console.log(`fault timings (ms): ${JSON.stringify(timings)}`);
});

const live = (managed: ManagedProcess) => managed.child.exitCode === null && managed.child.signalCode === null;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const streamBody = { model: 'svc/alpha', messages: hello, stream: true };
const words = (count: number) => Array.from({ length: count }, (_, i) => `w${i} `);

if (!scaledOutAvailable) {
  console.warn(`scaled-out faults: ${scaledOutSkipNotice}`);
  describe.skip('scaled-out faults (REDIS_URL / DATABASE_URL not set)', () => {
    it('needs REDIS_URL and DATABASE_URL', () => undefined);
  });
} else {
  // Every fault against both queues the deployment can run on (SWITCHBOARD_QUEUE).
  describe.each(['bullmq', 'lists'])('scaled-out faults: 2 ingress + 2 worker processes, queue %s', (queue) => {
    let double: OpenAiProviderDouble;
    let deployment: ScaledDeployment;
    let key: CreatedKey;

    const holderOf = (requestIndex: number) => deployment.workerThatSent(double.requests[requestIndex]!.headers);
    const replaceWorker = (gone: ManagedProcess) => deployment.replaceWorker(gone);

    beforeAll(async () => {
      double = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
      deployment = await startScaledDeployment({
        openAiUrl: double.url,
        tagWorkers: true,
        firstTokenMs: 8000,
        totalMs: 20_000,
        environment: { LOG_LEVEL: process.env.SB_DEBUG_LOG ?? 'silent', SWITCHBOARD_WORKER_CONCURRENCY: '400', SWITCHBOARD_QUEUE: queue },
      });
      key = await createKey(deployment, { name: 'faults' });
    }, 60_000);
    beforeEach(() => double?.reset());
    afterAll(async () => {
      if (process.env.SB_DEBUG_LOG) for (const p of [...deployment.ingresses, ...deployment.workers]) console.log(p.role, p.output().slice(-4000));
      await deployment?.close();
      await double?.close();
    }, 30_000);

    it('makes a key change through one ingress visible on the other at once', async () => {
      const [a, b] = deployment.urls as [string, string];
      const limited = await createKey(deployment, { name: 'cross-instance' });
      double.script('alpha', { kind: 'text', text: 'ok' });
      const via = (url: string) => fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${limited.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'svc/alpha', messages: hello }) });
      expect((await via(b)).status).toBe(200); // ingress b now holds the key record in its cache
      const patched = await fetch(`${a}/admin/v1/keys/${limited.id}`, { method: 'PATCH', headers: { authorization: `Bearer ${deployment.adminToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ rpm: 1 }) });
      expect(patched.status).toBe(200);
      await sleep(50); // the broadcast is one Redis hop
      expect((await via(b)).status).toBe(200);
      const refused = await via(b);
      expect(refused.status).toBe(429);
      // Revoked through b: the very next request through a fails.
      const revoked = await fetch(`${b}/admin/v1/keys/${limited.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${deployment.adminToken}` } });
      expect(revoked.status).toBe(200);
      expect((await via(a)).status).toBe(401);
    });

    it('holds hundreds of concurrent upstream streams in one worker process', async () => {
      // One worker only for this test: the other finishes its (no) jobs and leaves.
      const other = deployment.workers[1]!;
      await stopProcess(other);
      // The other worker comes back even when an assertion fails, so later tests keep two.
      try {
        double.script('alpha', { kind: 'text', chunks: words(25), chunkDelayMs: 200 });
        const startedAt = Date.now();
        const readers = await Promise.all(Array.from({ length: 300 }, async () => new StreamReader(await chat(deployment, key.key, streamBody))));
        await Promise.all(readers.map((reader) => reader.finished()));
        timings.streams300OneWorker = Date.now() - startedAt;
        expect(readers.every((reader) => reader.done && reader.content === words(25).join(''))).toBe(true);
        // The provider saw them open at the same time (counted by the double, not timed: each lasts
        // at least 4.8 s upstream, so even a busy machine that spreads their starts keeps hundreds open).
        const arrivals = double.requests.map((request) => request.receivedAt);
        timings.streams300ArrivalSpread = Math.max(...arrivals) - Math.min(...arrivals);
        expect(double.mostOpen()).toBeGreaterThanOrEqual(200);
        expect(new Set(double.requests.map((request) => request.headers['x-test-worker'])).size).toBe(1);
      } finally {
        await replaceWorker(other);
      }
    }, 30_000);

    it('cancels the upstream call within a second when a client disconnects, whichever worker holds it', async () => {
      double.script('alpha', { kind: 'text', chunks: words(40), chunkDelayMs: 100 });
      const clients = Array.from({ length: 6 }, () => new AbortController());
      const readers = await Promise.all(clients.map(async (client) => new StreamReader(await chat(deployment, key.key, streamBody, { signal: client.signal }))));
      await eventually(() => expect(readers.every((reader) => reader.content.length > 0)).toBe(true), 5000);
      const holders = new Set(double.requests.map((request) => request.headers['x-test-worker']));
      const cancelledAt = Date.now();
      for (const client of clients) client.abort();
      await eventually(() => expect(double.aborted).toHaveLength(6), 1000);
      timings.disconnectToUpstreamAbort = Math.max(...double.aborted.map((entry) => entry.at)) - cancelledAt;
      expect(Date.now() - cancelledAt).toBeLessThan(1000);
      expect(holders.size).toBe(2);
    });

    it('re-runs a job on another worker when its worker is killed before the first token', async () => {
      double.script('alpha', { kind: 'hang' }, { kind: 'text', chunks: ['re', 'run ', 'ok'] });
      const startedAt = Date.now();
      // Headers come with the first token, so the response is awaited only after the kill.
      const response = chat(deployment, key.key, streamBody);
      await eventually(() => expect(double.requests).toHaveLength(1), 5000);
      const victim = holderOf(0);
      victim.child.kill('SIGKILL');
      const killedAt = Date.now();
      await victim.exited;
      const reader = new StreamReader(await response);
      await reader.finished();
      timings.killBeforeFirstTokenToAnswer = Date.now() - killedAt;
      expect(reader.done).toBe(true);
      expect(reader.error).toBeUndefined();
      expect(reader.content).toBe('rerun ok');
      expect(double.requests).toHaveLength(2);
      expect(double.requests[1]!.headers['x-test-worker']).not.toBe(victim.tag);
      expect(Date.now() - startedAt).toBeLessThan(10_000);
      await replaceWorker(victim);
    });

    it('ends a started stream with an error chunk when its worker is killed, and never repeats content', async () => {
      const all = words(60);
      double.script('alpha', { kind: 'text', chunks: all, chunkDelayMs: 150 });
      const reader = new StreamReader(await chat(deployment, key.key, streamBody));
      await eventually(() => expect(reader.content.length).toBeGreaterThan(6), 5000);
      const victim = holderOf(0);
      victim.child.kill('SIGKILL');
      const killedAt = Date.now();
      await reader.finished();
      timings.killAfterFirstTokenToErrorChunk = Date.now() - killedAt;
      expect(Date.now() - killedAt).toBeLessThan(7000);
      expect(reader.error).toMatchObject({ code: 'worker_lost' });
      expect(reader.chunks.at(-1).choices[0].finish_reason).toBe('error');
      // What arrived is a clean prefix of the answer: nothing repeated, nothing out of order.
      expect(all.join('').startsWith(reader.content)).toBe(true);
      // The job is re-queued once the dead worker's lock lapses; the re-run must not call upstream.
      await sleep(Math.max(0, killedAt + 6000 - Date.now()));
      expect(double.requests).toHaveLength(1);
      await replaceWorker(victim);
    });

    it('lets a worker finish its active job on SIGTERM while the other takes new ones', async () => {
      double.script('alpha', { kind: 'text', chunks: words(12), chunkDelayMs: 100 });
      const reader = new StreamReader(await chat(deployment, key.key, streamBody));
      await eventually(() => expect(reader.content.length).toBeGreaterThan(0), 5000);
      const victim = holderOf(0);
      const exit = stopProcess(victim, 'SIGTERM');
      await sleep(100);
      const other = await chat(deployment, key.key, { model: 'svc/alpha', messages: hello });
      expect(other.status).toBe(200);
      await reader.finished();
      expect(reader.done).toBe(true);
      expect(reader.content).toBe(words(12).join(''));
      expect(await exit).toBe(0);
      expect(double.requests[1]!.headers['x-test-worker']).not.toBe(victim.tag);
      await replaceWorker(victim);
    });

    it('drains an ingress on SIGTERM: open streams complete, new connections are refused', async () => {
      const ingress = deployment.ingresses[0]!;
      double.script('alpha', { kind: 'text', chunks: words(15), chunkDelayMs: 100 });
      const response = await fetch(`${ingress.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' }, body: JSON.stringify(streamBody) });
      const reader = new StreamReader(response);
      await eventually(() => expect(reader.content.length).toBeGreaterThan(0), 5000);
      const exit = stopProcess(ingress, 'SIGTERM');
      await sleep(200);
      // New connections are refused; a request on a kept-alive one is told to go elsewhere.
      const probe = await fetch(`${ingress.url}/healthz`).then((response) => response.status, () => 'refused');
      expect(['refused', 503]).toContain(probe);
      await reader.finished();
      expect(reader.done).toBe(true);
      expect(reader.content).toBe(words(15).join(''));
      expect(await exit).toBe(0);
      expect(live(ingress)).toBe(false);
    });
  });

  describe('scaled-out faults: a deep queue and Redis outages (1 ingress, 1 worker of concurrency 1)', () => {
    let double: OpenAiProviderDouble;
    let deployment: ScaledDeployment;
    let key: CreatedKey;
    const relay = new RedisRelay(new URL(process.env.REDIS_URL!));

    beforeAll(async () => {
      await relay.up();
      double = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
      deployment = await startScaledDeployment({
        openAiUrl: double.url,
        ingressCount: 1,
        workerCount: 1,
        environment: {
          REDIS_URL: `redis://127.0.0.1:${relay.port}`,
          SWITCHBOARD_WORKER_CONCURRENCY: '1',
          SWITCHBOARD_MAX_QUEUED_JOBS: '2',
        },
      });
      key = await createKey(deployment, { name: 'queue' });
    }, 60_000);
    beforeEach(() => double?.reset());
    afterAll(async () => {
      await relay.up();
      await deployment?.close();
      await double?.close();
      await relay.down();
    }, 30_000);

    it('sheds load with 503 overloaded when the queue is deep, and serves what it admitted', async () => {
      double.script('alpha', { kind: 'text', chunks: words(5), chunkDelayMs: 100 });
      const first = chat(deployment, key.key, { model: 'svc/alpha', messages: hello });
      await eventually(() => expect(double.requests).toHaveLength(1), 5000);
      const startedAt = Date.now();
      const rest = await Promise.all(Array.from({ length: 6 }, () => chat(deployment, key.key, { model: 'svc/alpha', messages: hello }).then(async (response) => ({ response, body: await response.json(), at: Date.now() }))));
      const refused = rest.filter((entry) => entry.response.status === 503);
      expect(refused.length).toBeGreaterThanOrEqual(4);
      timings.overloadedAnswer = Math.max(...refused.map((entry) => entry.at - startedAt));
      for (const entry of refused) {
        expect(entry.body.error.code).toBe('overloaded');
        expect(entry.at - startedAt).toBeLessThan(1000);
      }
      expect(rest.filter((entry) => entry.response.status === 200)).toHaveLength(6 - refused.length);
      expect((await first).status).toBe(200);
    });

    it('drops queued jobs whose client has gone instead of running them', async () => {
      double.script('alpha', { kind: 'text', chunks: words(5), chunkDelayMs: 150 });
      const first = chat(deployment, key.key, { model: 'svc/alpha', messages: hello });
      await eventually(() => expect(double.requests).toHaveLength(1), 5000);
      const clients = [new AbortController(), new AbortController()];
      const queued = clients.map((client) => chat(deployment, key.key, { model: 'svc/alpha', messages: hello }, { signal: client.signal }).catch(() => undefined));
      await sleep(150);
      for (const client of clients) client.abort();
      await Promise.all(queued);
      expect((await first).status).toBe(200);
      const after = await chat(deployment, key.key, { model: 'svc/alpha', messages: hello });
      expect(after.status).toBe(200);
      expect(double.requests).toHaveLength(2);
    });

    it('answers 503 service_unavailable at once while Redis is unreachable, and recovers without a restart', async () => {
      double.script('alpha', { kind: 'text', text: 'back again' });
      const pids = [...deployment.ingresses, ...deployment.workers].map((managed) => managed.child.pid);
      expect((await chat(deployment, key.key, { model: 'svc/alpha', messages: hello })).status).toBe(200);
      await relay.down();
      timings.unavailableAnswer = 0;
      for (const pause of [0, 500, 1500]) {
        await sleep(pause); // at once, and while the processes keep trying to reconnect
        const startedAt = Date.now();
        const response = await chat(deployment, key.key, { model: 'svc/alpha', messages: hello });
        timings.unavailableAnswer = Math.max(timings.unavailableAnswer, Date.now() - startedAt);
        expect(Date.now() - startedAt).toBeLessThan(2500);
        expect(response.status).toBe(503);
        const body = await response.json();
        expect(body.error.code).toBe('service_unavailable');
        expect(body.error.message).toMatch(/redis/i);
      }
      await relay.up();
      const restoredAt = Date.now();
      const recovered = await eventually(async () => {
        const response = await chat(deployment, key.key, { model: 'svc/alpha', messages: hello, stream: true });
        expect(response.status).toBe(200);
        return new StreamReader(response);
      }, 10_000);
      await recovered.finished();
      timings.redisBackToAnswer = Date.now() - restoredAt;
      expect(recovered.content).toBe('back again');
      expect([...deployment.ingresses, ...deployment.workers].map((managed) => managed.child.pid)).toEqual(pids);
      expect([...deployment.ingresses, ...deployment.workers].every(live)).toBe(true);
    });
  });

  describe('npm start with REDIS_URL and DATABASE_URL: each process is an ingress and a worker of one deployment', () => {
    const id = randomBytes(5).toString('hex');
    const prefix = `sbtest-joined-${id}`;
    const schema = `sb_test_joined_${id}`;
    const dataDirs: string[] = [];
    const gateways: EmbeddedGateway[] = [];
    let double: OpenAiProviderDouble;

    beforeAll(async () => {
      double = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
      for (let i = 0; i < 2; i++) {
        const dataDir = mkdtempSync(join(tmpdir(), 'switchboard-joined-'));
        dataDirs.push(dataDir);
        const environment = { ...testEnvironment({ openAiUrl: double.url }, dataDir), REDIS_URL: REDIS_URL!, DATABASE_URL: DATABASE_URL!, SWITCHBOARD_REDIS_PREFIX: prefix, SWITCHBOARD_DATABASE_SCHEMA: schema };
        gateways.push(await startEmbeddedGateway({ environment }));
      }
    }, 60_000);
    afterAll(async () => {
      for (const gateway of gateways) await gateway.close();
      await double?.close();
      for (const dataDir of dataDirs) rmSync(dataDir, { recursive: true, force: true });
      await removeRedisPrefix(REDIS_URL!, prefix);
      await dropSchema(DATABASE_URL!, schema);
    }, 30_000);

    it('queues through BullMQ and shares keys, limits and revocations between the processes', async () => {
      const [a, b] = gateways as [EmbeddedGateway, EmbeddedGateway];
      const admin = (gateway: EmbeddedGateway, method: string, path: string, body?: unknown) =>
        fetch(`${gateway.url}${path}`, { method, headers: { authorization: `Bearer ${gateway.adminToken}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
      const created = await (await admin(a, 'POST', '/admin/v1/keys', { name: 'joined' })).json();
      const ask = (gateway: EmbeddedGateway) => fetch(`${gateway.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${created.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'svc/alpha', messages: hello }) });
      double.script('alpha', { kind: 'text', text: 'joined' });
      const answer = await ask(b);
      expect(answer.status).toBe(200);
      expect((await answer.json()).choices[0].message.content).toBe('joined');
      const redis = new Redis(REDIS_URL!);
      try {
        expect((await redis.keys(`${prefix}:bull:completions:*`)).length).toBeGreaterThan(0);
      } finally {
        await redis.quit();
      }
      expect((await admin(a, 'DELETE', `/admin/v1/keys/${created.id}`)).status).toBe(200);
      expect((await ask(b)).status).toBe(401);
    });
  });
}
