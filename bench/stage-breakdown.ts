import { pathToFileURL } from 'node:url';
import { forEachSample, loadCpuProfile, type CpuProfile, type ProfileNode, type SampleWindow } from './cpu-profile.js';
import { extraStages, fallbackStages, issueStages, stageRules, type ProcessRole, type StageRule } from './stage-map.js';

// Issue 12's cost per stage, from a `node --cpu-prof` profile: every busy sample of the load window
// goes to the stage of the nearest frame on its stack that a rule of bench/stage-map.ts matches
// (so a stage includes the library, Node and native code it calls); with the requests or streams
// completed in the window, each stage's microseconds per request. What no rule claims is shown by
// name: the garbage collector, (program) (V8 and native work outside JavaScript) and "other", with
// its top files, so that the map can be improved.
//
//   npx tsx bench/stage-breakdown.ts <file.cpuprofile> --requests N [--role embedded|ingress|worker]
//       [--from-ms A --to-ms B] (the window, ms after the profile's start; default: all samples)
//       [--explain STAGE] (its top leaf functions, each with the frame whose rule claimed it)
//       [--leaf REGEX] (the share of busy whose sampled function matches, by stage: e.g. the native
//                       socket writes, '^(writev|writeBuffer|writeUtf8String) \(native\)')

export const GC = '(garbage collector)';
export const PROGRAM = '(program)';
export const OTHER = 'other JS (no rule on the stack)';

export interface StageBreakdown {
  role: ProcessRole;
  requests: number;
  busyUs: number;
  sampledUs: number;
  stages: Map<string, number>;
  /** Of "other": by the nearest file on the stack, and by leaf function. */
  otherFiles: Map<string, number>;
  otherFunctions: Map<string, number>;
  /** Per stage, by "leaf function <- the frame whose rule decided" (to check the map). */
  evidence: Map<string, Map<string, number>>;
}

const frameName = (frame: ProfileNode['callFrame']) => `${frame.functionName || '(anonymous)'} ${shortFile(frame.url)}`;

function matches(rule: StageRule, frame: ProfileNode['callFrame'], role: ProcessRole): boolean {
  if (rule.roles && !rule.roles.includes(role)) return false;
  if (rule.file && !rule.file.test(frame.url)) return false;
  if (rule.fn && !rule.fn.test(frame.functionName)) return false;
  return true;
}

export function shortFile(url: string): string {
  if (!url) return '(native)';
  const clean = url.replace(/^file:\/\//, '');
  const modules = clean.lastIndexOf('/node_modules/');
  if (modules !== -1) return clean.slice(modules + '/node_modules/'.length);
  const source = clean.lastIndexOf('/src/');
  return source !== -1 ? clean.slice(source + 1) : clean;
}

interface Attribution {
  stage: string;
  /** The frame whose rule decided. */
  by: number;
}

/** The stage of every node: the nearest ordinary match up the stack, else the nearest fallback. */
function stagesOfNodes(profile: CpuProfile, role: ProcessRole, rules: StageRule[]): Map<number, Attribution | undefined> {
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const ordinary = rules.filter((rule) => !rule.fallback && !rule.leaf);
  const fallback = rules.filter((rule) => rule.fallback && !rule.leaf);
  const leafOnly = rules.filter((rule) => rule.leaf);
  const memo = new Map<number, { strong?: Attribution; weak?: Attribution }>();
  const resolve = (id: number): { strong?: Attribution; weak?: Attribution } => {
    const known = memo.get(id);
    if (known) return known;
    // Iterative up to the nearest memoised ancestor: stacks can be deep.
    const chain: number[] = [];
    let at: number | undefined = id;
    while (at !== undefined && !memo.has(at)) {
      chain.push(at);
      at = parent.get(at);
    }
    let above = at === undefined ? {} : memo.get(at)!;
    for (let i = chain.length - 1; i >= 0; i -= 1) {
      const frame = byId.get(chain[i]!)!.callFrame;
      const own = (list: StageRule[]) => {
        const stage = list.find((rule) => matches(rule, frame, role))?.stage;
        return stage === undefined ? undefined : { stage, by: chain[i]! };
      };
      const strong = own(ordinary) ?? above.strong;
      const weak = own(fallback) ?? above.weak;
      above = { strong, weak };
      memo.set(chain[i]!, above);
    }
    return memo.get(id)!;
  };
  const result = new Map<number, Attribution | undefined>();
  for (const n of profile.nodes) {
    const leafStage = leafOnly.find((rule) => matches(rule, n.callFrame, role))?.stage;
    const { strong, weak } = resolve(n.id);
    result.set(n.id, leafStage !== undefined ? { stage: leafStage, by: n.id } : strong ?? weak);
  }
  return result;
}

/** The nearest file on a node's stack (for the "other" listing). */
function nearestFile(profile: CpuProfile, id: number, parent: Map<number, number>, byId: Map<number, ProfileNode>): string {
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const url = byId.get(at)!.callFrame.url;
    if (url) return shortFile(url);
  }
  return '(native, no file on the stack)';
}

export function breakdownStages(profile: CpuProfile, role: ProcessRole, requests: number, window?: SampleWindow, rules: StageRule[] = stageRules): StageBreakdown {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);
  const stageOf = stagesOfNodes(profile, role, rules);
  const result: StageBreakdown = { role, requests, busyUs: 0, sampledUs: 0, stages: new Map(), otherFiles: new Map(), otherFunctions: new Map(), evidence: new Map() };
  const add = (map: Map<string, number>, key: string, micros: number) => map.set(key, (map.get(key) ?? 0) + micros);
  forEachSample(profile, window, (id, micros) => {
    result.sampledUs += micros;
    const frame = byId.get(id)!.callFrame;
    if (frame.functionName === '(idle)') return;
    result.busyUs += micros;
    if (frame.functionName === GC || frame.functionName === PROGRAM) return void add(result.stages, frame.functionName, micros);
    const attribution = stageOf.get(id);
    if (attribution) {
      add(result.stages, attribution.stage, micros);
      const evidence = result.evidence.get(attribution.stage) ?? new Map<string, number>();
      result.evidence.set(attribution.stage, evidence);
      add(evidence, attribution.by === id ? frameName(frame) : `${frameName(frame)} <- ${frameName(byId.get(attribution.by)!.callFrame)}`, micros);
      return;
    }
    add(result.stages, OTHER, micros);
    add(result.otherFiles, nearestFile(profile, id, parent, byId), micros);
    add(result.otherFunctions, frameName(frame), micros);
  });
  return result;
}

export const stageRowOrder: string[] = [...issueStages, ...extraStages, ...fallbackStages, GC, PROGRAM, OTHER];

function top(map: Map<string, number>, count: number, total: number): string {
  return [...map].sort((a, b) => b[1] - a[1]).slice(0, count).map(([key, us]) => `\`${key}\` ${((100 * us) / total).toFixed(1)}%`).join(', ');
}

/**
 * One table for one or more processes (embedded; or ingress and worker): per stage, microseconds
 * per request (or stream) and share of each process's busy time; with several, their sum.
 */
export function renderStageTable(parts: Array<{ label: string; breakdown: StageBreakdown }>, unit = 'request'): string {
  const several = parts.length > 1;
  const header = ['stage', ...parts.flatMap(({ label }) => [`${label} µs/${unit}`, `${label} share`]), ...(several ? [`total µs/${unit}`] : [])];
  const lines = [`| ${header.join(' | ')} |`, `| --- |${' ---: |'.repeat(header.length - 1)}`];
  const perRequest = (b: StageBreakdown, us: number) => (b.requests > 0 ? us / b.requests : 0);
  for (const stage of stageRowOrder) {
    const present = parts.some(({ breakdown }) => (breakdown.stages.get(stage) ?? 0) > 0);
    // Every stage the issue names is shown, even at zero; the others only when present.
    if (!present && !(issueStages as readonly string[]).includes(stage)) continue;
    const cells = parts.flatMap(({ breakdown }) => {
      const us = breakdown.stages.get(stage) ?? 0;
      return [perRequest(breakdown, us).toFixed(1), `${((100 * us) / breakdown.busyUs).toFixed(1)}%`];
    });
    const total = parts.reduce((sum, { breakdown }) => sum + perRequest(breakdown, breakdown.stages.get(stage) ?? 0), 0);
    lines.push(`| ${stage} | ${cells.join(' | ')} |${several ? ` ${total.toFixed(1)} |` : ''}`);
  }
  const busyCells = parts.flatMap(({ breakdown }) => [`**${perRequest(breakdown, breakdown.busyUs).toFixed(1)}**`, '100%']);
  const busyTotal = parts.reduce((sum, { breakdown }) => sum + perRequest(breakdown, breakdown.busyUs), 0);
  lines.push(`| **busy (all stages)** | ${busyCells.join(' | ')} |${several ? ` **${busyTotal.toFixed(1)}** |` : ''}`);
  const notes = parts.map(({ label, breakdown }) => {
    const other = breakdown.stages.get(OTHER) ?? 0;
    const files = other > 0 ? `; "other" by nearest file: ${top(breakdown.otherFiles, 6, breakdown.busyUs)}` : '';
    return `${label}: ${breakdown.requests} ${unit}s in the window, busy ${(breakdown.busyUs / 1000).toFixed(0)} ms of ${(breakdown.sampledUs / 1000).toFixed(0)} ms sampled${files}.`;
  });
  return `${lines.join('\n')}\n\n${notes.join('\n')}`;
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const option = (name: string) => {
    const index = argv.indexOf(`--${name}`);
    return index === -1 ? undefined : argv[index + 1];
  };
  const file = argv[0];
  const requests = Number(option('requests') ?? 0);
  if (!file || !(requests > 0)) {
    process.stderr.write('usage: tsx bench/stage-breakdown.ts <file.cpuprofile> --requests N [--role embedded|ingress|worker] [--from-ms A --to-ms B]\n');
    process.exit(2);
  }
  const role = (option('role') ?? 'embedded') as ProcessRole;
  const from = option('from-ms');
  const to = option('to-ms');
  const window = from !== undefined || to !== undefined ? { fromUs: Number(from ?? 0) * 1000, toUs: to === undefined ? Infinity : Number(to) * 1000 } : undefined;
  const breakdown = breakdownStages(loadCpuProfile(file), role, requests, window);
  process.stdout.write(`${renderStageTable([{ label: role, breakdown }])}\n\n"other" by leaf function: ${top(breakdown.otherFunctions, 12, breakdown.busyUs)}\n`);
  const leaf = option('leaf');
  if (leaf) {
    const pattern = new RegExp(leaf);
    let total = 0;
    const byStage: string[] = [];
    for (const [stage, evidence] of breakdown.evidence) {
      let us = 0;
      for (const [key, micros] of evidence) if (pattern.test(key)) us += micros;
      total += us;
      if (us > 0) byStage.push(`${stage} ${((100 * us) / breakdown.busyUs).toFixed(1)}%`);
    }
    process.stdout.write(`\nleaf /${leaf}/: ${((100 * total) / breakdown.busyUs).toFixed(1)}% of busy, ${(total / requests).toFixed(1)} µs per request; by stage: ${byStage.join(', ')}\n`);
  }
  const explain = option('explain');
  if (explain) {
    process.stdout.write(`\n${explain}, by leaf function <- deciding frame (share of busy):\n`);
    for (const [key, us] of [...(breakdown.evidence.get(explain) ?? [])].sort((a, b) => b[1] - a[1]).slice(0, 25)) {
      process.stdout.write(`  ${((100 * us) / breakdown.busyUs).toFixed(2)}%  ${key}\n`);
    }
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
