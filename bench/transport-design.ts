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
// Run: REDIS_URL=redis://127.0.0.1:6379 npx tsx bench/transport-design.ts   (about 1 minute)

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const STREAMS = Number(process.env.BENCH_STREAMS ?? 200);
const DELTAS = Number(process.env.BENCH_DELTAS ?? 60);
const DELTA_INTERVAL_MS = 10;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Design = 'per-ingress, batch per loop turn' | 'per-job channel, PUBLISH per delta' | 'per-ingress, trailing 5 ms timer';

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
  for (let i = 0; i < 400; i++) {
    const jobId = `idle-${i}`;
    await side.subscribeJob(jobId);
    const arrived = new Promise<void>((resolve) => (received = resolve));
    const sentAt = performance.now();
    side.sender.send(jobId, { type: 'deltas', deltas: [{ index: 0, content: 'x' }], jobId, seq: 0 });
    await arrived;
    samples.push(performance.now() - sentAt);
    await side.unsubscribeJob(jobId);
    await sleep(2);
  }
  await side.close();
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)]!;
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
  }, { connection: new Redis(url, { maxRetriesPerRequest: null }), prefix, concurrency: 64 });
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
console.log(`Event path: ${STREAMS} concurrent streams x ${DELTAS} deltas, one every ${DELTA_INTERVAL_MS} ms per stream (3 rounds, median)`);
console.log('| design | node CPU ms/stream (both sides) | redis-server CPU ms/stream | total | idle first-event latency (median) |');
console.log('|---|---|---|---|---|');
for (const design of designs) {
  const rounds = [];
  for (let round = 0; round < 3; round++) rounds.push(await measureStreams(design, stats));
  rounds.sort((a, b) => a.cpuPerStreamMs + a.redisCpuPerStreamMs - (b.cpuPerStreamMs + b.redisCpuPerStreamMs));
  const median = rounds[1]!;
  const latency = await measureIdleLatency(design);
  console.log(`| ${design} | ${median.cpuPerStreamMs.toFixed(2)} | ${median.redisCpuPerStreamMs.toFixed(2)} | ${(median.cpuPerStreamMs + median.redisCpuPerStreamMs).toFixed(2)} | ${latency.toFixed(2)} ms |`);
}
console.log('\nBullMQ: 4000 jobs, concurrency 64, trivial processor (3 interleaved rounds each, median)');
const rates: Record<string, number[]> = { true: [], false: [] };
await measureQueue(true); // warm-up
for (let round = 0; round < 3; round++) for (const remove of [round % 2 === 0, round % 2 !== 0]) rates[String(remove)]!.push(await measureQueue(remove));
for (const remove of ['true', 'false']) {
  const sorted = rates[remove]!.sort((a, b) => a - b);
  console.log(`| removeOnComplete/removeOnFail ${remove} | ${Math.round(sorted[1]!)} jobs/s |`);
}
await stats.quit();
