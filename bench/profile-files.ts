import { readFileSync } from 'node:fs';

// `npx tsx bench/profile-files.ts <file.cpuprofile> <pattern>[,<pattern>...] [--requests N]`: the CPU
// time a .cpuprofile spent in functions whose source file matches one of the patterns: their self
// time plus that of the built-ins they called directly (Map lookups, string and number natives,
// which have no file of their own), but not of other JavaScript they called, so a wrapper around a
// whole handler counts only its own work. Beside it, the busy total; with --requests, both per
// request. Puts a figure on what one part of the code, such as the metrics, costs a request, from a
// profile of the whole gateway under load.

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, patternList] = process.argv.slice(2);
if (!file || !patternList) {
  process.stderr.write('usage: tsx bench/profile-files.ts <file.cpuprofile> <pattern>[,<pattern>...] [--requests N]\n');
  process.exit(2);
}
const requestsIndex = process.argv.indexOf('--requests');
const requests = requestsIndex > 0 ? Number(process.argv[requestsIndex + 1]) : undefined;
const patterns = patternList.split(',').filter(Boolean);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;

const parent = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const idle = new Set(profile.nodes.filter((node) => node.callFrame.functionName === '(idle)').map((node) => node.id));

/** The pattern of the nearest frame with a source file on the sample's stack, if it matches one. */
function inside(id: number): string | undefined {
  let node: number | undefined = id;
  while (node !== undefined && byId.get(node)!.callFrame.url === '') node = parent.get(node);
  if (node === undefined) return undefined;
  const url = byId.get(node)!.callFrame.url;
  return patterns.find((pattern) => url.includes(pattern));
}

let busyUs = 0;
const perPattern = new Map<string, number>(patterns.map((pattern) => [pattern, 0]));
profile.samples.forEach((id, index) => {
  const delta = profile.timeDeltas[index + 1] ?? 0;
  if (idle.has(id)) return;
  busyUs += delta;
  const pattern = inside(id);
  if (pattern) perPattern.set(pattern, perPattern.get(pattern)! + delta);
});

const format = (us: number) => (requests ? `${(us / requests).toFixed(1)} us per request` : `${(us / 1000).toFixed(0)} ms`);
process.stdout.write(`busy: ${format(busyUs)}\n`);
let total = 0;
for (const [pattern, us] of perPattern) {
  total += us;
  process.stdout.write(`${pattern}: ${format(us)} (${((100 * us) / busyUs).toFixed(2)}% of busy)\n`);
}
process.stdout.write(`all patterns: ${format(total)} (${((100 * total) / busyUs).toFixed(2)}% of busy)\n`);
