import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import * as bullScripts from 'bullmq/dist/esm/scripts/index.js';
import { PrivateRedis } from '../test/support/private-redis.js';

// Redis cost per job of the scaled-out deployment (issue 12), measured on a redis-server of its own
// (a free port, so other engineers' tests on the shared Redis never pollute the figures):
// 1 ingress + 1 worker process against the OpenAI provider double, N non-streaming requests and
// N 20-chunk streams sent sequentially (BENCH_CONCURRENCY to change), each phase between two
// `INFO commandstats` snapshots (CONFIG RESETSTAT before). A second, shorter pass under MONITOR
// tells top-level commands from those run inside Lua scripts and names each EVALSHA's script.
// Counts are exact and what changes are judged on; usec and CPU depend on machine load.
//
// Run: npx tsx bench/redis-per-job.ts   (DATABASE_URL defaults to the local PostgreSQL)
// Env: BENCH_JOBS (default 200), BENCH_MONITOR_JOBS (default 20), BENCH_CONCURRENCY (default 1),
//      BENCH_JSON=path to also write the figures as JSON; SWITCHBOARD_QUEUE=bullmq|lists.

const JOBS = Number(process.env.BENCH_JOBS ?? 200);
const MONITOR_JOBS = Number(process.env.BENCH_MONITOR_JOBS ?? 20);
const CONCURRENCY = Math.max(1, Number(process.env.BENCH_CONCURRENCY ?? 1));
/** The deployment's queue (SWITCHBOARD_QUEUE): bullmq (default) or lists. */
const QUEUE = process.env.SWITCHBOARD_QUEUE || 'bullmq';
const STREAM_CHUNKS = 20;
const CHUNK_GAP_MS = 5;
const IDLE_MS = 3000;

const redisServer = new PrivateRedis(['--appendonly', 'no']);
await redisServer.start();
process.env.REDIS_URL = redisServer.url;
process.env.DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/test';
// The harness reads REDIS_URL when it loads, so it is imported only now.
const { startScaledDeployment } = await import('../test/support/scaled-harness.js');
const { startOpenAiProviderDouble } = await import('../test/doubles/openai-provider-double.js');
const { chat, createKey, hello } = await import('../test/support/api-client.js');

/** sha1 of every Lua script that may run: BullMQ's (as ioredis defines them) and the counters'. */
function scriptNames(): Map<string, string> {
  const names = new Map<string, string>();
  const sha = (lua: string) => createHash('sha1').update(lua).digest('hex');
  for (const script of Object.values(bullScripts) as { name?: string; content?: string }[]) {
    if (script.name && script.content) names.set(sha(script.content), `bullmq ${script.name}`);
  }
  for (const name of ['admit', 'settle', 'claim-run', 'list-queue-reclaim', 'list-queue-release', 'list-queue-take']) {
    try {
      names.set(sha(readFileSync(new URL(`../src/shared/counters/lua/${name}.lua`, import.meta.url), 'utf8')), `counters ${name}.lua`);
    } catch {
      // not every version has every script
    }
    try {
      names.set(sha(readFileSync(new URL(`../src/shared/transport/lua/${name}.lua`, import.meta.url), 'utf8')), `transport ${name}.lua`);
    } catch {
      // idem
    }
  }
  return names;
}

interface Stat {
  calls: number;
  usec: number;
}

async function socketIo(): Promise<{ reads: number; writes: number }> {
  const info = await probe.info('stats');
  return { reads: Number(/total_reads_processed:(\d+)/.exec(info)![1]), writes: Number(/total_writes_processed:(\d+)/.exec(info)![1]) };
}

async function commandStats(redis: Redis): Promise<Map<string, Stat>> {
  const stats = new Map<string, Stat>();
  for (const line of (await redis.info('commandstats')).split('\r\n')) {
    const match = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line);
    if (match) stats.set(match[1]!, { calls: Number(match[2]), usec: Number(match[3]) });
  }
  return stats;
}

/** redis-server's CPU time (user + system) in microseconds, from /proc. */
function serverCpuUs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1_000_000) / 100;
}

const double = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
const words = Array.from({ length: STREAM_CHUNKS }, (_, i) => (i === 0 ? 'w0' : ` w${i}`));
double.script('alpha', { kind: 'text', text: 'Hello there friend', usage: { prompt_tokens: 5, completion_tokens: 3 } });
double.script('beta', { kind: 'text', chunks: words, chunkDelayMs: CHUNK_GAP_MS, usage: { prompt_tokens: 5, completion_tokens: STREAM_CHUNKS } });
const deployment = await startScaledDeployment({ openAiUrl: double.url, ingressCount: 1, workerCount: 1, environment: { SWITCHBOARD_QUEUE: QUEUE } });
const key = (await createKey(deployment, { name: 'bench' })).key;
const probe = new Redis(redisServer.url);
const serverPid = Number(/process_id:(\d+)/.exec(await probe.info('server'))![1]);

async function plainJob(): Promise<void> {
  const response = await chat(deployment, key, { model: 'svc/alpha', messages: hello });
  if (response.status !== 200) throw new Error(`non-streaming request answered ${response.status}: ${await response.text()}`);
  await response.json();
}

async function streamJob(): Promise<void> {
  const response = await chat(deployment, key, { model: 'svc/beta', messages: hello, stream: true });
  if (response.status !== 200) throw new Error(`stream answered ${response.status}: ${await response.text()}`);
  const text = await response.text();
  if (!text.includes(`w${STREAM_CHUNKS - 1}`) || !text.includes('[DONE]')) throw new Error('stream incomplete');
}

async function runJobs(job: () => Promise<void>, count: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < count) {
        next += 1;
        await job();
      }
    }),
  );
}

interface Phase {
  name: string;
  jobs: number;
  seconds: number;
  cpuUs: number;
  stats: Map<string, Stat>;
  /** Socket reads and writes of redis-server (INFO stats): a read is a client round trip (or a pipeline). */
  reads: number;
  writes: number;
  /** usec of each top-level command or script (by name), from SLOWLOG with a threshold of 0. */
  byScript: Map<string, Stat>;
}

/** Every top-level command of the phase, with its duration: SLOWLOG logging everything. */
async function slowlogByScript(names: Map<string, string>): Promise<Map<string, Stat>> {
  const entries = (await probe.call('SLOWLOG', 'GET', '-1')) as [number, number, number, string[]][];
  const byScript = new Map<string, Stat>();
  for (const [, , usec, args] of entries) {
    const command = String(args[0]).toLowerCase();
    if (command === 'info' || command === 'config' || command === 'slowlog') continue;
    const name = command === 'evalsha' ? names.get(String(args[1])) ?? `unknown script ${String(args[1]).slice(0, 10)}` : command;
    const stat = byScript.get(name) ?? { calls: 0, usec: 0 };
    stat.calls += 1;
    stat.usec += usec;
    byScript.set(name, stat);
  }
  return byScript;
}

async function measure(name: string, jobs: number, job: (() => Promise<void>) | null): Promise<Phase> {
  // Let the settler's store writes and the last events of the previous phase land first.
  await new Promise((resolve) => setTimeout(resolve, 300));
  await probe.config('RESETSTAT');
  await probe.call('SLOWLOG', 'RESET');
  const ioBefore = await socketIo();
  const cpuBefore = serverCpuUs(serverPid);
  const started = performance.now();
  if (job) await runJobs(job, jobs);
  else await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
  // Settlement (ledger store write, XDEL) finishes just after the response.
  if (job) await new Promise((resolve) => setTimeout(resolve, 100));
  const seconds = (performance.now() - started) / 1000;
  const cpuUs = serverCpuUs(serverPid) - cpuBefore;
  const ioAfter = await socketIo();
  const stats = await commandStats(probe);
  // The probe's own INFO and CONFIG are not the deployment's.
  stats.delete('info');
  stats.delete('config|resetstat');
  stats.delete('slowlog|reset');
  stats.delete('slowlog|get');
  // The probe's own CONFIG, SLOWLOG and INFO between the two readings: 3 reads and 3 writes.
  const reads = ioAfter.reads - ioBefore.reads - 3;
  const writes = ioAfter.writes - ioBefore.writes - 3;
  return { name, jobs, seconds, cpuUs, stats, reads, writes, byScript: await slowlogByScript(scriptNames()) };
}

interface MonitorCounts {
  topLevel: Map<string, number>;
  inLua: Map<string, number>;
  scripts: Map<string, number>;
  /** Inner commands by script: MONITOR lists a script's commands right after the script itself. */
  innerByScript: Map<string, number>;
}

/** Runs `jobs` jobs under MONITOR: top-level commands, commands inside scripts, and scripts by name. */
async function monitorPass(job: () => Promise<void>, jobs: number, names: Map<string, string>): Promise<MonitorCounts> {
  const counts: MonitorCounts = { topLevel: new Map(), inLua: new Map(), scripts: new Map(), innerByScript: new Map() };
  let currentScript = '';
  const monitor = await new Redis(redisServer.url).monitor();
  const bump = (map: Map<string, number>, k: string) => map.set(k, (map.get(k) ?? 0) + 1);
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    const command = String(args[0]).toLowerCase();
    if (command === 'info' || command === 'config') return;
    const inLua = source.includes('lua');
    bump(inLua ? counts.inLua : counts.topLevel, command);
    if (inLua) bump(counts.innerByScript, currentScript);
    else if (command === 'evalsha' || command === 'eval') {
      const sha = command === 'eval' ? createHash('sha1').update(String(args[1])).digest('hex') : String(args[1]);
      currentScript = names.get(sha) ?? `unknown script ${sha.slice(0, 10)}`;
      bump(counts.scripts, currentScript);
    }
  });
  await new Promise((resolve) => setTimeout(resolve, 300));
  await runJobs(job, jobs);
  await new Promise((resolve) => setTimeout(resolve, 300));
  monitor.disconnect();
  return counts;
}

// Every top-level command goes to the SLOWLOG with its duration (per-script usec; EVALSHA is one
// line of INFO commandstats whatever the script).
await probe.config('SET', 'slowlog-log-slower-than', '0');
await probe.config('SET', 'slowlog-max-len', '100000');

// Warm-up: key cache, scripts loaded, spend seeded, connections open.
await runJobs(plainJob, 20);
await runJobs(streamJob, 10);

const idle = await measure(`idle ${IDLE_MS / 1000} s`, 0, null);
const plain = await measure('non-streaming', JOBS, plainJob);
const stream = await measure(`${STREAM_CHUNKS}-chunk stream (${CHUNK_GAP_MS} ms apart)`, JOBS, streamJob);
const names = scriptNames();
const plainMonitor = await monitorPass(plainJob, MONITOR_JOBS, names);
const streamMonitor = await monitorPass(streamJob, MONITOR_JOBS, names);

const sum = (stats: Map<string, Stat>, field: keyof Stat) => [...stats.values()].reduce((total, s) => total + s[field], 0);
const f = (value: number, digits = 2) => value.toFixed(digits);

function topLevelUsec(phase: Phase, monitor: MonitorCounts): number {
  // commandstats counts a script's inner commands too (and the script's own usec includes them):
  // each command's usec is shared between top level and Lua in proportion to its MONITOR counts.
  let total = 0;
  for (const [command, stat] of phase.stats) {
    const base = command.split('|')[0]!;
    const top = monitor.topLevel.get(base) ?? 0;
    const lua = monitor.inLua.get(base) ?? 0;
    const share = top + lua === 0 ? 1 : top / (top + lua);
    total += stat.usec * share;
  }
  return total;
}

function report(phase: Phase, monitor: MonitorCounts): void {
  const idleRate = (command: string) => (idle.stats.get(command)?.calls ?? 0) / idle.seconds;
  console.log(`\n### ${phase.name}: ${phase.jobs} jobs, concurrency ${CONCURRENCY}, ${f(phase.seconds, 1)} s`);
  console.log('\n| command | calls/job | of which top-level/job (MONITOR) | inside Lua/job (MONITOR) | idle calls/s | usec/job |');
  console.log('|---|---:|---:|---:|---:|---:|');
  const rows = [...phase.stats].sort((a, b) => b[1].calls - a[1].calls);
  for (const [command, stat] of rows) {
    const base = command.split('|')[0]!;
    const top = (monitor.topLevel.get(base) ?? 0) / MONITOR_JOBS;
    const lua = (monitor.inLua.get(base) ?? 0) / MONITOR_JOBS;
    console.log(`| ${command} | ${f(stat.calls / phase.jobs)} | ${f(top)} | ${f(lua)} | ${f(idleRate(command), 1)} | ${f(stat.usec / phase.jobs, 1)} |`);
  }
  console.log('\nusec per job by script (whole script) and by command (top-level or inside a script), SLOWLOG with threshold 0:');
  for (const [name, stat] of [...phase.byScript].sort((a, b) => b[1].usec - a[1].usec)) console.log(`- ${name}: ${f(stat.calls / phase.jobs)} calls, ${f(stat.usec / phase.jobs, 1)} us`);
  const topCalls = [...monitor.topLevel.values()].reduce((a, b) => a + b, 0) / MONITOR_JOBS;
  const luaCalls = [...monitor.inLua.values()].reduce((a, b) => a + b, 0) / MONITOR_JOBS;
  console.log(`\nScripts per job (EVALSHA/EVAL by sha, MONITOR pass of ${MONITOR_JOBS} jobs):`);
  for (const [name, count] of [...monitor.scripts].sort((a, b) => b[1] - a[1])) console.log(`- ${name}: ${f(count / MONITOR_JOBS)} runs, ${f((monitor.innerByScript.get(name) ?? 0) / MONITOR_JOBS)} inner commands`);
  console.log(`\nTotals per job: ${f(sum(phase.stats, 'calls') / phase.jobs)} commands counted by commandstats (Lua inner ones included);`);
  console.log(`  ${f(topCalls)} top-level commands (MONITOR) of which ${f((monitor.scripts.size ? [...monitor.scripts.values()].reduce((a, b) => a + b, 0) : 0) / MONITOR_JOBS)} scripts, ${f(luaCalls)} commands inside scripts;`);
  console.log(`  redis-server socket reads ${f(phase.reads / phase.jobs)} per job (client round trips; a pipeline is one), writes ${f(phase.writes / phase.jobs)} (replies and pub/sub deliveries);`);
  console.log(`  commandstats usec of top-level commands ${f(topLevelUsec(phase, monitor) / phase.jobs, 1)} us/job; redis-server CPU ${f(phase.cpuUs / phase.jobs, 0)} us/job (10 ms ticks).`);
  console.log(`  Idle background: ${f(sum(idle.stats, 'calls') / idle.seconds, 1)} commands/s, so ${f((sum(idle.stats, 'calls') / idle.seconds) * (phase.seconds / phase.jobs), 2)} of the calls per job at this pace are time-based.`);
}

console.log(`# Redis per job: 1 ingress + 1 worker, queue ${QUEUE}, private redis-server ${redisServer.url}, ${new Date().toISOString()}`);
console.log('usec and CPU figures depend on machine load (the machine is shared); the counts are exact.');
console.log(`\n### idle: ${f(idle.seconds, 1)} s, ${f(sum(idle.stats, 'calls') / idle.seconds, 1)} commands/s: ${[...idle.stats].map(([c, s]) => `${c} ${f(s.calls / idle.seconds, 1)}/s`).join(', ')}`);
report(plain, plainMonitor);
report(stream, streamMonitor);
if (process.env.BENCH_JSON) {
  const { writeFileSync } = await import('node:fs');
  const asObject = (phase: Phase) => ({ ...phase, stats: Object.fromEntries(phase.stats), byScript: Object.fromEntries(phase.byScript) });
  const mon = (m: MonitorCounts) => ({ topLevel: Object.fromEntries(m.topLevel), inLua: Object.fromEntries(m.inLua), scripts: Object.fromEntries(m.scripts), innerByScript: Object.fromEntries(m.innerByScript), jobs: MONITOR_JOBS });
  writeFileSync(process.env.BENCH_JSON, JSON.stringify({ idle: asObject(idle), plain: asObject(plain), stream: asObject(stream), plainMonitor: mon(plainMonitor), streamMonitor: mon(streamMonitor) }, null, 1));
}

probe.disconnect();
await deployment.close();
await double.close();
await redisServer.destroy();
process.exit(0);
