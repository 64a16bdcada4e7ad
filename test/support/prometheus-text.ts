import { spawn } from 'node:child_process';

// Reading Prometheus's text exposition format as a scraper does, and validating it with Debian's
// promtool, so the tests judge the output by the format's own tools.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match) throw new Error(`Unreadable metrics line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]!] = pair[2]!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The sum of every series of `name` whose labels include `labels`, across all the given scrapes. */
export function total(scrapes: string[], name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const text of scrapes) {
    for (const sample of parseMetrics(text)) {
      if (sample.name !== name) continue;
      if (Object.entries(labels).every(([label, value]) => sample.labels[label] === value)) sum += sample.value;
    }
  }
  return sum;
}

/** Runs `promtool check metrics` on the text; resolves with its exit code and output. */
export function promtoolCheck(text: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('promtool', ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (data: Buffer) => (output += data.toString()));
    child.stderr.on('data', (data: Buffer) => (output += data.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, output }));
    child.stdin.end(text);
  });
}
