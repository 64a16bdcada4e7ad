import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { forEachSample, loadCpuProfile, monotonicUs, windowOf, type CpuProfile } from './cpu-profile.js';
import { startProfiledEmbedded, startProfiledScaled, type DeploymentContext, type ProfiledDeployment } from './profile-deployments.js';
import { cpuTicks, microsPerTick } from './proc-stats.js';
import { repoRoot, sleep, startChild, stopAllChildren, waitForLog } from './processes.js';
import { breakdownStages, renderStageTable, type StageBreakdown } from './stage-breakdown.js';
import { switchboardCatalog } from './targets.js';

// `npx tsx bench/profile.ts`: runs the gateway under `node --cpu-prof` while wrk (non-streaming) or
// the stream client (20-chunk streams) loads it, then prints, per process, the functions with the
// most self time and the cost per stage (bench/stage-breakdown.ts: µs per request or stream, from
// the requests or streams completed in the load window). The .cpuprofile files are kept in
// bench/results/profiles/ for Chrome DevTools or speedscope.
//
//   --deployment embedded|scaled (default embedded; scaled: ingress + ONE worker on REDIS_URL and
//                          DATABASE_URL, defaults redis://127.0.0.1:6379 and the local PostgreSQL)
//   --seconds S            load per scenario (default 10)
//   --scenario plain|stream|both (default both)
//   --switchboard-dir D    as for the benchmark
//   --top N                rows in the summary (default 25)
//   --rate R               streams per second in the stream scenario (default 300)

const argv = process.argv.slice(2);
const get = (name: string, fallback: string) => {
  const index = argv.findIndex((arg) => arg === `--${name}` || arg.startsWith(`--${name}=`));
  if (index === -1) return fallback;
  return argv[index]!.includes('=') ? argv[index]!.split('=').slice(1).join('=') : argv[index + 1]!;
};
const seconds = Number(get('seconds', '10'));
const scenarios = get('scenario', 'both') === 'both' ? ['plain', 'stream'] : [get('scenario', 'both')];
const switchboardDir = get('switchboard-dir', repoRoot);
const top = Number(get('top', '25'));
const deployment = get('deployment', 'embedded');
if (deployment !== 'embedded' && deployment !== 'scaled') throw new Error('--deployment is embedded or scaled');
const rate = Number(get('rate', '300'));
const node = process.execPath;
const tmp = mkdtempSync(join(tmpdir(), 'switchboard-profile-'));
const logDir = join(tmp, 'logs');
mkdirSync(logDir, { recursive: true });
const outDir = join(repoRoot, 'bench/results/profiles');
mkdirSync(outDir, { recursive: true });

function shortUrl(url: string): string {
  if (!url) return '';
  const clean = url.replace(/^file:\/\//, '');
  const modules = clean.lastIndexOf('/node_modules/');
  if (modules !== -1) return clean.slice(modules + '/node_modules/'.length);
  for (const root of [switchboardDir, repoRoot]) if (clean.startsWith(`${root}/`)) return clean.slice(root.length + 1);
  return clean;
}

function category(url: string, name: string): string {
  if (!url) return name.startsWith('(') ? name : '(native)';
  const short = shortUrl(url);
  if (short.startsWith('node:')) return short.split('/').slice(0, 2).join('/');
  if (url.includes('/node_modules/')) {
    const parts = short.split('/');
    return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
  }
  return short.split('/').slice(0, 2).join('/');
}

/**
 * Self time per function over the samples taken between `fromUs` and `toUs` after the profile
 * started (so that start-up, module compilation and the warm-up are left out).
 */
export function summarize(profile: CpuProfile, rows: number, fromUs = 0, toUs = Infinity): string {
  const self = new Map<number, number>();
  forEachSample(profile, { fromUs, toUs }, (id, micros) => self.set(id, (self.get(id) ?? 0) + micros));
  const byNode = new Map(profile.nodes.map((n) => [n.id, n]));
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const idle = [...self.entries()].filter(([id]) => byNode.get(id)?.callFrame.functionName === '(idle)').reduce((a, [, v]) => a + v, 0);
  const busy = total - idle;
  const functions = new Map<string, number>();
  const categories = new Map<string, number>();
  for (const [id, micros] of self) {
    const frame = byNode.get(id)!.callFrame;
    if (frame.functionName === '(idle)') continue;
    const key = `${frame.functionName || '(anonymous)'} ${shortUrl(frame.url)}${frame.url ? `:${frame.lineNumber + 1}` : ''}`;
    functions.set(key, (functions.get(key) ?? 0) + micros);
    const cat = category(frame.url, frame.functionName);
    categories.set(cat, (categories.get(cat) ?? 0) + micros);
  }
  const pct = (value: number) => `${((value / busy) * 100).toFixed(1)}%`;
  const lines = [`Busy ${(busy / 1000).toFixed(0)} ms of ${(total / 1000).toFixed(0)} ms sampled.`, '', '| self | share of busy | function (file:line) |', '| ---: | ---: | --- |'];
  for (const [key, micros] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, rows)) lines.push(`| ${(micros / 1000).toFixed(0)} ms | ${pct(micros)} | \`${key}\` |`);
  lines.push('', '| self | share of busy | by module |', '| ---: | ---: | --- |');
  for (const [key, micros] of [...categories].sort((a, b) => b[1] - a[1]).slice(0, 15)) lines.push(`| ${(micros / 1000).toFixed(0)} ms | ${pct(micros)} | \`${key}\` |`);
  return lines.join('\n');
}

function runClient(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), (seconds + 60) * 1000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(out.slice(-500)));
    });
  });
}

/** Requests (wrk) or streams (stream client) completed in the load window, from the client's JSON. */
function completedIn(load: string): number {
  const line = load.split('\n').find((text) => text.startsWith('BENCH_JSON ') || text.startsWith('{'));
  if (!line) return 0;
  const figures = JSON.parse(line.replace(/^BENCH_JSON /, '')) as { requests?: number; completed?: number };
  return figures.requests ?? figures.completed ?? 0;
}

async function profileScenario(scenario: string, context: DeploymentContext): Promise<string> {
  const name = `${deployment}-${scenario}`;
  const gateway: ProfiledDeployment = deployment === 'scaled' ? await startProfiledScaled(context, name) : await startProfiledEmbedded(context, name);
  let load: string;
  let loadFrom: number;
  let loadTo: number;
  // CPU time from /proc over the same window, all threads (the profile samples the main thread only).
  const cpuNow = () => gateway.processes.map((child) => cpuTicks(child.pid) ?? 0);
  let cpuFrom: number[] = [];
  let cpuTo: number[] = [];
  try {
    const body = join(tmp, `${scenario}.json`);
    if (scenario === 'plain') {
      writeFileSync(body, JSON.stringify({ model: 'svc/bench', messages: [{ role: 'user', content: 'Say hello.' }] }));
      const env = { ...process.env, BENCH_BODY_FILE: body, BENCH_HEADERS: gateway.headers.join('\n') };
      await runClient('wrk', ['-t1', '-c32', '-d2s', '-s', join(repoRoot, 'bench/wrk-post.lua'), gateway.url], env);
      loadFrom = monotonicUs();
      cpuFrom = cpuNow();
      load = await runClient('wrk', ['-t1', '-c32', `-d${seconds}s`, '-s', join(repoRoot, 'bench/wrk-post.lua'), gateway.url], env);
      load = load.split('\n').find((line) => line.startsWith('BENCH_JSON')) ?? load;
    } else {
      writeFileSync(body, JSON.stringify({ model: 'svc/paced-20-5', stream: true, messages: [{ role: 'user', content: 'Say hello.' }] }));
      const headers = gateway.headers.flatMap((header) => ['--header', header]);
      const args = ['--import', 'tsx', join(repoRoot, 'bench/stream-client.ts'), '--url', gateway.url, '--body-file', body, ...headers, '--chunks', '20'];
      await runClient(node, [...args, '--mode', 'closed', '--concurrency', '64', '--duration-ms', '2000'], process.env);
      loadFrom = monotonicUs();
      cpuFrom = cpuNow();
      load = await runClient(node, [...args, '--mode', 'rate', '--rate', String(rate), '--duration-ms', String(seconds * 1000)], process.env);
    }
    loadTo = monotonicUs();
    cpuTo = cpuNow();
  } finally {
    await gateway.stop();
  }
  const completed = completedIn(load);
  const unit = scenario === 'plain' ? 'request' : 'stream';
  const kept = gateway.keepProfiles(outDir, name);
  const tops: string[] = [];
  const again: string[] = [];
  const stages: Array<{ label: string; breakdown: StageBreakdown }> = [];
  for (const [child, file] of kept) {
    const profile: CpuProfile = loadCpuProfile(file);
    // Both clocks are the monotonic one: the window is exactly the load's (the client's own start-up,
    // ~0.3 s, is inside it and costs the gateway nothing).
    const window = windowOf(profile, loadFrom, loadTo);
    tops.push(`##### ${child.label} (profile ${file.slice(repoRoot.length + 1)})\n\n${summarize(profile, top, window.fromUs, window.toUs)}\n`);
    stages.push({ label: child.label, breakdown: breakdownStages(profile, child.role, completed, window) });
    const ms = (us: number) => (us / 1000).toFixed(1);
    again.push(`npx tsx bench/stage-breakdown.ts ${file.slice(repoRoot.length + 1)} --role ${child.role} --requests ${completed} --from-ms ${ms(window.fromUs)} --to-ms ${ms(window.toUs)}`);
  }
  const procCpu = `CPU from /proc over the same window (all threads, µs per ${unit}): ${gateway.processes
    .map((child, index) => `${child.label} ${(((cpuTo[index]! - cpuFrom[index]!) * microsPerTick) / Math.max(1, completed)).toFixed(0)}`)
    .join(', ')}.`;
  const title = scenario === 'plain' ? 'Non-streaming, wrk c=32' : `20-chunk streams at ${rate}/s`;
  return `#### ${deployment}: ${title} (${seconds} s)\n\nLoad: \`${load.trim().slice(0, 400)}\`\n\nCost per stage (µs per ${unit}: ${completed} ${unit}s completed in the window):\n\n${renderStageTable(stages, unit)}\n\n${procCpu}\n\nThe same from the kept profiles (add \`--explain STAGE\` to see what a stage holds):\n\n${again.map((line) => `    ${line}`).join('\n')}\n\n${tops.join('\n')}`;
}

async function main(): Promise<void> {
  const provider = startChild('fast-provider', node, ['--import', 'tsx', 'bench/fast-provider.ts', '--port', '0'], { logDir });
  const providerPort = Number((await waitForLog(provider, /listening (\d+)/, 30_000))[1]);
  writeFileSync(join(tmp, 'catalog.yaml'), switchboardCatalog(providerPort));
  const context: DeploymentContext = { tmp, logDir, switchboardDir, providerPort, providerPid: provider.pid };
  const sections: string[] = [];
  for (const scenario of scenarios) {
    process.stderr.write(`[profile] ${deployment} ${scenario}...\n`);
    sections.push(await profileScenario(scenario, context));
    await sleep(500);
  }
  process.stdout.write(`${sections.join('\n')}\n`);
}

main()
  .catch((error: Error) => {
    process.stderr.write(`profile failed: ${error.stack}\nlogs in ${logDir}\n`);
    process.exitCode = 1;
  })
  .finally(() => stopAllChildren());
