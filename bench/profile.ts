import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, repoRoot, sleep, startChild, stopAllChildren, waitForHttp, waitForLog } from './processes.js';
import { adminToken, chatPath, switchboardCatalog } from './targets.js';

// `npm run bench -- --profile` (or tsx bench/profile.ts): runs the embedded gateway under
// `node --cpu-prof` while wrk (non-streaming) or the stream client (20-chunk streams) loads it,
// then prints the functions with the most self time. The .cpuprofile files are kept in
// bench/results/profiles/ for Chrome DevTools or speedscope.
//
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
const rate = Number(get('rate', '300'));
const node = process.execPath;
const tmp = mkdtempSync(join(tmpdir(), 'switchboard-profile-'));
const logDir = join(tmp, 'logs');
mkdirSync(logDir, { recursive: true });
const outDir = join(repoRoot, 'bench/results/profiles');
mkdirSync(outDir, { recursive: true });

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

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
  let at = 0;
  for (let i = 0; i < profile.samples.length; i += 1) {
    at += profile.timeDeltas[i] ?? 0;
    if (at < fromUs || at > toUs) continue;
    self.set(profile.samples[i]!, (self.get(profile.samples[i]!) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
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

async function profileScenario(scenario: string, providerPort: number): Promise<string> {
  const port = await freePort();
  const dataDir = join(tmp, `data-${scenario}`);
  const profileDir = join(tmp, `prof-${scenario}`);
  mkdirSync(dataDir, { recursive: true });
  const gateway = startChild(`embedded-${scenario}`, node, ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, '--import', 'tsx', 'src/main.ts'], {
    logDir,
    cwd: switchboardDir,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      SWITCHBOARD_CATALOG: join(tmp, 'catalog.yaml'),
      SWITCHBOARD_DATA_DIR: dataDir,
      SWITCHBOARD_ADMIN_TOKEN: adminToken,
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
      SWITCHBOARD_DRAIN_DEADLINE_MS: '2000',
      NODE_ENV: 'production',
    },
  });
  const spawnedAt = performance.now();
  const base = `http://127.0.0.1:${port}`;
  await waitForHttp(`${base}/healthz`, 30_000, gateway);
  const created = await fetch(`${base}/admin/v1/keys`, { method: 'POST', headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' }, body: '{"name":"profile"}' });
  const { key } = (await created.json()) as { key: string };
  const body = join(tmp, `${scenario}.json`);
  const url = `${base}${chatPath}`;
  let load: string;
  let loadFrom = 0;
  if (scenario === 'plain') {
    writeFileSync(body, JSON.stringify({ model: 'svc/bench', messages: [{ role: 'user', content: 'Say hello.' }] }));
    const env = { ...process.env, BENCH_BODY_FILE: body, BENCH_HEADERS: `authorization: Bearer ${key}` };
    await runClient('wrk', ['-t1', '-c32', '-d2s', '-s', join(repoRoot, 'bench/wrk-post.lua'), url], env);
    loadFrom = performance.now();
    load = await runClient('wrk', ['-t1', '-c32', `-d${seconds}s`, '-s', join(repoRoot, 'bench/wrk-post.lua'), url], env);
    load = load.split('\n').find((line) => line.startsWith('BENCH_JSON')) ?? load;
  } else {
    writeFileSync(body, JSON.stringify({ model: 'svc/paced-20-5', stream: true, messages: [{ role: 'user', content: 'Say hello.' }] }));
    const args = ['--import', 'tsx', join(repoRoot, 'bench/stream-client.ts'), '--url', url, '--body-file', body, '--header', `authorization: Bearer ${key}`, '--chunks', '20'];
    await runClient(node, [...args, '--mode', 'closed', '--concurrency', '64', '--duration-ms', '2000'], process.env);
    loadFrom = performance.now();
    load = await runClient(node, [...args, '--mode', 'rate', '--rate', String(rate), '--duration-ms', String(seconds * 1000)], process.env);
  }
  const loadTo = performance.now();
  await gateway.stop(10_000);
  const file = readdirSync(profileDir).find((name) => name.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no profile written:\n${gateway.logTail()}`);
  const kept = join(outDir, `embedded-${scenario}.cpuprofile`);
  copyFileSync(join(profileDir, file), kept);
  const profile = JSON.parse(readFileSync(kept, 'utf8')) as CpuProfile;
  // The profile clock starts with the process, a few ms after the spawn: count the load window only
  // (the client process's own start-up, ~0.3 s, is inside the window and costs the gateway nothing).
  const fromUs = (loadFrom - spawnedAt) * 1000;
  const toUs = (loadTo - spawnedAt) * 1000;
  return `#### ${scenario === 'plain' ? 'Non-streaming, wrk c=32' : `20-chunk streams at ${rate}/s`} (${seconds} s; profile ${kept.slice(repoRoot.length + 1)})\n\nLoad: \`${load.trim().slice(0, 400)}\`\n\n${summarize(profile, top, fromUs, toUs)}\n`;
}

async function main(): Promise<void> {
  const provider = startChild('fast-provider', node, ['--import', 'tsx', 'bench/fast-provider.ts', '--port', '0'], { logDir });
  const providerPort = Number((await waitForLog(provider, /listening (\d+)/, 30_000))[1]);
  writeFileSync(join(tmp, 'catalog.yaml'), switchboardCatalog(providerPort));
  const sections: string[] = [];
  for (const scenario of scenarios) {
    process.stderr.write(`[profile] ${scenario}...\n`);
    sections.push(await profileScenario(scenario, providerPort));
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
