import { microsPerTick } from './proc-stats.js';
import { isWrk, plainFigures, streamFigures, type BenchResults, type StreamFigures } from './figures.js';
import { verdicts } from './issue-12-targets.js';

export type { BenchResults, IdleRecord, Measured, RunRecord } from './figures.js';

// Turns a run's measurements into the Markdown tables of BENCHMARKS.md. Every figure is computed
// from this run alone: added latency and throughput ratios are against the provider measured
// directly in the same run, interleaved with the others.

const fmt = (value: number, digits = 2) => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');
const signed = (value: number, digits = 2) => (Number.isFinite(value) ? `${value >= 0 ? '+' : ''}${value.toFixed(digits)}` : 'n/a');
const int = (value: number) => (Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : 'n/a');
const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(0);

function table(header: string[], rows: string[][]): string {
  return [`| ${header.join(' | ')} |`, `| ${header.map((cell, index) => (index === 0 ? '---' : '---:')).join(' | ')} |`, ...rows.map((row) => `| ${row.join(' | ')} |`)].join('\n');
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
  out.push(`Issue 12's targets, each from this run alone. Scenarios: c1 / c32 = wrk, 1 / 32 connections, non-streaming; stream-rate = 20-chunk streams, chunks 5 ms apart, arriving at ${bench.options.streamRate}/s (each lasts about 100 ms: about 60 in flight); stream-c64-nodelay = 20-chunk streams with no delay between chunks, 64 back to back; --idle-big = idle streams held open on one scaled-out stack (scaled-4, else scaled-lists-4, else the last scaled one), RSS of its ingress process. Scaled-out CPU is ingress + workers + redis-server (the shared instance: its CPU includes any other client it served during the run).`, '');
  const verdictLabel = (met: boolean | undefined) => (met === undefined ? 'not measured' : met ? 'met' : '**missed**');
  out.push(table(['Goal', 'Target', 'Measured', 'Scenario', ''], verdicts(bench).map((verdict) => [verdict.what, verdict.target, verdict.measured, verdict.source, verdictLabel(verdict.met)])));
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

  out.push(`### Streams of 20 content chunks, 5 ms apart unless said (bench/stream-client.ts)`, '');
  out.push(`Time to first content (TTFC) runs from writing the request to the first non-empty content delta. Open loop: new streams arrive at a fixed rate (${bench.options.streamRateLow}/s, light, and ${bench.options.streamRate}/s); closed loop: 256 streams in flight back to back, for streams per second; and \`stream-c64-nodelay\`: 64 in flight back to back, each stream's 20 chunks sent with no delay between them (one write per chunk, model \`paced-20-0\`). Every stream's framing and content are checked; a stream that fails a check counts as an error. CPU is per completed stream.`, '');
  const ttfcRows: string[][] = [];
  const throughputRows: string[][] = [];
  const baseLow = streamFigures(runs, 'direct', 'stream-rate-low');
  const baseRate = streamFigures(runs, 'direct', 'stream-rate');
  const baseClosed = streamFigures(runs, 'direct', 'stream-c256');
  const baseNoDelay = streamFigures(runs, 'direct', 'stream-c64-nodelay');
  const added = (name: string, figures: StreamFigures | undefined, base: StreamFigures | undefined, which: 'ttfcP50' | 'ttfcP99') =>
    name === 'direct' || !figures || !base ? '' : signed(figures[which] - base[which], 3);
  for (const name of names) {
    const low = streamFigures(runs, name, 'stream-rate-low');
    const rate = streamFigures(runs, name, 'stream-rate');
    const closed = streamFigures(runs, name, 'stream-c256');
    const noDelay = streamFigures(runs, name, 'stream-c64-nodelay');
    if (!low && !rate && !closed && !noDelay) continue;
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
      noDelay ? int(noDelay.streamsPerSecond) : 'n/a',
      noDelay && baseNoDelay ? fmt(noDelay.streamsPerSecond / baseNoDelay.streamsPerSecond, 2) : 'n/a',
      noDelay && name !== 'direct' ? int(noDelay.cpuUsPerStream) : '',
      String((low?.errors ?? 0) + (rate?.errors ?? 0) + (closed?.errors ?? 0) + (noDelay?.errors ?? 0)),
    ]);
  }
  const lowRate = bench.options.streamRateLow;
  const highRate = bench.options.streamRate;
  out.push(table(['target', `TTFC p50 ms @${lowRate}/s`, `p99 ms @${lowRate}/s`, 'added p50', 'added p99', `TTFC p50 ms @${highRate}/s`, `p99 ms @${highRate}/s`, 'added p50', 'added p99'], ttfcRows));
  out.push('');
  out.push(table(['target', `CPU us/stream @${lowRate}/s`, `streams/s done @${highRate}/s`, `CPU us/stream @${highRate}/s`, 'streams/s c=256', 'x direct', 'CPU us/stream c=256', 'streams/s c=64 no delay', 'x direct', 'CPU us/stream c=64 no delay', 'errors'], throughputRows));
  const errorNotes: string[] = [];
  for (const name of names) {
    for (const scenario of ['stream-rate-low', 'stream-rate', 'stream-c256', 'stream-c64-nodelay']) {
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
