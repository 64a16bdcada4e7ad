import { randomBytes } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import type { JobEvent } from '../src/shared/job.js';
import { RedisEventBatcher } from '../src/shared/transport/redis-event-batcher.js';

// The measurements behind the scaled-out transport's design (docs/scale-out.md):
//   1. the event path: a channel per ingress with events batched per event-loop turn (chosen),
//      against a channel per job with one PUBLISH per delta, and a trailing 5 ms batching timer;
//      CPU per stream (this process, both sides, plus redis-server) and first-event latency idle;
//   2. BullMQ throughput with completed jobs removed or kept.
// Run: REDIS_URL=redis://127.0.0.1:6379 npx tsx bench/transport-design.ts   (a few minutes)

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const STREAMS = Number(process.env.BENCH_STREAMS ?? 200);
const DELTAS = Number(process.env.BENCH_DELTAS ?? 60);
const DELTA_INTERVAL_MS = 10;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Design =
  | 'per-ingress, batch per loop turn'
  | 'per-job channel, PUBLISH per delta'
  | 'per-ingress, trailing 5 ms timer';

interface Sender {
  send(jobId: string, event: JobEvent): void;
}

async function redisCpuMs(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  const user = Number(/used_cpu_user:([\d.]+)/.exec(info)![1]);
  const sys = Number(/used_cpu_sys:([\d.]+)/.exec(info)![1]);
  return (user + sys) * 1000;
}

async function setUp(design: Design, prefix: string, onEvent: (event: JobEvent) => void) {
  const publisher = new Redis(url);
  const subscriber = new Redis(url);
  const ingressChannel = `${prefix}:events:ingress-1`;
  const handle = (_channel: string, message: string) => {
    const parsed = JSON.parse(message) as JobEvent | JobEvent[];
    if (Array.isArray(parsed)) for (const event of parsed) onEvent(event);
    else onEvent(parsed);
  };
  subscriber.on('message', handle);
  let sender: Sender;
  if (design === 'per-ingress, batch per loop turn') {
    await subscriber.subscribe(ingressChannel);
    const batcher = new RedisEventBatcher(publisher, () => undefined);
    sender = { send: (_jobId, event) => batcher.add(ingressChannel, event) };
  } else if (design === 'per-ingress, trailing 5 ms timer') {
    await subscriber.subscribe(ingressChannel);
    let pending: JobEvent[] = [];
    let timer: NodeJS.Timeout | undefined;
    sender = {
      send: (_jobId, event) => {
        pending.push(event);
        timer ??= setTimeout(() => {
          timer = undefined;
          const batch = pending;
          pending = [];
          void publisher.publish(ingressChannel, JSON.stringify(batch));
        }, 5);
      },
    };
  } else {
    sender = { send: (jobId, event) => void publisher.publish(`${prefix}:job:${jobId}`, JSON.stringify(event)) };
  }
  return {
    sender,
    async subscribeJob(jobId: string) {
      if (design === 'per-job channel, PUBLISH per delta') await subscriber.subscribe(`${prefix}:job:${jobId}`);
    },
    async unsubscribeJob(jobId: string) {
      if (design === 'per-job channel, PUBLISH per delta') await subscriber.unsubscribe(`${prefix}:job:${jobId}`);
    },
    async close() {
      await Promise.all([publisher.quit(), subscriber.quit()]);
    },
  };
}

async function measureStreams(design: Design, stats: Redis): Promise<{ cpuPerStreamMs: number; redisCpuPerStreamMs: number; seconds: number }> {
  const prefix = `bench-${randomBytes(4).toString('hex')}`;
  const remaining = new Map<string, number>();
  let allDone!: () => void;
  const done = new Promise<void>((resolve) => (allDone = resolve));
  const side = await setUp(design, prefix, (event) => {
    if (event.type !== 'finished') return;
    remaining.delete(event.jobId);
    if (remaining.size === 0) allDone();
  });
  const jobs = Array.from({ length: STREAMS }, (_, i) => `job-${i}`);
  for (const job of jobs) remaining.set(job, DELTAS);
  const cpuBefore = process.cpuUsage();
  const redisBefore = await redisCpuMs(stats);
  const started = performance.now();
  await Promise.all(
    jobs.map(async (jobId, i) => {
      await side.subscribeJob(jobId);
      await sleep((i * DELTA_INTERVAL_MS) / STREAMS); // streams start spread over one interval
      let seq = 0;
      side.sender.send(jobId, { type: 'accepted', worker: 'w', jobId, seq: seq++ });
      side.sender.send(jobId, { type: 'started', model: 'svc/alpha', jobId, seq: seq++ });
      for (let d = 0; d < DELTAS; d++) {
        await sleep(DELTA_INTERVAL_MS);
        side.sender.send(jobId, { type: 'deltas', deltas: [{ index: 0, content: ' token' }], jobId, seq: seq++ });
      }
      side.sender.send(jobId, { type: 'finished', model: 'svc/alpha', usage: { prompt_tokens: 1, completion_tokens: DELTAS, total_tokens: DELTAS + 1 }, jobId, seq: seq++ });
    }),
  );
  await done;
  for (const job of jobs) await side.unsubscribeJob(job);
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const redisCpu = (await redisCpuMs(stats)) - redisBefore;
  await side.close();
  return { cpuPerStreamMs: (cpu.user + cpu.system) / 1000 / STREAMS, redisCpuPerStreamMs: redisCpu / STREAMS, seconds };
}

async function measureIdleLatency(design: Design): Promise<number> {
  const prefix = `bench-${randomBytes(4).toString('hex')}`;
  let received!: () => void;
  const side = await setUp(design, prefix, () => received());
  const samples: number[] = [];
  for (let i = 0; i < 100; i++) {
    const jobId = `idle-${i}`;
    await side.subscribeJob(jobId);
    await sleep(2); // every design sends from an idle event loop
    const arrived = new Promise<void>((resolve) => (received = resolve));
    const sentAt = performance.now();
    side.sender.send(jobId, { type: 'deltas', deltas: [{ index: 0, content: 'x' }], jobId, seq: 0 });
    await arrived;
    samples.push(performance.now() - sentAt);
    await side.unsubscribeJob(jobId);
  }
  await side.close();
  return [...samples].sort((a, b) => a - b)[Math.floor(samples.length / 2)]!;
}

async function measureQueue(remove: boolean): Promise<number> {
  const prefix = `bench-${randomBytes(4).toString('hex')}`;
  const connection = new Redis(url, { maxRetriesPerRequest: null });
  const queue = new Queue('completions', { connection, prefix, defaultJobOptions: { attempts: 1, removeOnComplete: remove, removeOnFail: remove } });
  const total = 4000;
  let finished = 0;
  let allDone!: () => void;
  const done = new Promise<void>((resolve) => (allDone = resolve));
  const worker = new Worker('completions', async () => {
    finished += 1;
    if (finished === total) allDone();
  }, { connection: new Redis(url, { maxRetriesPerRequest: null }), prefix, concurrency: 64, drainDelay: 1 });
  await worker.waitUntilReady();
  const payload = { request: { model: 'svc/alpha', messages: [{ role: 'user', content: 'Say hello in a few words, please.' }] } };
  const started = performance.now();
  for (let i = 0; i < total; i += 100) await Promise.all(Array.from({ length: 100 }, (_, j) => queue.add('completion', payload, { jobId: `j${i + j}` })));
  await done;
  const perSecond = total / ((performance.now() - started) / 1000);
  await worker.close();
  await queue.obliterate({ force: true });
  await queue.close();
  await connection.quit();
  return perSecond;
}

const stats = new Redis(url);
const designs: Design[] = ['per-ingress, batch per loop turn', 'per-job channel, PUBLISH per delta', 'per-ingress, trailing 5 ms timer'];
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const t0 = performance.now();
// Designs are interleaved within every round, so load from elsewhere on the machine hits all alike.
const cpu = new Map<Design, { node: number[]; redis: number[]; latency: number[] }>(designs.map((design) => [design, { node: [], redis: [], latency: [] }]));
for (let round = 0; round < ROUNDS; round++) {
  for (const design of designs) {
    const result = await measureStreams(design, stats);
    cpu.get(design)!.node.push(result.cpuPerStreamMs);
    cpu.get(design)!.redis.push(result.redisCpuPerStreamMs);
    cpu.get(design)!.latency.push(await measureIdleLatency(design));
  }
}
console.log(`Event path: ${STREAMS} concurrent streams x ${DELTAS} deltas, one every ${DELTA_INTERVAL_MS} ms per stream; ${ROUNDS} interleaved rounds, medians`);
console.log('| design | node CPU ms/stream (both sides) | redis-server CPU ms/stream | total | idle first-event latency |');
console.log('|---|---|---|---|---|');
for (const design of designs) {
  const entry = cpu.get(design)!;
  const node = median(entry.node);
  const redis = median(entry.redis);
  console.log(`| ${design} | ${node.toFixed(2)} | ${redis.toFixed(2)} | ${(node + redis).toFixed(2)} | ${median(entry.latency).toFixed(2)} ms |`);
}
console.log(`(event path: ${((performance.now() - t0) / 1000).toFixed(0)} s)`);
const t1 = performance.now();
console.log(`\nBullMQ: 4000 jobs, concurrency 64, trivial processor; ${ROUNDS} interleaved rounds, medians`);
const rates: Record<string, number[]> = { true: [], false: [] };
await measureQueue(true); // warm-up
for (let round = 0; round < ROUNDS; round++) for (const remove of [round % 2 === 0, round % 2 !== 0]) rates[String(remove)]!.push(await measureQueue(remove));
for (const remove of ['true', 'false']) console.log(`| removeOnComplete/removeOnFail ${remove} | ${Math.round(median(rates[remove]!))} jobs/s |`);
console.log(`(queue: ${((performance.now() - t1) / 1000).toFixed(0)} s)`);
await stats.quit();
process.exit(0); // BullMQ's connections would otherwise keep the process alive
