import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { GatewayError } from '../src/shared/errors.js';
import type { CompletionJob, JobEvent } from '../src/shared/job.js';
import { Queue } from 'bullmq';
import type { QueueKind } from '../src/shared/transport/job-queue.js';
import { ListQueueNames } from '../src/shared/transport/list-job-queue.js';
import { removeRedisPrefix } from './support/service-cleanup.js';
import { InProcessTransport } from '../src/shared/transport/in-process-transport.js';
import { RedisNames } from '../src/shared/transport/redis-connections.js';
import { RedisIngressTransport, RedisWorkerTransport } from '../src/shared/transport/redis-transport.js';
import type { IngressTransport, JobHandler, WorkerTransport } from '../src/shared/transport/transport.js';

// One suite, run against every transport (the embedded in-process one, and Redis pub/sub with
// either queue: BullMQ or our lists),
// so the two cannot drift apart: ordering and sequence numbers, cancellation before and while a job
// runs, many jobs at once, events reaching only the ingress that enqueued, load shedding, and the
// first-token claim.

interface World {
  /** Ingress transport number `index` (0 or 1), started, with every event it receives recorded. */
  ingress(index: number): Promise<RecordingIngress>;
  /** Starts worker(s) taking jobs from every ingress of this world. */
  startWorkers(handler: JobHandler, concurrency: number): Promise<void>;
  close(): Promise<void>;
}

interface TransportFactory {
  name: string;
  create(options: { maxQueued: number }): World;
  /** Resolves once a finished job has left the queue, so that its id can be queued again. */
  settled?(world: World, jobId: string): Promise<void>;
  /** Whether a job can be run a second time (a worker died): only across processes. */
  reruns: boolean;
}

class RecordingIngress {
  readonly events = new Map<string, JobEvent[]>();
  private waiters: Array<() => void> = [];
  constructor(readonly transport: IngressTransport) {}

  async start(): Promise<this> {
    await this.transport.start((event) => {
      let list = this.events.get(event.jobId);
      if (!list) this.events.set(event.jobId, (list = []));
      list.push(event);
      for (const wake of this.waiters.splice(0)) wake();
    });
    return this;
  }

  of(jobId: string): JobEvent[] {
    return this.events.get(jobId) ?? [];
  }

  async waitFor(check: () => boolean, timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      if (Date.now() > deadline) throw new Error('timed out waiting for job events');
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 25);
      });
    }
  }

  waitForEnd(jobId: string, timeoutMs?: number): Promise<void> {
    return this.waitFor(() => this.of(jobId).some((event) => event.type === 'finished' || event.type === 'failed' || event.type === 'completed'), timeoutMs);
  }
}

function makeJob(replyTo: string, overrides: Partial<CompletionJob> = {}): CompletionJob {
  return {
    id: randomUUID(),
    replyTo,
    keyId: 'key_test',
    targets: ['svc/alpha'],
    request: { source: 'openai', model: 'svc/alpha', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], n: 1, stream: true },
    stream: true,
    enqueuedAt: Date.now(),
    ...overrides,
  };
}

const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } as never;
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A handler that streams `count` deltas, yielding between them so jobs interleave. */
function streamingHandler(count: number, ran?: string[]): JobHandler {
  return async (job, control) => {
    ran?.push(job.id);
    control.publish({ type: 'accepted', worker: 'w' });
    if (!(await control.claimFirstToken())) throw new Error('claim refused');
    control.publish({ type: 'started', model: 'svc/alpha' });
    for (let i = 0; i < count; i++) {
      control.publish({ type: 'deltas', deltas: [{ index: 0, content: `${job.id.slice(0, 4)}:${i} ` }] });
      if (i % 3 === 0) await nextTurn();
    }
    control.publish({ type: 'finished', model: 'svc/alpha', usage });
    await control.flush();
  };
}

function expectOrderedStream(events: JobEvent[], jobId: string, count: number): void {
  expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
  expect(events.every((event) => event.jobId === jobId)).toBe(true);
  expect(events.map((event) => event.type)).toEqual(['accepted', 'started', ...Array(count).fill('deltas'), 'finished']);
  const text = events.flatMap((event) => (event.type === 'deltas' ? event.deltas.map((delta) => delta.content) : [])).join('');
  expect(text).toBe(Array.from({ length: count }, (_, i) => `${jobId.slice(0, 4)}:${i} `).join(''));
}

function describeTransportConformance(factory: TransportFactory): void {
  describe(`transport conformance: ${factory.name}`, () => {
    let world: World | undefined;
    const open = (maxQueued = 10_000) => (world = factory.create({ maxQueued }));
    afterEach(async () => {
      await world?.close();
      world = undefined;
    });

    it('delivers every event of a job in order, with sequence numbers from 0', async () => {
      const w = open();
      const ingress = await w.ingress(0);
      await w.startWorkers(streamingHandler(60), 4);
      const job = makeJob(ingress.transport.ingressId);
      await ingress.transport.enqueue(job);
      await ingress.waitForEnd(job.id);
      expectOrderedStream(ingress.of(job.id), job.id, 60);
    });

    it('runs many jobs at once, each stream complete and in order', async () => {
      const w = open();
      const ingress = await w.ingress(0);
      await w.startWorkers(streamingHandler(15), 64);
      const jobs = Array.from({ length: 200 }, () => makeJob(ingress.transport.ingressId));
      await Promise.all(jobs.map((job) => ingress.transport.enqueue(job)));
      await ingress.waitFor(() => jobs.every((job) => ingress.of(job.id).at(-1)?.type === 'finished'), 20_000);
      for (const job of jobs) expectOrderedStream(ingress.of(job.id), job.id, 15);
    });

    it('never runs a job cancelled before a worker took it', async () => {
      const w = open();
      const ingress = await w.ingress(0);
      const ran: string[] = [];
      const cancelled = makeJob(ingress.transport.ingressId);
      await ingress.transport.enqueue(cancelled);
      ingress.transport.cancel(cancelled.id);
      await sleep(50); // the cancellation is on its way before a worker exists
      await w.startWorkers(streamingHandler(2, ran), 2);
      const later = makeJob(ingress.transport.ingressId);
      await ingress.transport.enqueue(later);
      await ingress.waitForEnd(later.id);
      await sleep(100);
      expect(ran).toEqual([later.id]);
      expect(ingress.of(cancelled.id)).toEqual([]);
    });

    it('aborts the signal of a running job within a second of cancel()', async () => {
      const w = open();
      const ingress = await w.ingress(0);
      let abortedAfterMs = -1;
      await w.startWorkers(async (_job, control) => {
        control.publish({ type: 'accepted', worker: 'w' });
        const since = Date.now();
        await new Promise<void>((resolve) => {
          control.signal.addEventListener('abort', () => resolve(), { once: true });
          setTimeout(resolve, 5000);
        });
        abortedAfterMs = control.signal.aborted ? Date.now() - since : -1;
      }, 2);
      const job = makeJob(ingress.transport.ingressId);
      await ingress.transport.enqueue(job);
      await ingress.waitFor(() => ingress.of(job.id).length > 0);
      const cancelledAt = Date.now();
      ingress.transport.cancel(job.id);
      await ingress.waitFor(() => abortedAfterMs >= 0 || Date.now() - cancelledAt > 2000, 3000);
      expect(abortedAfterMs).toBeGreaterThanOrEqual(0);
      expect(Date.now() - cancelledAt).toBeLessThan(1000);
    });

    it('sends each job\'s events only to the ingress that enqueued it', async () => {
      const w = open();
      const first = await w.ingress(0);
      const second = await w.ingress(1);
      expect(first.transport.ingressId).not.toBe(second.transport.ingressId);
      await w.startWorkers(streamingHandler(5), 8);
      const jobsA = Array.from({ length: 10 }, () => makeJob(first.transport.ingressId));
      const jobsB = Array.from({ length: 10 }, () => makeJob(second.transport.ingressId));
      await Promise.all([...jobsA.map((job) => first.transport.enqueue(job)), ...jobsB.map((job) => second.transport.enqueue(job))]);
      await first.waitFor(() => jobsA.every((job) => first.of(job.id).at(-1)?.type === 'finished'));
      await second.waitFor(() => jobsB.every((job) => second.of(job.id).at(-1)?.type === 'finished'));
      await sleep(50);
      expect([...first.events.keys()].sort()).toEqual(jobsA.map((job) => job.id).sort());
      expect([...second.events.keys()].sort()).toEqual(jobsB.map((job) => job.id).sort());
      for (const job of jobsA) expectOrderedStream(first.of(job.id), job.id, 5);
    });

    it('refuses with `overloaded` when the queue is full, and accepts again once it drains', async () => {
      const w = open(3);
      const ingress = await w.ingress(0);
      const jobs = Array.from({ length: 3 }, () => makeJob(ingress.transport.ingressId));
      for (const job of jobs) await ingress.transport.enqueue(job);
      const refused = await ingress.transport.enqueue(makeJob(ingress.transport.ingressId)).then(() => undefined, (error: unknown) => error);
      expect(refused).toBeInstanceOf(GatewayError);
      expect((refused as GatewayError).code).toBe('overloaded');
      expect((refused as GatewayError).status).toBe(503);
      await w.startWorkers(streamingHandler(1), 4);
      await ingress.waitFor(() => jobs.every((job) => ingress.of(job.id).at(-1)?.type === 'finished'));
      const again = makeJob(ingress.transport.ingressId);
      await ingress.transport.enqueue(again);
      await ingress.waitForEnd(again.id);
    });

    it('grants the first-token claim to a run, and keeps granting it to that run', async () => {
      const w = open();
      const ingress = await w.ingress(0);
      const claims: boolean[] = [];
      await w.startWorkers(async (_job, control) => {
        control.publish({ type: 'accepted', worker: 'w' });
        claims.push(await control.claimFirstToken(), await control.claimFirstToken());
        control.publish({ type: 'finished', model: 'svc/alpha', usage });
      }, 2);
      const jobs = [makeJob(ingress.transport.ingressId), makeJob(ingress.transport.ingressId)];
      for (const job of jobs) await ingress.transport.enqueue(job);
      await ingress.waitFor(() => jobs.every((job) => ingress.of(job.id).at(-1)?.type === 'finished'));
      expect(claims).toEqual([true, true, true, true]);
    });

    it.runIf(factory.reruns)('fails a re-run of a job whose earlier run claimed the first token, without running it', async () => {
      const w = open();
      const ingress = await w.ingress(0);
      const ran: string[] = [];
      await w.startWorkers(streamingHandler(2, ran), 2);
      const job = makeJob(ingress.transport.ingressId);
      await ingress.transport.enqueue(job);
      await ingress.waitForEnd(job.id);
      await factory.settled?.(w, job.id);
      // The same job again, as BullMQ hands a stalled job to another worker.
      ingress.events.delete(job.id);
      await ingress.transport.enqueue(job);
      await ingress.waitForEnd(job.id);
      const events = ingress.of(job.id);
      expect(events.map((event) => event.type)).toEqual(['accepted', 'failed']);
      expect(events.map((event) => event.seq)).toEqual([0, 1]);
      expect(events[1]).toMatchObject({ error: { code: 'worker_lost' }, started: true });
      expect(ran).toEqual([job.id]);
    });
  });
}

describeTransportConformance({
  name: 'in-process',
  reruns: false,
  create({ maxQueued }) {
    const instances = [new InProcessTransport({ maxQueued }), new InProcessTransport({ maxQueued })];
    const ingresses = new Map<number, Promise<RecordingIngress>>();
    let started = false;
    return {
      ingress(index) {
        if (!ingresses.has(index)) ingresses.set(index, new RecordingIngress(instances[index]!.ingress).start());
        return ingresses.get(index)!;
      },
      async startWorkers(handler, concurrency) {
        started = true;
        for (const instance of instances) await instance.worker.start(handler, { concurrency });
      },
      async close() {
        if (started) for (const instance of instances) await instance.worker.close(2000);
        for (const instance of instances) await instance.ingress.close();
      },
    };
  },
});

const REDIS_URL = process.env.REDIS_URL;
if (REDIS_URL) {
  const runPrefix = `sbtest-transport-${randomBytes(4).toString('hex')}`;
  let worlds = 0;
  const prefixes = new WeakMap<World, string>();
  /** Resolves once no worker holds the job any more (it left the queue after its last event). */
  const settledIn: Record<QueueKind, (prefix: string, jobId: string) => Promise<void>> = {
    async bullmq(prefix, jobId) {
      const names = new RedisNames(prefix);
      const connection = new Redis(REDIS_URL);
      const queue = new Queue(names.queue, { connection, prefix: names.bullPrefix });
      try {
        const deadline = Date.now() + 5000;
        while ((await queue.getJob(jobId)) && Date.now() < deadline) await sleep(10);
      } finally {
        await queue.close();
        await connection.quit();
      }
    },
    async lists(prefix, jobId) {
      const names = new ListQueueNames(prefix);
      const redis = new Redis(REDIS_URL);
      try {
        const held = async () => {
          for (const worker of await redis.smembers(names.workers)) {
            if ((await redis.lrange(names.active(worker), 0, -1)).some((element) => element.includes(jobId))) return true;
          }
          return false;
        };
        const deadline = Date.now() + 5000;
        while ((await held()) && Date.now() < deadline) await sleep(10);
      } finally {
        await redis.quit();
      }
    },
  };
  for (const queue of ['bullmq', 'lists'] as const) {
    describeTransportConformance({
      name: `redis (${queue === 'bullmq' ? 'BullMQ' : 'lists'} + pub/sub)`,
      reruns: true,
      settled: (world, jobId) => settledIn[queue](prefixes.get(world)!, jobId),
      create({ maxQueued }) {
        const prefix = `${runPrefix}-${worlds++}`;
        const ingresses = new Map<number, Promise<RecordingIngress>>();
        const workers: WorkerTransport[] = [];
        const world: World = {
          ingress(index) {
            if (!ingresses.has(index)) ingresses.set(index, new RecordingIngress(new RedisIngressTransport({ redisUrl: REDIS_URL, prefix, maxQueued, queue })).start());
            return ingresses.get(index)!;
          },
          async startWorkers(handler, concurrency) {
            // Two worker processes' worth of transports, as in a scaled-out deployment.
            for (let i = 0; i < 2; i++) {
              const worker = new RedisWorkerTransport({ redisUrl: REDIS_URL, prefix, queue });
              workers.push(worker);
              await worker.start(handler, { concurrency });
            }
          },
          async close() {
            await Promise.all(workers.map((worker) => worker.close(2000)));
            for (const ingress of ingresses.values()) await (await ingress).transport.close();
          },
        };
        prefixes.set(world, prefix);
        return world;
      },
    });
  }

  // Everything this run wrote lives under its prefix.
  afterAll(() => removeRedisPrefix(REDIS_URL, runPrefix));
} else {
  console.warn('transport conformance: REDIS_URL is not set, so the Redis transport is NOT tested (set REDIS_URL=redis://127.0.0.1:6379 to run it)');
  describe.skip('transport conformance: redis (REDIS_URL not set)', () => {
    it('needs REDIS_URL', () => undefined);
  });
}
