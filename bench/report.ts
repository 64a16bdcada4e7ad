import { microsPerTick } from './proc-stats.js';

// Turns a run's measurements into the Markdown tables of BENCHMARKS.md. Every figure is computed
// from this run alone: added latency and throughput ratios are against the provider measured
// directly in the same run, interleaved with the others.

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

interface WrkLike {
  requests: number;
  duration_us: number;
  errors: { connect: number; read: number; write: number; status: number; timeout: number };
  latency_us: { p50: number; p90: number; p99: number; p999: number; max: number; mean: number };
}

interface StreamLike {
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

const isWrk = (result: WrkLike | StreamLike): result is WrkLike => 'latency_us' in result;

function median(values: number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

const fmt = (value: number, digits = 2) => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');
const signed = (value: number, digits = 2) => (Number.isFinite(value) ? `${value >= 0 ? '+' : ''}${value.toFixed(digits)}` : 'n/a');
const int = (value: number) => (Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : 'n/a');
const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(0);

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

function table(header: string[], rows: string[][]): string {
  return [`| ${header.join(' | ')} |`, `| ${header.map((cell, index) => (index === 0 ? '---' : '---:')).join(' | ')} |`, ...rows.map((row) => `| ${row.join(' | ')} |`)].join('\n');
}

export interface Verdict {
  what: string;
  target: string;
  measured: string;
  met: boolean | undefined;
}

export function verdicts(bench: BenchResults): Verdict[] {
  const { runs } = bench;
  const list: Verdict[] = [];
  const check = (what: string, target: string, value: number, limit: number, unit: string, atMost = true, digits = 2) => {
    const ok = Number.isFinite(value) ? (atMost ? value <= limit : value >= limit) : undefined;
    list.push({ what, target, measured: Number.isFinite(value) ? `${value.toFixed(digits)}${unit}` : 'not measured', met: ok });
  };
  const direct = {
    c1: plainFigures(runs, 'direct', 'c1'),
    rate: streamFigures(runs, 'direct', 'stream-rate'),
    low: streamFigures(runs, 'direct', 'stream-rate-low'),
  };
  const embedded = {
    c1: plainFigures(runs, 'embedded', 'c1'),
    c32: plainFigures(runs, 'embedded', 'c32'),
    rate: streamFigures(runs, 'embedded', 'stream-rate'),
    low: streamFigures(runs, 'embedded', 'stream-rate-low'),
  };
  const portkey32 = plainFigures(runs, 'portkey', 'c32');
  if (embedded.c32) {
    check('Embedded: CPU per non-streaming request (c=32)', '<= 100 us', embedded.c32.cpuUsPerRequest, 100, ' us', true, 0);
    if (portkey32) check('Embedded: CPU per request, Portkey / Switchboard (c=32)', '>= 10x', portkey32.cpuUsPerRequest / embedded.c32.cpuUsPerRequest, 10, 'x', false, 1);
  }
  if (embedded.c1 && direct.c1) {
    check('Embedded: added p50 latency at c=1', '<= 0.2 ms', embedded.c1.p50Ms - direct.c1.p50Ms, 0.2, ' ms', true, 3);
    check('Embedded: added p99 latency at c=1', '<= 1 ms', embedded.c1.p99Ms - direct.c1.p99Ms, 1, ' ms', true, 3);
  }
  if (embedded.low && direct.low) {
    check(`Embedded: added time to first content, p50, at ${bench.options.streamRateLow} streams/s`, '<= 0.3 ms', embedded.low.ttfcP50 - direct.low.ttfcP50, 0.3, ' ms', true, 3);
  }
  if (embedded.rate && direct.rate) {
    check(`Embedded: added time to first content, p50, at ${bench.options.streamRate} streams/s`, '<= 0.3 ms', embedded.rate.ttfcP50 - direct.rate.ttfcP50, 0.3, ' ms', true, 3);
    check(`Embedded: CPU per 20-chunk stream at ${bench.options.streamRate} streams/s`, '<= 400 us', embedded.rate.cpuUsPerStream, 400, ' us', true, 0);
  }
  const scaledNames = [...new Set(runs.map((run) => run.target).filter((name) => name.startsWith('scaled-')))];
  for (const name of scaledNames) {
    const rate = streamFigures(runs, name, 'stream-rate');
    const closed = streamFigures(runs, name, 'stream-c256');
    if (rate && direct.rate) {
      check(`${name}: added time to first content p50 at ${bench.options.streamRate}/s`, '<= 2 ms', rate.ttfcP50 - direct.rate.ttfcP50, 2, ' ms', true, 3);
      check(`${name}: added time to first content p99 at ${bench.options.streamRate}/s`, '<= 10 ms', rate.ttfcP99 - direct.rate.ttfcP99, 10, ' ms', true, 3);
      check(`${name}: CPU per 20-chunk stream, ingress + workers`, '<= 600 us', rate.cpuUsPerStream, 600, ' us', true, 0);
      if (rate.parts.redis !== undefined) check(`${name}: CPU per stream, ingress + workers + Redis`, '<= 600 us', rate.cpuUsPerStream + rate.parts.redis, 600, ' us', true, 0);
    }
    if (closed) check(`${name}: streams per second (c=256)`, '>= 1,500/s', closed.streamsPerSecond, 1500, '/s', false, 0);
  }
  const bigIdle = bench.idle.filter((record) => record.target.startsWith('scaled-')).sort((a, b) => b.open - a.open)[0];
  if (bigIdle && bigIdle.open >= 9_900) {
    check(`${bigIdle.target}: ingress RSS with ${bigIdle.open.toLocaleString('en-US')} open idle streams`, '< 500 MB', (bigIdle.partsAfter.ingress ?? NaN) / 1e6, 500, ' MB', true, 0);
  } else if (bigIdle && bigIdle.open > 0) {
    const before = bigIdle.partsBefore.ingress ?? NaN;
    const extrapolated = before + (((bigIdle.partsAfter.ingress ?? NaN) - before) / bigIdle.open) * 10_000;
    const ok = extrapolated / 1e6 < 500;
    list.push({ what: `${bigIdle.target}: ingress RSS with 10,000 open idle streams`, target: '< 500 MB', measured: `${(extrapolated / 1e6).toFixed(0)} MB extrapolated from ${bigIdle.open.toLocaleString('en-US')} streams`, met: ok });
  }
  return list;
}

export function renderReport(bench: BenchResults): string {
  const { runs } = bench;
  const names = bench.targets.map((target) => target.name);
  const label = (name: string) => bench.targets.find((target) => target.name === name)?.label ?? name;
  const out: string[] = [];
  out.push(`## Run of ${bench.machine.startedAt}`, '');
  out.push(`- Command: \`${bench.machine.command}\` (rounds: ${bench.options.rounds}, ${bench.options.quick && bench.options.durationS === 1 ? "1 s per wrk run, 1.5 s per stream run" : `${bench.options.durationS} s per load run`}, targets interleaved)`);
  out.push(`- Machine: ${bench.machine.cpu}, ${bench.machine.memory}, Linux ${bench.machine.kernel}; Node ${bench.machine.node}; ${bench.machine.nginx}; ${bench.machine.wrk}; Portkey ${bench.machine.portkey}; ${bench.machine.redis}`);
  out.push(`- Switchboard commit ${bench.machine.commit}`);
  out.push(`- Load average before / after: ${bench.loadBefore.map((value) => value.toFixed(2)).join(' ')} / ${bench.loadAfter.map((value) => value.toFixed(2)).join(' ')}`);
  for (const [name, reason] of Object.entries(bench.skipped)) out.push(`- Skipped ${name}: ${reason}`);
  for (const target of bench.targets) for (const note of target.notes) out.push(`- ${target.name}: ${note}`);
  out.push('');

  out.push('### Targets', '');
  out.push(table(['Goal', 'Target', 'Measured', ''], verdicts(bench).map((verdict) => [verdict.what, verdict.target, verdict.measured, verdict.met === undefined ? '?' : verdict.met ? 'met' : '**missed**'])));
  out.push('');

  out.push('### Non-streaming completions (wrk, 1 thread)', '');
  out.push('Latency is the median over rounds of each run\'s percentile; "added" is the difference to the provider measured directly. CPU is utime+stime of the gateway\'s processes over the run, divided by the requests served.', '');
  const plainRows: string[][] = [];
  for (const scenario of ['c1', 'c32', 'c256']) {
    const base = plainFigures(runs, 'direct', scenario);
    for (const name of names) {
      const figures = plainFigures(runs, name, scenario);
      if (!figures) continue;
      plainRows.push([
        `${scenario.slice(1)}`,
        label(name),
        fmt(figures.p50Ms, 3),
        fmt(figures.p99Ms, 3),
        name === 'direct' || !base ? '' : signed(figures.p50Ms - base.p50Ms, 3),
        name === 'direct' || !base ? '' : signed(figures.p99Ms - base.p99Ms, 3),
        int(figures.rps),
        base ? fmt(figures.rps / base.rps, 2) : 'n/a',
        name === 'direct' ? '' : int(figures.cpuUsPerRequest),
        String(figures.errors),
      ]);
    }
  }
  out.push(table(['c', 'target', 'p50 ms', 'p99 ms', 'added p50 ms', 'added p99 ms', 'req/s', 'x direct', 'CPU us/req', 'errors'], plainRows));
  out.push('');

  out.push(`### Streams of 20 content chunks, 5 ms apart (bench/stream-client.ts)`, '');
  out.push(`Time to first content (TTFC) runs from writing the request to the first non-empty content delta. Open loop: new streams arrive at a fixed rate (${bench.options.streamRateLow}/s, light, and ${bench.options.streamRate}/s); closed loop: 256 streams in flight back to back, for streams per second. Every stream's framing and content are checked; a stream that fails a check counts as an error. CPU is per completed stream.`, '');
  const ttfcRows: string[][] = [];
  const throughputRows: string[][] = [];
  const baseLow = streamFigures(runs, 'direct', 'stream-rate-low');
  const baseRate = streamFigures(runs, 'direct', 'stream-rate');
  const baseClosed = streamFigures(runs, 'direct', 'stream-c256');
  const added = (name: string, figures: StreamFigures | undefined, base: StreamFigures | undefined, which: 'ttfcP50' | 'ttfcP99') =>
    name === 'direct' || !figures || !base ? '' : signed(figures[which] - base[which], 3);
  for (const name of names) {
    const low = streamFigures(runs, name, 'stream-rate-low');
    const rate = streamFigures(runs, name, 'stream-rate');
    const closed = streamFigures(runs, name, 'stream-c256');
    if (!low && !rate && !closed) continue;
    ttfcRows.push([
      label(name),
      low ? fmt(low.ttfcP50, 3) : 'n/a',
      low ? fmt(low.ttfcP99, 3) : 'n/a',
      added(name, low, baseLow, 'ttfcP50'),
      added(name, low, baseLow, 'ttfcP99'),
      rate ? fmt(rate.ttfcP50, 3) : 'n/a',
      rate ? fmt(rate.ttfcP99, 3) : 'n/a',
      added(name, rate, baseRate, 'ttfcP50'),
      added(name, rate, baseRate, 'ttfcP99'),
    ]);
    throughputRows.push([
      label(name),
      low && name !== 'direct' ? int(low.cpuUsPerStream) : '',
      rate ? int(rate.streamsPerSecond) : 'n/a',
      rate && name !== 'direct' ? int(rate.cpuUsPerStream) : '',
      closed ? int(closed.streamsPerSecond) : 'n/a',
      closed && baseClosed ? fmt(closed.streamsPerSecond / baseClosed.streamsPerSecond, 2) : 'n/a',
      closed && name !== 'direct' ? int(closed.cpuUsPerStream) : '',
      String((low?.errors ?? 0) + (rate?.errors ?? 0) + (closed?.errors ?? 0)),
    ]);
  }
  const lowRate = bench.options.streamRateLow;
  const highRate = bench.options.streamRate;
  out.push(table(['target', `TTFC p50 ms @${lowRate}/s`, `p99 ms @${lowRate}/s`, 'added p50', 'added p99', `TTFC p50 ms @${highRate}/s`, `p99 ms @${highRate}/s`, 'added p50', 'added p99'], ttfcRows));
  out.push('');
  out.push(table(['target', `CPU us/stream @${lowRate}/s`, `streams/s done @${highRate}/s`, `CPU us/stream @${highRate}/s`, 'streams/s c=256', 'x direct', 'CPU us/stream c=256', 'errors'], throughputRows));
  const errorNotes: string[] = [];
  for (const name of names) {
    for (const scenario of ['stream-rate-low', 'stream-rate', 'stream-c256']) {
      const figures = streamFigures(runs, name, scenario);
      if (figures && figures.errors > 0) errorNotes.push(`- ${name} ${scenario}: ${Object.entries(figures.errorSamples).map(([text, count]) => `${count} x ${text}`).join('; ')}`);
    }
  }
  if (errorNotes.length > 0) out.push('', 'Stream errors:', ...errorNotes);
  out.push('');

  const scaled = names.filter((name) => name.startsWith('scaled-'));
  if (scaled.length > 0) {
    out.push('### Scaled out: growth with worker processes', '');
    out.push('CPU is split by process group; Redis is the shared instance on this machine (its CPU includes any other client it served during the run).', '');
    const rows: string[][] = [];
    for (const name of scaled) {
      // Growth is read against the 1-worker stack of the same queue, or the smallest one measured.
      const family = name.replace(/\d+$/, '');
      const first = scaled.find((other) => other.startsWith(family) && /^\d+$/.test(other.slice(family.length)))!;
      const firstPlain = plainFigures(runs, first, 'c256');
      const firstStream = streamFigures(runs, first, 'stream-c256');
      const plain = plainFigures(runs, name, 'c256');
      const stream = streamFigures(runs, name, 'stream-c256');
      const rate = streamFigures(runs, name, 'stream-rate');
      rows.push([
        label(name),
        plain ? int(plain.rps) : 'n/a',
        plain && firstPlain ? fmt(plain.rps / firstPlain.rps, 2) : 'n/a',
        plain ? `${int(plain.parts.ingress ?? NaN)} / ${int(plain.parts.workers ?? NaN)} / ${int(plain.parts.redis ?? NaN)}` : 'n/a',
        stream ? int(stream.streamsPerSecond) : 'n/a',
        stream && firstStream ? fmt(stream.streamsPerSecond / firstStream.streamsPerSecond, 2) : 'n/a',
        rate ? `${int(rate.parts.ingress ?? NaN)} / ${int(rate.parts.workers ?? NaN)} / ${int(rate.parts.redis ?? NaN)}` : 'n/a',
      ]);
    }
    out.push(table(['stack', 'req/s c=256', 'x 1 worker', 'CPU us/req ingress / workers / redis', 'streams/s c=256', 'x 1 worker', `CPU us/stream at ${bench.options.streamRate}/s ingress / workers / redis`], rows));
    out.push('');
  }

  if (bench.idle.length > 0) {
    out.push('### Memory of open idle streams', '');
    out.push('RSS of the gateway\'s processes before opening the streams and once every stream has delivered its first content and the provider has gone quiet; the difference is scaled to 1,000 streams.', '');
    const rows = bench.idle.map((record) => {
      const perThousand = record.open > 0 ? ((record.rssAfter - record.rssBefore) / record.open) * 1000 : NaN;
      const parts = Object.keys(record.partsAfter).length > 1 ? Object.keys(record.partsAfter).map((part) => `${part} ${mib(record.partsBefore[part] ?? 0)} -> ${mib(record.partsAfter[part] ?? 0)}`).join('; ') : '';
      return [label(record.target), `${record.open.toLocaleString('en-US')} / ${record.requested.toLocaleString('en-US')}`, mib(record.rssBefore), mib(record.rssAfter), fmt(perThousand / 2 ** 20, 1), parts];
    });
    out.push(table(['target', 'open / asked', 'RSS before MiB', 'RSS with streams MiB', 'MiB per 1,000 streams', 'by process (MiB)'], rows));
    out.push('');
  }

  out.push('### Every run', '');
  out.push('"Other load" is the machine\'s busy CPU during the run not accounted for by the gateway, the provider and the load client: other work on the machine (shared with other engineers\' test runs) that may have disturbed the figure.', '');
  const rows = runs.map((run) => {
    const seconds = run.wallMs / 1000;
    const busy = run.machineBusyTicks / run.machineTotalTicks;
    const ours = run.gatewayTicks + run.providerTicks + run.clientTicks + (run.partTicks.redis ?? 0);
    const other = Math.max(0, (run.machineBusyTicks - ours) / run.machineTotalTicks);
    const summary = isWrk(run.result)
      ? `${int((run.result.requests / run.result.duration_us) * 1e6)} req/s, p50 ${fmt(run.result.latency_us.p50 / 1000, 3)} ms, p99 ${fmt(run.result.latency_us.p99 / 1000, 3)} ms`
      : `${fmt(run.result.streamsPerSecond, 0)} streams/s, TTFC p50 ${fmt(run.result.ttfcMs.p50 ?? NaN, 3)} ms, p99 ${fmt(run.result.ttfcMs.p99 ?? NaN, 3)} ms, ${run.result.errors} errors`;
    return [String(run.round + 1), run.scenario, run.target, summary, `${fmt((run.gatewayTicks / 100 / seconds) * 100, 0)}%`, `${fmt((run.providerTicks / 100 / seconds) * 100, 0)}%`, `${fmt(busy * 100, 0)}%`, `${fmt(other * 100, 0)}%`];
  });
  out.push(table(['round', 'scenario', 'target', 'result', 'gateway CPU (1 core = 100%)', 'provider CPU', 'machine busy (all cores = 100%)', 'other load'], rows));
  out.push('');
  return out.join('\n');
}
