import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { completionText } from './protocol.js';
import { cpuTicks, machineTicks, microsPerTick, totalCpuTicks, totalRssBytes } from './proc-stats.js';
import { killAllChildrenNow, repoRoot, sleep, startChild, stopAllChildren, waitForLog } from './processes.js';
import { renderReport, type Measured, type RunRecord, type BenchResults, type IdleRecord } from './report.js';
import {
  deleteRedisKeys,
  directTarget,
  dropDatabaseSchema,
  nginxAvailable,
  portkeyAvailable,
  redisPids,
  scaledOutAvailable,
  startEmbedded,
  startNginx,
  startNodeProxy,
  startEmbeddedTraced,
  startPortkey,
  startScaledOut,
  switchboardCatalog,
  targetNames,
  type Target,
  type TargetContext,
} from './targets.js';

// `npm run bench [-- options]`: starts the fast provider and every target, then runs the same load
// against each target, interleaved (every scenario visits every target in turn, round after round),
// and writes bench/results/<time>.{json,md}. Everything listens on 127.0.0.1 only; every run is
// bounded in time.
//
//   --quick              one short round (finishes in under 3 minutes)
//   --rounds N           rounds of every scenario (default 3)
//   --duration S         seconds per load run (default 5; --quick: 1 for wrk, 1.5 for streams)
//   --targets a,b        subset of: direct,nginx,portkey,embedded,scaled-1,scaled-2,scaled-4
//   --scenarios a,b      subset of: c1,c32,c256,stream-rate-low,stream-rate,stream-c256
//   --idle N             open idle streams per target for the memory figure (default 4000; --quick 500; 0 skips)
//   --idle-big N         idle streams held by the 4-worker scaled-out stack (default 10000; --quick 2000; 0 skips)
//   --stream-rate R      fixed arrival rate of the time-to-first-content runs (default 600/s)
//   --stream-rate-low R  a second, light arrival rate (default 100/s): time to first content unqueued
//   --redis-url URL      default redis://127.0.0.1:6379
//   --database-url URL   default postgres://postgres@127.0.0.1:5432/test (schema switchboard_bench, dropped after)
//   --baseline-dir D     adds target embedded-baseline: the embedded gateway run from tree D (before/after)
//   --switchboard-dir D  run Switchboard from another tree (e.g. an export of a commit with node_modules
//                        linked in) instead of this repository's working tree

interface Options {
  quick: boolean;
  rounds: number;
  durationS: number;
  targets: string[];
  idle: number;
  idleBig: number;
  streamRate: number;
  streamRateLow: number;
  redisUrl: string;
  databaseUrl: string;
  out: string;
  switchboardDir: string;
  baselineDir?: string;
  scenarios?: string[];
}

function parseOptions(argv: string[]): Options {
  const get = (name: string): string | undefined => {
    const index = argv.findIndex((arg) => arg === `--${name}` || arg.startsWith(`--${name}=`));
    if (index === -1) return undefined;
    const arg = argv[index]!;
    return arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : argv[index + 1];
  };
  const quick = argv.includes('--quick');
  return {
    quick,
    rounds: Number(get('rounds') ?? (quick ? 1 : 3)),
    durationS: Number(get('duration') ?? (quick ? 1 : 5)),
    targets: (get('targets') ?? [...targetNames, ...(get('baseline-dir') ? ['embedded-baseline'] : [])].join(',')).split(',').map((name) => name.trim()).filter(Boolean),
    idle: Number(get('idle') ?? (quick ? 500 : 4000)),
    idleBig: Number(get('idle-big') ?? (quick ? 2000 : 10000)),
    streamRate: Number(get('stream-rate') ?? 600),
    streamRateLow: Number(get('stream-rate-low') ?? 100),
    redisUrl: get('redis-url') ?? 'redis://127.0.0.1:6379',
    databaseUrl: get('database-url') ?? 'postgres://postgres@127.0.0.1:5432/test',
    out: get('out') ?? join(repoRoot, 'bench/results'),
    switchboardDir: get('switchboard-dir') ?? repoRoot,
    baselineDir: get('baseline-dir'),
    scenarios: get('scenarios')?.split(','),
  };
}

const options = parseOptions(process.argv.slice(2));
const node = process.execPath;
const tmp = mkdtempSync(join(tmpdir(), 'switchboard-bench-'));
const logDir = join(tmp, 'logs');
mkdirSync(logDir, { recursive: true });
const runId = `${process.pid}`;
const schema = 'switchboard_bench';
const benchStartedAt = Date.now();

function log(message: string): void {
  const seconds = ((Date.now() - benchStartedAt) / 1000).toFixed(1).padStart(6);
  process.stderr.write(`[bench ${seconds}s] ${message}\n`);
}

const bodies = {
  plain: join(tmp, 'body-plain.json'),
  stream: join(tmp, 'body-stream.json'),
  idle: join(tmp, 'body-idle.json'),
};
writeFileSync(bodies.plain, JSON.stringify({ model: 'svc/bench', messages: [{ role: 'user', content: 'Say hello.' }] }));
writeFileSync(bodies.stream, JSON.stringify({ model: 'svc/paced-20-5', stream: true, messages: [{ role: 'user', content: 'Say hello.' }] }));
writeFileSync(bodies.idle, JSON.stringify({ model: 'svc/idle-{i}', stream: true, messages: [{ role: 'user', content: 'Say hello.' }] }));

/** Runs a load client to completion, sampling its CPU; resolves its stdout. */
function runClient(command: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<{ stdout: string; clientTicks: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let clientTicks = 0;
    const sampler = setInterval(() => {
      clientTicks = cpuTicks(child.pid!) ?? clientTicks;
    }, 100);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout.on('data', (data: Buffer) => (stdout += data.toString()));
    child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
    child.on('exit', (code) => {
      clearInterval(sampler);
      clearTimeout(timer);
      if (code === 0) resolve({ stdout, clientTicks });
      else reject(new Error(`${command} ${args.slice(0, 3).join(' ')} exited with ${code}: ${stderr.slice(-500)}`));
    });
  });
}


async function measure<T>(target: Target, providerPid: number, run: () => Promise<{ result: T; clientTicks: number }>): Promise<Measured<T>> {
  const pids = target.pids();
  const parts = target.parts();
  const partBefore = Object.fromEntries(Object.entries(parts).map(([name, list]) => [name, totalCpuTicks(list)]));
  const before = totalCpuTicks(pids);
  const providerBefore = cpuTicks(providerPid) ?? 0;
  const machineBefore = machineTicks();
  const startedAt = performance.now();
  const { result, clientTicks } = await run();
  const wallMs = performance.now() - startedAt;
  const machineAfter = machineTicks();
  return {
    result,
    gatewayTicks: totalCpuTicks(pids) - before,
    partTicks: Object.fromEntries(Object.entries(parts).map(([name, list]) => [name, totalCpuTicks(list) - partBefore[name]!])),
    providerTicks: (cpuTicks(providerPid) ?? 0) - providerBefore,
    clientTicks,
    machineBusyTicks: machineAfter.busy - machineBefore.busy,
    machineTotalTicks: machineAfter.total - machineBefore.total,
    wallMs,
  };
}

/** CPU ticks per 200 ms that all targets use when nobody loads them (timers, heartbeats). */
let idleTicks = 0;

async function measureIdle(all: Target[]): Promise<void> {
  const pids = all.flatMap((target) => target.pids());
  const before = totalCpuTicks(pids);
  await sleep(1000);
  idleTicks = (totalCpuTicks(pids) - before) / 5;
}

/**
 * Waits (up to 15 s, 8 s with --quick) until every target's processes are back to their idle CPU,
 * so that work left over from the previous run (a backlog a saturated gateway is still clearing)
 * does not land in the next one.
 */
async function settle(all: Target[]): Promise<void> {
  const pids = all.flatMap((target) => target.pids());
  const deadline = Date.now() + (options.quick ? 8000 : 15_000);
  let last = totalCpuTicks(pids);
  for (;;) {
    await sleep(200);
    const now = totalCpuTicks(pids);
    if (now - last <= idleTicks + 3 || Date.now() > deadline) return;
    last = now;
  }
}

interface WrkResult {
  requests: number;
  duration_us: number;
  errors: { connect: number; read: number; write: number; status: number; timeout: number };
  latency_us: { p50: number; p90: number; p99: number; p999: number; max: number; mean: number };
}

async function wrk(target: Target, connections: number, seconds: number): Promise<{ result: WrkResult; clientTicks: number }> {
  const { stdout, clientTicks } = await runClient(
    'wrk',
    ['-t1', `-c${connections}`, `-d${seconds}s`, '--timeout', '10s', '-s', join(repoRoot, 'bench/wrk-post.lua'), target.url],
    { ...process.env, BENCH_BODY_FILE: bodies.plain, BENCH_HEADERS: target.headers.join('\n') },
    (seconds + 30) * 1000,
  );
  const line = stdout.split('\n').find((candidate) => candidate.startsWith('BENCH_JSON '));
  if (!line) throw new Error(`wrk printed no result: ${stdout.slice(-300)}`);
  return { result: JSON.parse(line.slice('BENCH_JSON '.length)) as WrkResult, clientTicks };
}

export interface StreamResult {
  completed: number;
  errors: number;
  errorSamples: Record<string, number>;
  ttfcMs: { p50: number | null; p90: number | null; p99: number | null; max: number | null; mean: number | null };
  totalMs: { p50: number | null; p99: number | null };
  streamsPerSecond: number;
  elapsedMs: number;
  [extra: string]: unknown;
}

function streamArgs(target: Target, body: string): string[] {
  return ['--import', 'tsx', join(repoRoot, 'bench/stream-client.ts'), '--url', target.url, '--body-file', body, '--chunks', '20', ...target.headers.flatMap((header) => ['--header', header])];
}

async function streamRun(target: Target, mode: string[], seconds: number): Promise<{ result: StreamResult; clientTicks: number }> {
  const ms = options.quick && !process.argv.some((arg) => arg.startsWith('--duration')) ? 1500 : Math.round(seconds * 1000);
  const { stdout, clientTicks } = await runClient(node, [...streamArgs(target, bodies.stream), ...mode, '--duration-ms', String(ms), '--drain-ms', options.quick ? '6000' : '10000'], process.env, (seconds + 40) * 1000);
  const line = stdout.trim().split('\n').pop()!;
  return { result: JSON.parse(line) as StreamResult, clientTicks };
}

async function checkCompletion(target: Target): Promise<string | undefined> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  for (const header of target.headers) {
    const colon = header.indexOf(':');
    headers[header.slice(0, colon).trim()] = header.slice(colon + 1).trim();
  }
  const response = await fetch(target.url, { method: 'POST', headers, body: readFileSync(bodies.plain), signal: AbortSignal.timeout(10_000) });
  const text = await response.text();
  if (response.status !== 200) return `status ${response.status}: ${text.slice(0, 200)}`;
  const body = JSON.parse(text) as { choices?: Array<{ message?: { content?: string } }> };
  if (body.choices?.[0]?.message?.content !== completionText) return `unexpected body ${text.slice(0, 200)}`;
  return undefined;
}

/** Opens idle streams against a target, measures the RSS of its processes, then closes them. */
async function idleMemory(target: Target, count: number): Promise<IdleRecord> {
  const pids = target.pids();
  const parts = target.parts();
  delete parts.redis;
  await sleep(options.quick ? 500 : 1500);
  const before = totalRssBytes(pids);
  const partsBefore = Object.fromEntries(Object.entries(parts).map(([name, list]) => [name, totalRssBytes(list)]));
  const child = spawn(node, [...streamArgs(target, bodies.idle), '--mode', 'idle', '--count', String(count), '--cycle', '40', '--hold-ms', '120000', '--drain-ms', '60000'], {
    cwd: repoRoot,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (data: Buffer) => (stdout += data.toString()));
  child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  const deadline = Date.now() + 90_000;
  while (!/ready \d+/.test(stdout) && Date.now() < deadline && child.exitCode === null) await sleep(50);
  const ready = Number(/ready (\d+)/.exec(stdout)?.[1] ?? 0);
  await sleep(options.quick ? 700 : 1500);
  const after = totalRssBytes(pids);
  const partsAfter = Object.fromEntries(Object.entries(parts).map(([name, list]) => [name, totalRssBytes(list)]));
  child.stdin.write('close\n');
  const killTimer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  await exited;
  clearTimeout(killTimer);
  const lines = stdout.trim().split('\n');
  let summary: Record<string, unknown> = {};
  try {
    summary = JSON.parse(lines[lines.length - 1]!);
  } catch {
    summary = { error: stderr.slice(-300) };
  }
  // Let the gateway notice the closed clients and cancel upstream before the next target.
  await sleep(options.quick ? 500 : 2000);
  return { target: target.name, requested: count, open: ready, rssBefore: before, rssAfter: after, partsBefore, partsAfter, client: summary };
}

async function prepareDatabase(): Promise<void> {
  await dropDatabaseSchema(options.databaseUrl, schema);
}

async function cleanRedis(): Promise<void> {
  await deleteRedisKeys(options.redisUrl, `sbbench-${runId}-*`);
}

function versionOf(command: string, args: string[]): string {
  const result = spawnSync(command, args, { encoding: 'utf8' });
  if (result.error) return 'absent';
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim();
  return output ? output.split('\n')[0]! : 'unknown';
}

function machineDescription(): Record<string, string> {
  let commit: string;
  let dirty = '';
  if (options.switchboardDir === repoRoot) {
    commit = versionOf('git', ['-C', repoRoot, 'rev-parse', '--short', 'HEAD']);
    const status = spawnSync('git', ['-C', repoRoot, 'status', '--porcelain', '--', 'src'], { encoding: 'utf8' }).stdout ?? '';
    if (status.trim()) dirty = ' (with uncommitted changes in src: the working tree as it was during the run)';
  } else {
    commit = `tree ${options.switchboardDir}`;
    try {
      commit += ` (${readFileSync(join(options.switchboardDir, '.bench-commit'), 'utf8').trim()})`;
    } catch {
      // no marker
    }
  }
  let portkeyVersion = 'absent';
  try {
    portkeyVersion = (JSON.parse(readFileSync(join(repoRoot, 'node_modules/@portkey-ai/gateway/package.json'), 'utf8')) as { version: string }).version;
  } catch {
    // not installed
  }
  return {
    cpu: `${cpus()[0]?.model ?? 'unknown'} x ${cpus().length}`,
    memory: `${Math.round(Number(readFileSync('/proc/meminfo', 'utf8').match(/MemTotal:\s+(\d+)/)?.[1] ?? 0) / 1024 / 1024)} GiB`,
    kernel: versionOf('uname', ['-r']),
    node: process.version,
    nginx: versionOf('nginx', ['-v']),
    wrk: versionOf('wrk', ['--version']).split(' [')[0]!,
    redis: versionOf('redis-server', ['--version']),
    portkey: portkeyVersion,
    commit: `${commit}${dirty}`,
    command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
    startedAt: new Date(benchStartedAt).toISOString(),
  };
}

async function main(): Promise<void> {
  if (versionOf('wrk', ['--version']) === 'absent') throw new Error('wrk is not installed (apt-get install -y wrk).');
  const machine = machineDescription();
  const loadBefore = loadavg();
  log(`temp dir ${tmp}; targets ${options.targets.join(', ')}; rounds ${options.rounds} x ${options.durationS} s`);

  const provider = startChild('fast-provider', node, ['--import', 'tsx', 'bench/fast-provider.ts', '--port', '0', '--idle-max-ms', '150000'], { logDir });
  const providerPort = Number((await waitForLog(provider, /listening (\d+)/, 30_000))[1]);
  const context: TargetContext = { tmp, logDir, providerPort, providerPid: provider.pid, redisUrl: options.redisUrl, databaseUrl: options.databaseUrl, runId, switchboardDir: options.switchboardDir };
  writeFileSync(join(tmp, 'catalog.yaml'), switchboardCatalog(providerPort));

  const skipped: Record<string, string> = {};
  const starters: Array<[string, () => Promise<Target>]> = [];
  for (const name of options.targets) {
    if (name === 'direct') starters.push([name, async () => directTarget(context)]);
    else if (name === 'nginx') {
      if (nginxAvailable()) starters.push([name, () => startNginx(context)]);
      else skipped[name] = 'nginx is not installed (apt-get install -y nginx)';
    } else if (name === 'node-proxy') starters.push([name, () => startNodeProxy(context)]);
    else if (name === 'portkey') {
      if (portkeyAvailable()) starters.push([name, () => startPortkey(context)]);
      else skipped[name] = '@portkey-ai/gateway is not installed (npm install)';
    } else if (name === 'embedded') starters.push([name, () => startEmbedded(context)]);
    else if (name === 'embedded-traced') starters.push([name, () => startEmbeddedTraced(context)]);
    else if (name === 'embedded-baseline') {
      if (!options.baselineDir) throw new Error('embedded-baseline needs --baseline-dir');
      starters.push([name, () => startEmbedded({ ...context, switchboardDir: options.baselineDir! }, name)]);
    }
    else if (/^scaled-\d+$/.test(name)) {
      if (!scaledOutAvailable(options.switchboardDir)) skipped[name] = 'src/ingress/ingress-main.ts or src/workers/worker-main.ts is missing';
      else starters.push([name, () => startScaledOut(context, Number(name.slice(7)), schema)]);
    } else throw new Error(`Unknown target ${name}`);
  }
  if (starters.some(([name]) => name.startsWith('scaled-'))) await prepareDatabase();

  const targets: Target[] = [];
  // Everything starts at once (the scaled-out stacks serialize their schema migration themselves).
  const outcomes = await Promise.allSettled(starters.map(([, start]) => start()));
  for (const [index, outcome] of outcomes.entries()) {
    const name = starters[index]![0];
    if (outcome.status === 'fulfilled') targets.push(outcome.value);
    else {
      skipped[name] = `failed to start: ${(outcome.reason as Error).message.split('\n').filter(Boolean).slice(0, 3).join(' ')}`;
      log(`${name}: ${(outcome.reason as Error).message}`);
    }
  }
  targets.sort((a, b) => options.targets.indexOf(a.name) - options.targets.indexOf(b.name));
  for (const [name, reason] of Object.entries(skipped)) log(`skipping ${name}: ${reason}`);
  log(`started ${targets.map((target) => target.name).join(', ')}`);

  for (const target of targets) {
    const problem = await checkCompletion(target);
    if (problem) throw new Error(`${target.name} does not answer a completion correctly: ${problem}`);
  }

  // Warm-up: JIT and connection pools, not recorded.
  const warmS = options.quick ? 1 : 2;
  for (const target of targets) {
    await wrk(target, 32, warmS);
    await streamRun(target, ['--mode', 'closed', '--concurrency', '32'], options.quick ? 0.5 : warmS);
  }
  await sleep(1000);
  await measureIdle(targets);
  log(`warm-up done; idle CPU of all targets together: ${(idleTicks * 5).toFixed(1)} ticks/s`);

  // Idle streams first, on processes that have only been warmed up: after the load runs their heaps
  // have room to spare and new streams would barely move the RSS.
  const idle: IdleRecord[] = [];
  if (options.idle > 0) {
    for (const target of targets) {
      if (target.name === 'direct') continue;
      await settle(targets);
      const record = await idleMemory(target, options.idle);
      idle.push(record);
      log(`idle ${target.name}: ${record.open}/${options.idle} open, RSS ${(record.rssBefore / 2 ** 20).toFixed(0)} -> ${(record.rssAfter / 2 ** 20).toFixed(0)} MiB`);
    }
  }
  const big = targets.find((target) => target.name === 'scaled-4') ?? targets.filter((target) => target.name.startsWith('scaled-')).pop();
  if (options.idleBig > 0 && big) {
    await settle(targets);
    const record = await idleMemory(big, options.idleBig);
    idle.push(record);
    log(`idle ${big.name} x ${options.idleBig}: ${record.open} open, RSS ${(record.rssBefore / 2 ** 20).toFixed(0)} -> ${(record.rssAfter / 2 ** 20).toFixed(0)} MiB`);
  }


  const runs: RunRecord[] = [];
  const scenarios: Array<{ name: string; run: (target: Target) => Promise<{ result: WrkResult | StreamResult; clientTicks: number }> }> = [
    { name: 'c1', run: (target) => wrk(target, 1, options.durationS) },
    { name: 'c32', run: (target) => wrk(target, 32, options.durationS) },
    { name: 'c256', run: (target) => wrk(target, 256, options.durationS) },
    { name: 'stream-rate-low', run: (target) => streamRun(target, ['--mode', 'rate', '--rate', String(options.streamRateLow), '--max-inflight', '3000'], options.durationS) },
    { name: 'stream-rate', run: (target) => streamRun(target, ['--mode', 'rate', '--rate', String(options.streamRate), '--max-inflight', '3000'], options.durationS) },
    { name: 'stream-c256', run: (target) => streamRun(target, ['--mode', 'closed', '--concurrency', '256'], options.durationS) },
  ];
  const chosen = options.scenarios ? scenarios.filter((scenario) => options.scenarios!.includes(scenario.name)) : scenarios;
  for (let round = 0; round < options.rounds; round += 1) {
    for (const scenario of chosen) {
      // Rotate the order each round so that no target always runs first or last.
      const order = targets.map((_, index) => targets[(index + round) % targets.length]!);
      for (const target of order) {
        await settle(targets);
        const measured = await measure(target, provider.pid, () => scenario.run(target));
        runs.push({ round, scenario: scenario.name, target: target.name, ...measured, result: measured.result as never });
        const plain = 'latency_us' in measured.result ? (measured.result as WrkResult) : undefined;
        const streamed = measured.result as StreamResult;
        const summary = plain
          ? `${Math.round((plain.requests / plain.duration_us) * 1e6)} req/s p50 ${plain.latency_us.p50} us p99 ${plain.latency_us.p99} us`
          : `${streamed.streamsPerSecond} streams/s ttfc p50 ${streamed.ttfcMs.p50} ms p99 ${streamed.ttfcMs.p99} ms, errors ${streamed.errors}`;
        log(`round ${round + 1} ${scenario.name.padEnd(11)} ${target.name.padEnd(9)} ${summary}; gateway cpu ${Math.round((measured.gatewayTicks * microsPerTick) / 1000)} ms`);
      }
    }
  }

  const bench: BenchResults = {
    machine,
    options: { ...options, out: undefined } as unknown as Record<string, unknown>,
    loadBefore,
    loadAfter: loadavg(),
    skipped,
    targets: targets.map((target) => ({ name: target.name, label: target.label, notes: target.notes })),
    runs,
    idle,
    redisTracked: redisPids(options.redisUrl).length > 0,
  };
  mkdirSync(options.out, { recursive: true });
  const stamp = new Date(benchStartedAt).toISOString().replace(/[:.]/g, '-');
  const jsonPath = join(options.out, `${stamp}${options.quick ? '-quick' : ''}.json`);
  const mdPath = join(options.out, `${stamp}${options.quick ? '-quick' : ''}.md`);
  writeFileSync(jsonPath, `${JSON.stringify(bench, null, 1)}\n`);
  const markdown = renderReport(bench);
  writeFileSync(mdPath, markdown);
  process.stdout.write(markdown);
  log(`wrote ${jsonPath} and ${mdPath}`);
}

let exiting = false;
async function shutdown(code: number): Promise<void> {
  if (exiting) return;
  exiting = true;
  await stopAllChildren();
  await cleanRedis().catch(() => {});
  if (options.targets.some((name) => name.startsWith('scaled-'))) await prepareDatabase().catch(() => {});
  rmSync(tmp, { recursive: true, force: true });
  process.exit(code);
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    log(`${signal}: stopping`);
    void shutdown(130);
  });
}
process.on('exit', killAllChildrenNow);

main().then(
  () => shutdown(0),
  (error: Error) => {
    log(`failed: ${error.stack ?? error.message}`);
    log(`logs kept in ${logDir}`);
    exiting = true;
    void stopAllChildren().then(() => process.exit(1));
  },
);
