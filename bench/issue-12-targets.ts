import { plainFigures, streamFigures, type BenchResults, type PlainFigures, type StreamFigures } from './figures.js';

// The "Targets" of issue 12 (the hot path at the cost of a plain proxy), each one checked against
// figures measured in this run alone. A target whose figures need a target or a scenario that was
// not in the run is listed as not measured, with what was missing, never left out.

export interface Verdict {
  what: string;
  /** The limit, e.g. `<= 1.5x node-proxy`. */
  target: string;
  measured: string;
  /** The scenario(s) the figures come from. */
  source: string;
  met: boolean | undefined;
}

/** Scenarios the verdicts read, with what each one measures. */
export const targetScenarios = {
  c1: 'c1',
  c32: 'c32',
  stream5ms: 'stream-rate',
  noDelay: 'stream-c64-nodelay',
} as const;

export const scaledFamilies = [
  { prefix: 'scaled-', queue: 'BullMQ' },
  { prefix: 'scaled-lists-', queue: 'lists' },
] as const;
const scaledNames = ['scaled-1', 'scaled-2', 'scaled-4', 'scaled-lists-1', 'scaled-lists-2', 'scaled-lists-4'];

/** The ingress must hold this many idle streams under `idleLimitMb`. */
export const idleStreamsGoal = 20_000;
const idleLimitMb = 800;

const us = (value: number) => `${Math.round(value).toLocaleString('en-US')} us`;
const ms = (value: number) => `${value.toFixed(3)} ms`;
const ratio = (value: number) => `${value.toFixed(2)}x`;

function errorsNote(...figures: Array<{ errors: number } | undefined>): string {
  const errors = figures.reduce((sum, figure) => sum + (figure?.errors ?? 0), 0);
  return errors > 0 ? ` (${errors} errors in these runs)` : '';
}

export function verdicts(bench: BenchResults): Verdict[] {
  const { runs } = bench;
  const list: Verdict[] = [];
  const inRun = new Set(runs.map((run) => run.target));
  const scenariosRun = new Set(runs.map((run) => run.scenario));
  const plain = (target: string, scenario: string) => plainFigures(runs, target, scenario);
  const stream = (target: string, scenario: string) => streamFigures(runs, target, scenario);

  /** Why a figure is missing: the target or the scenario was not in the run (or failed to start). */
  const missing = (needs: Array<[string, string, unknown]>): string => {
    const absent = needs.filter(([, , figure]) => figure === undefined).map(([target, scenario]) => {
      if (!inRun.has(target)) return bench.skipped[target] ? `${target} ${bench.skipped[target]}` : `${target} not in this run`;
      return scenariosRun.has(scenario) ? `no ${scenario} run of ${target}` : `${scenario} not in this run`;
    });
    return `not measured: ${[...new Set(absent)].join('; ')}`;
  };
  /**
   * Adds one verdict; `value` is computed only when every needed figure exists, and a figure that
   * is not a finite number (e.g. Redis CPU that was not tracked) is not measured either.
   */
  const check = (
    what: string,
    limit: number,
    compare: '<=' | '<' | '>=',
    target: string,
    source: string,
    needs: Array<[string, string, unknown]>,
    compute: () => { value: number; text: string; notMeasured?: string },
  ) => {
    if (needs.some(([, , figure]) => figure === undefined)) {
      list.push({ what, target, measured: missing(needs), source, met: undefined });
      return;
    }
    const { value, text, notMeasured } = compute();
    if (notMeasured || !Number.isFinite(value)) {
      list.push({ what, target, measured: `not measured: ${notMeasured ?? 'no finite figure'}`, source, met: undefined });
      return;
    }
    list.push({ what, target, measured: text, source, met: compare === '<=' ? value <= limit : compare === '<' ? value < limit : value >= limit });
  };

  const { c1, c32, stream5ms, noDelay } = targetScenarios;
  const direct = { c1: plain('direct', c1), rate: stream('direct', stream5ms) };
  const proxy = { c32: plain('node-proxy', c32), rate: stream('node-proxy', stream5ms) };
  const nginx = { rate: stream('nginx', stream5ms), noDelay: stream('nginx', noDelay) };
  const embedded = { c1: plain('embedded', c1), c32: plain('embedded', c32), rate: stream('embedded', stream5ms), noDelay: stream('embedded', noDelay) };
  const portkey32 = plain('portkey', c32);
  const rate = bench.options.streamRate;

  check('Embedded: CPU per non-streaming request (c=32), embedded / node-proxy', 1.5, '<=', '<= 1.5x', c32, [['embedded', c32, embedded.c32], ['node-proxy', c32, proxy.c32]], () => ({
    value: embedded.c32!.cpuUsPerRequest / proxy.c32!.cpuUsPerRequest,
    text: `${ratio(embedded.c32!.cpuUsPerRequest / proxy.c32!.cpuUsPerRequest)} (${us(embedded.c32!.cpuUsPerRequest)} / ${us(proxy.c32!.cpuUsPerRequest)})`,
  }));
  check('Embedded: CPU per non-streaming request (c=32), Portkey / embedded', 8, '>=', '>= 8x', c32, [['portkey', c32, portkey32], ['embedded', c32, embedded.c32]], () => ({
    value: portkey32!.cpuUsPerRequest / embedded.c32!.cpuUsPerRequest,
    text: `${ratio(portkey32!.cpuUsPerRequest / embedded.c32!.cpuUsPerRequest)} (${us(portkey32!.cpuUsPerRequest)} / ${us(embedded.c32!.cpuUsPerRequest)})`,
  }));
  check('Embedded: added p50 latency at c=1 (vs direct)', 0.15, '<=', '<= 0.15 ms', c1, [['embedded', c1, embedded.c1], ['direct', c1, direct.c1]], () => ({
    value: embedded.c1!.p50Ms - direct.c1!.p50Ms,
    text: `${ms(embedded.c1!.p50Ms - direct.c1!.p50Ms)} (${ms(embedded.c1!.p50Ms)} - ${ms(direct.c1!.p50Ms)})`,
  }));
  check(`Embedded: CPU per 20-chunk stream, chunks 5 ms apart (${rate}/s), embedded / node-proxy`, 1.2, '<=', '<= 1.2x', stream5ms, [['embedded', stream5ms, embedded.rate], ['node-proxy', stream5ms, proxy.rate]], () => ({
    value: embedded.rate!.cpuUsPerStream / proxy.rate!.cpuUsPerStream,
    text: `${ratio(embedded.rate!.cpuUsPerStream / proxy.rate!.cpuUsPerStream)} (${us(embedded.rate!.cpuUsPerStream)} / ${us(proxy.rate!.cpuUsPerStream)})${errorsNote(embedded.rate, proxy.rate)}`,
  }));
  check('Embedded: streams/s, 20 chunks with no delay between them (c=64), embedded / nginx', 0.8, '>=', '>= 0.8x', noDelay, [['embedded', noDelay, embedded.noDelay], ['nginx', noDelay, nginx.noDelay]], () => ({
    value: embedded.noDelay!.streamsPerSecond / nginx.noDelay!.streamsPerSecond,
    text: `${ratio(embedded.noDelay!.streamsPerSecond / nginx.noDelay!.streamsPerSecond)} (${Math.round(embedded.noDelay!.streamsPerSecond)} / ${Math.round(nginx.noDelay!.streamsPerSecond)} streams/s)${errorsNote(embedded.noDelay, nginx.noDelay)}`,
  }));
  check(`Embedded: time to first content p50 at ${rate} streams/s, minus nginx's`, 1, '<=', '<= 1 ms', stream5ms, [['embedded', stream5ms, embedded.rate], ['nginx', stream5ms, nginx.rate]], () => ({
    value: embedded.rate!.ttfcP50 - nginx.rate!.ttfcP50,
    text: `${ms(embedded.rate!.ttfcP50 - nginx.rate!.ttfcP50)} (${ms(embedded.rate!.ttfcP50)} - ${ms(nginx.rate!.ttfcP50)})`,
  }));

  const scaledInRun = scaledNames.filter((name) => inRun.has(name));
  for (const name of scaledInRun) scaledVerdicts(name);
  const scaledAbsent = scaledNames.filter((name) => !inRun.has(name));
  if (scaledAbsent.length > 0) {
    const what = `Scaled out (CPU per request and per stream / embedded, Redis CPU per job, added p50 at c=1, added TTFC p50, not saturated at ${rate}/s) for ${scaledAbsent.join(', ')}`;
    list.push({ what, target: 'as for each scaled-out target', measured: `not measured: ${scaledAbsent.map((name) => (bench.skipped[name] ? `${name} ${bench.skipped[name]}` : `${name} not in this run`)).join('; ')}`, source: '', met: undefined });
  }

  function scaledVerdicts(name: string): void {
    const mine = { c1: plain(name, c1), c32: plain(name, c32), rate: stream(name, stream5ms) };
    const redisNote = bench.redisTracked ? undefined : 'the redis-server process was not found, so Redis CPU was not tracked';
    const withRedisPlain = (figures: PlainFigures) => figures.cpuUsPerRequest + (figures.parts.redis ?? NaN);
    const withRedisStream = (figures: StreamFigures) => figures.cpuUsPerStream + (figures.parts.redis ?? NaN);
    check(`${name}: CPU per non-streaming request (c=32), ingress + workers + Redis, / embedded`, 2.5, '<=', '<= 2.5x', c32, [[name, c32, mine.c32], ['embedded', c32, embedded.c32]], () => ({
      value: withRedisPlain(mine.c32!) / embedded.c32!.cpuUsPerRequest,
      text: `${ratio(withRedisPlain(mine.c32!) / embedded.c32!.cpuUsPerRequest)} (${us(withRedisPlain(mine.c32!))} / ${us(embedded.c32!.cpuUsPerRequest)})`,
      notMeasured: redisNote,
    }));
    check(`${name}: CPU per 20-chunk stream (${rate}/s), ingress + workers + Redis, / embedded`, 2, '<=', '<= 2x', stream5ms, [[name, stream5ms, mine.rate], ['embedded', stream5ms, embedded.rate]], () => ({
      value: withRedisStream(mine.rate!) / embedded.rate!.cpuUsPerStream,
      text: `${ratio(withRedisStream(mine.rate!) / embedded.rate!.cpuUsPerStream)} (${us(withRedisStream(mine.rate!))} / ${us(embedded.rate!.cpuUsPerStream)})${errorsNote(mine.rate, embedded.rate)}`,
      notMeasured: redisNote,
    }));
    check(`${name}: Redis CPU per non-streaming job (c=32)`, 150, '<=', '<= 150 us', c32, [[name, c32, mine.c32]], () => ({
      value: mine.c32!.parts.redis ?? NaN,
      text: us(mine.c32!.parts.redis ?? NaN),
      notMeasured: redisNote,
    }));
    check(`${name}: added p50 latency at c=1 (vs direct)`, 1.5, '<=', '<= 1.5 ms', c1, [[name, c1, mine.c1], ['direct', c1, direct.c1]], () => ({
      value: mine.c1!.p50Ms - direct.c1!.p50Ms,
      text: `${ms(mine.c1!.p50Ms - direct.c1!.p50Ms)} (${ms(mine.c1!.p50Ms)} - ${ms(direct.c1!.p50Ms)})`,
    }));
    check(`${name}: added time to first content p50 at ${rate} streams/s (vs direct)`, 1.5, '<=', '<= 1.5 ms', stream5ms, [[name, stream5ms, mine.rate], ['direct', stream5ms, direct.rate]], () => ({
      value: mine.rate!.ttfcP50 - direct.rate!.ttfcP50,
      text: `${ms(mine.rate!.ttfcP50 - direct.rate!.ttfcP50)} (${ms(mine.rate!.ttfcP50)} - ${ms(direct.rate!.ttfcP50)})`,
    }));
    check(`${name}: not saturated at ${rate} streams/s (time to first content p99)`, 20, '<', '< 20 ms', stream5ms, [[name, stream5ms, mine.rate]], () => ({
      value: mine.rate!.ttfcP99,
      text: `${ms(mine.rate!.ttfcP99)}, ${Math.round(mine.rate!.streamsPerSecond)} streams/s done${errorsNote(mine.rate)}`,
    }));
  }

  for (const { prefix, queue } of scaledFamilies) {
    const one = `${prefix}1`;
    const four = `${prefix}4`;
    const figures = { one: stream(one, stream5ms), four: stream(four, stream5ms) };
    check(`Scaling shape (${queue} queue): CPU per stream (${rate}/s, Redis included), ${four} / ${one}`, 1.1, '<=', '<= 1.1x', stream5ms, [[four, stream5ms, figures.four], [one, stream5ms, figures.one]], () => {
      const total = (f: StreamFigures) => f.cpuUsPerStream + (f.parts.redis ?? NaN);
      return {
        value: total(figures.four!) / total(figures.one!),
        text: `${ratio(total(figures.four!) / total(figures.one!))} (${us(total(figures.four!))} / ${us(total(figures.one!))})`,
        notMeasured: bench.redisTracked ? undefined : 'Redis CPU was not tracked',
      };
    });
  }

  list.push(memoryVerdict(bench));
  return list;
}

/**
 * The ingress's RSS with `idleStreamsGoal` idle streams open. Measured when at least 95% of them
 * were open (the rest extrapolated linearly, and said so); from fewer the extrapolation is shown
 * but the target counts as not measured.
 */
function memoryVerdict(bench: BenchResults): Verdict {
  const what = `Memory: ingress RSS with ${idleStreamsGoal.toLocaleString('en-US')} open idle streams`;
  const target = `< ${idleLimitMb} MB`;
  const source = '--idle-big';
  const record = bench.idle.filter((entry) => entry.target.startsWith('scaled-')).sort((a, b) => b.open - a.open)[0];
  const asked = Number(bench.options.idleBig ?? 0);
  if (!record) {
    const why = asked <= 0 ? '--idle-big 0' : 'no scaled-out target in this run';
    return { what, target, measured: `not measured: ${why}`, source, met: undefined };
  }
  const before = record.partsBefore.ingress;
  const after = record.partsAfter.ingress;
  if (before === undefined || after === undefined || record.open === 0) {
    return { what, target, measured: `not measured: ${record.open} of ${record.requested} streams opened on ${record.target}`, source, met: undefined };
  }
  const limitNote = bench.options.openFileLimit && Number(bench.options.idleBig) < Number(bench.options.idleBigAsked) ? `, ${Number(bench.options.idleBig).toLocaleString('en-US')} asked: open-file limit ${bench.options.openFileLimit}` : '';
  if (record.open >= idleStreamsGoal) {
    return { what, target, measured: `${(after / 1e6).toFixed(0)} MB (${record.target})`, source, met: after / 1e6 < idleLimitMb };
  }
  const extrapolated = before + ((after - before) / record.open) * idleStreamsGoal;
  const text = `${(extrapolated / 1e6).toFixed(0)} MB extrapolated from ${record.open.toLocaleString('en-US')} open streams on ${record.target} (${(before / 1e6).toFixed(0)} -> ${(after / 1e6).toFixed(0)} MB${limitNote})`;
  if (record.open >= idleStreamsGoal * 0.95) return { what, target, measured: text, source, met: extrapolated / 1e6 < idleLimitMb };
  return { what, target, measured: `not measured: ${text}`, source, met: undefined };
}
