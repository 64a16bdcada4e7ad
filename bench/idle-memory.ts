import { spawn } from 'node:child_process';
import type { IdleRecord } from './figures.js';
import { totalRssBytes } from './proc-stats.js';
import { repoRoot, sleep } from './processes.js';
import type { Target } from './targets.js';

// The memory figure: RSS of a target's processes (each part apart, Redis left out) before and
// while a load client holds `count` streams open on the idle model.

/** Opens idle streams against a target, measures the RSS of its processes, then closes them. */
export async function idleMemory(target: Target, count: number, clientArgs: string[], quick: boolean): Promise<IdleRecord> {
  const pids = target.pids();
  const parts = target.parts();
  delete parts.redis;
  await sleep(quick ? 500 : 1500);
  const before = totalRssBytes(pids);
  const partsBefore = Object.fromEntries(Object.entries(parts).map(([name, list]) => [name, totalRssBytes(list)]));
  const child = spawn(process.execPath, [...clientArgs, '--mode', 'idle', '--count', String(count), '--cycle', '40', '--hold-ms', '120000', '--drain-ms', '60000'], {
    cwd: repoRoot,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (data: Buffer) => (stdout += data.toString()));
  child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  // The client's own bound on opening them is 60 s + 2 ms per stream (--drain-ms 60000).
  const deadline = Date.now() + 90_000 + count * 2;
  while (!/ready \d+/.test(stdout) && Date.now() < deadline && child.exitCode === null) await sleep(50);
  const ready = Number(/ready (\d+)/.exec(stdout)?.[1] ?? 0);
  await sleep(quick ? 700 : 1500);
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
  await sleep(quick ? 500 : 2000);
  return { target: target.name, requested: count, open: ready, rssBefore: before, rssAfter: after, partsBefore, partsAfter, client: summary };
}
