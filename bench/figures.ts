import { microsPerTick } from './proc-stats.js';

// A run's raw records and the per-target, per-scenario figures computed from them (summed over
// rounds, latency percentiles as the median over rounds), shared by the report and the verdicts.

/** One load run's result with the CPU ticks of every process involved, over its wall time. */
export interface Measured<T> {
  result: T;
  gatewayTicks: number;
  partTicks: Record<string, number>;
  providerTicks: number;
  clientTicks: number;
  machineBusyTicks: number;
  machineTotalTicks: number;
  wallMs: number;
}

export interface RunRecord extends Measured<WrkLike | StreamLike> {
  round: number;
  scenario: string;
  target: string;
}

export interface WrkLike {
  requests: number;
  duration_us: number;
  errors: { connect: number; read: number; write: number; status: number; timeout: number };
  latency_us: { p50: number; p90: number; p99: number; p999: number; max: number; mean: number };
}

export interface StreamLike {
  completed: number;
  errors: number;
  errorSamples: Record<string, number>;
  ttfcMs: { p50: number | null; p99: number | null };
  streamsPerSecond: number;
  elapsedMs: number;
  [extra: string]: unknown;
}

export interface IdleRecord {
  target: string;
  requested: number;
  open: number;
  rssBefore: number;
  rssAfter: number;
  partsBefore: Record<string, number>;
  partsAfter: Record<string, number>;
  client: Record<string, unknown>;
}

export interface BenchResults {
  machine: Record<string, string>;
  options: Record<string, unknown>;
  loadBefore: number[];
  loadAfter: number[];
  skipped: Record<string, string>;
  targets: Array<{ name: string; label: string; notes: string[] }>;
  runs: RunRecord[];
  idle: IdleRecord[];
  redisTracked: boolean;
}

export const isWrk = (result: WrkLike | StreamLike): result is WrkLike => 'latency_us' in result;

export function median(values: number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

export interface PlainFigures {
  p50Ms: number;
  p99Ms: number;
  rps: number;
  cpuUsPerRequest: number;
  parts: Record<string, number>;
  errors: number;
  requests: number;
}

export function plainFigures(runs: RunRecord[], target: string, scenario: string): PlainFigures | undefined {
  const mine = runs.filter((run) => run.target === target && run.scenario === scenario && isWrk(run.result));
  if (mine.length === 0) return undefined;
  const results = mine.map((run) => run.result as WrkLike);
  const requests = results.reduce((sum, result) => sum + result.requests, 0);
  const durationUs = results.reduce((sum, result) => sum + result.duration_us, 0);
  const ticks = mine.reduce((sum, run) => sum + run.gatewayTicks, 0);
  const parts: Record<string, number> = {};
  for (const run of mine) for (const [name, value] of Object.entries(run.partTicks)) parts[name] = (parts[name] ?? 0) + value;
  for (const name of Object.keys(parts)) parts[name] = (parts[name]! * microsPerTick) / requests;
  return {
    p50Ms: median(results.map((result) => result.latency_us.p50)) / 1000,
    p99Ms: median(results.map((result) => result.latency_us.p99)) / 1000,
    rps: (requests / durationUs) * 1e6,
    cpuUsPerRequest: (ticks * microsPerTick) / requests,
    parts,
    errors: results.reduce((sum, result) => sum + result.errors.connect + result.errors.read + result.errors.write + result.errors.status + result.errors.timeout, 0),
    requests,
  };
}

export interface StreamFigures {
  ttfcP50: number;
  ttfcP99: number;
  streamsPerSecond: number;
  cpuUsPerStream: number;
  parts: Record<string, number>;
  completed: number;
  errors: number;
  errorSamples: Record<string, number>;
}

export function streamFigures(runs: RunRecord[], target: string, scenario: string): StreamFigures | undefined {
  const mine = runs.filter((run) => run.target === target && run.scenario === scenario && !isWrk(run.result));
  if (mine.length === 0) return undefined;
  const results = mine.map((run) => run.result as StreamLike);
  const completed = results.reduce((sum, result) => sum + result.completed, 0);
  const elapsed = results.reduce((sum, result) => sum + result.elapsedMs, 0);
  const ticks = mine.reduce((sum, run) => sum + run.gatewayTicks, 0);
  const parts: Record<string, number> = {};
  for (const run of mine) for (const [name, value] of Object.entries(run.partTicks)) parts[name] = (parts[name] ?? 0) + value;
  for (const name of Object.keys(parts)) parts[name] = (parts[name]! * microsPerTick) / completed;
  const errorSamples: Record<string, number> = {};
  for (const result of results) for (const [text, count] of Object.entries(result.errorSamples)) errorSamples[text] = (errorSamples[text] ?? 0) + count;
  return {
    ttfcP50: median(results.map((result) => result.ttfcMs.p50 ?? NaN)),
    ttfcP99: median(results.map((result) => result.ttfcMs.p99 ?? NaN)),
    streamsPerSecond: (completed / elapsed) * 1000,
    cpuUsPerStream: (ticks * microsPerTick) / completed,
    parts,
    completed,
    errors: results.reduce((sum, result) => sum + result.errors, 0),
    errorSamples,
  };
}

