import { readFileSync } from 'node:fs';

// Before/after tables of two `bench/redis-per-job.ts` runs written with BENCH_JSON (the tables of
// BENCHMARKS.md, "Redis per job (issue 12)").
// Run: npx tsx bench/redis-per-job-compare.ts <before.json> <after.json>

interface Stat {
  calls: number;
  usec: number;
}
interface Phase {
  jobs: number;
  stats: Record<string, Stat>;
  reads?: number;
}
interface Monitor {
  topLevel: Record<string, number>;
  inLua: Record<string, number>;
  scripts: Record<string, number>;
  jobs: number;
}
interface Run {
  plain: Phase;
  stream: Phase;
  plainMonitor: Monitor;
  streamMonitor: Monitor;
}

const [before, after] = process.argv.slice(2).map((path) => JSON.parse(readFileSync(path, 'utf8')) as Run);
if (!before || !after) throw new Error('usage: npx tsx bench/redis-per-job-compare.ts <before.json> <after.json>');

const perJob = (run: Run, phase: 'plain' | 'stream', command: string) => (run[phase].stats[command]?.calls ?? 0) / run[phase].jobs;

for (const phase of ['plain', 'stream'] as const) {
  const monitorOf = (run: Run) => (phase === 'plain' ? run.plainMonitor : run.streamMonitor);
  const cell = (run: Run, command: string) => {
    const monitor = monitorOf(run);
    const base = command.split('|')[0]!;
    const top = (monitor.topLevel[base] ?? 0) / monitor.jobs;
    const lua = (monitor.inLua[base] ?? 0) / monitor.jobs;
    return `${perJob(run, phase, command).toFixed(2)} (${top.toFixed(2)} + ${lua.toFixed(2)})`;
  };
  console.log(`\n${phase === 'plain' ? 'non-streaming' : 'stream'}\n| command | before: calls/job (top-level + in Lua) | after |\n|---|---:|---:|`);
  const commands = new Set([...Object.keys(before[phase].stats), ...Object.keys(after[phase].stats)]);
  for (const command of [...commands].sort((a, b) => perJob(after, phase, b) - perJob(after, phase, a))) {
    if (perJob(before, phase, command) < 0.05 && perJob(after, phase, command) < 0.05) continue;
    console.log(`| ${command} | ${cell(before, command)} | ${cell(after, command)} |`);
  }
  const total = (run: Run) => Object.values(run[phase].stats).reduce((sum, s) => sum + s.calls, 0) / run[phase].jobs;
  const topLevel = (run: Run) => Object.values(monitorOf(run).topLevel).reduce((sum, c) => sum + c, 0) / monitorOf(run).jobs;
  const scripts = (run: Run) => Object.entries(monitorOf(run).scripts).map(([name, count]) => `${name.replace(/^(bullmq|counters) /, '')} ${(count / monitorOf(run).jobs).toFixed(2)}`).join(', ');
  const reads = (run: Run) => (run[phase].reads === undefined ? 'n/a' : (run[phase].reads! / run[phase].jobs).toFixed(2));
  console.log(`| **all commands** | ${total(before).toFixed(2)} | ${total(after).toFixed(2)} |`);
  console.log(`| **top-level commands** | ${topLevel(before).toFixed(2)} | ${topLevel(after).toFixed(2)} |`);
  console.log(`| scripts | ${scripts(before)} | ${scripts(after)} |`);
  console.log(`| **redis-server socket reads (round trips)** | ${reads(before)} | ${reads(after)} |`);
}
