import { readFileSync } from 'node:fs';
import { renderReport, type BenchResults } from './report.js';

// Re-renders the Markdown of a benchmark run from its JSON: tsx bench/render.ts bench/results/<run>.json
const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: tsx bench/render.ts <results.json>\n');
  process.exit(2);
}
process.stdout.write(renderReport(JSON.parse(readFileSync(file, 'utf8')) as BenchResults));
