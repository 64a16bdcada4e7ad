import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { transformSync } from 'esbuild';

// A `node --cpu-prof` profile: its shape, the samples of a load window, and the names of the
// functions tsx leaves anonymous. tsx compiles with esbuild's keepNames, which wraps every named
// arrow and function expression in `__name(fn, "name")`, so V8 (and the profile) sees them as
// anonymous; the same transform, run here, finds each one's name from its column. esbuild is not
// a dependency of ours: it comes with tsx (a runtime dependency), the compiler whose output this
// has to match, so it is always the version tsx uses.

export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  /** Microseconds on the monotonic clock (the same as process.hrtime's). */
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** A window of a profile, in microseconds after its start. */
export interface SampleWindow {
  fromUs: number;
  toUs: number;
}

export function loadCpuProfile(file: string): CpuProfile {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  nameAnonymousFunctions(profile);
  return profile;
}

/** Now on the monotonic clock, in microseconds: what a profile's startTime is measured on. */
export function monotonicUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/** The window between two monotonicUs() readings, relative to the profile's start. */
export function windowOf(profile: CpuProfile, fromMonotonicUs: number, toMonotonicUs: number): SampleWindow {
  return { fromUs: fromMonotonicUs - profile.startTime, toUs: toMonotonicUs - profile.startTime };
}

/** Calls `visit` with each sample in the window and the microseconds it stands for. */
export function forEachSample(profile: CpuProfile, window: SampleWindow | undefined, visit: (nodeId: number, micros: number) => void): void {
  let at = 0;
  for (let i = 0; i < profile.samples.length; i += 1) {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (window && (at < window.fromUs || at > window.toUs)) continue;
    visit(profile.samples[i]!, delta);
  }
}

const transformed = new Map<string, string | null>();

/** The code tsx ran for a .ts file (the same esbuild options: whitespace minified, names kept). */
function compiledSource(url: string): string | null {
  if (transformed.has(url)) return transformed.get(url)!;
  let code: string | null = null;
  try {
    const path = fileURLToPath(url);
    code = transformSync(readFileSync(path, 'utf8'), {
      target: `node${process.versions.node}`,
      loader: 'ts',
      format: 'esm',
      sourcemap: true,
      minifyWhitespace: true,
      keepNames: true,
      sourcefile: path,
    }).code;
  } catch {
    code = null;
  }
  transformed.set(url, code);
  return code;
}

/** `name:__name(` or `name=__name(` right before a function's column. */
const wrappedName = /([A-Za-z_$][\w$]*)\s*[:=]\s*__name\($/;

function nameAnonymousFunctions(profile: CpuProfile): void {
  for (const node of profile.nodes) {
    const frame = node.callFrame;
    if (frame.functionName !== '' || !frame.url.startsWith('file://') || !frame.url.endsWith('.ts') || frame.lineNumber !== 0) continue;
    const code = compiledSource(frame.url);
    if (!code) continue;
    const match = wrappedName.exec(code.slice(Math.max(0, frame.columnNumber - 80), frame.columnNumber));
    if (match) frame.functionName = match[1]!;
  }
}
