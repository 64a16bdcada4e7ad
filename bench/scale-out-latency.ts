import { startOpenAiProviderDouble } from '../test/doubles/openai-provider-double.js';
import { chat, createKey, hello } from '../test/support/api-client.js';
import { startEmbeddedDeployment, type TestDeployment } from '../test/support/gateway-harness.js';
import { startScaledDeployment } from '../test/support/scaled-harness.js';

// What the queue hop costs a client: sequential requests through the embedded default and through
// the scaled-out deployment (1 ingress + 1 worker process, BullMQ + Redis pub/sub), against the same
// provider double; interleaved in rounds so machine load hits both alike. Numbers in docs/scale-out.md.
// Run: REDIS_URL=... DATABASE_URL=... npx tsx bench/scale-out-latency.ts

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const PER_ROUND = Number(process.env.BENCH_REQUESTS ?? 60);

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function firstContentMs(deployment: TestDeployment, key: string): Promise<[number, number]> {
  const started = performance.now();
  const response = await chat(deployment, key, { model: 'svc/alpha', messages: hello, stream: true });
  let first = -1;
  const decoder = new TextDecoder();
  let text = '';
  for await (const piece of response.body as unknown as AsyncIterable<Uint8Array>) {
    text += decoder.decode(piece, { stream: true });
    if (first < 0 && /"content":"[^"]/.test(text)) first = performance.now() - started;
  }
  return [first, performance.now() - started];
}

const double = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
const deployments: Record<string, TestDeployment> = {
  embedded: await startEmbeddedDeployment({ openAiUrl: double.url }),
  'scaled (1 ingress + 1 worker)': await startScaledDeployment({ openAiUrl: double.url, ingressCount: 1, workerCount: 1 }),
};
const keys: Record<string, string> = {};
for (const [name, deployment] of Object.entries(deployments)) keys[name] = (await createKey(deployment, { name: 'bench' })).key;
const results: Record<string, { json: number[]; first: number[]; stream: number[] }> = {};
for (const name of Object.keys(deployments)) results[name] = { json: [], first: [], stream: [] };

double.script('alpha', { kind: 'text', chunks: ['Hello', ' there', ' friend'], usage: { prompt_tokens: 5, completion_tokens: 3 } });
for (let round = 0; round < ROUNDS + 1; round++) {
  for (const [name, deployment] of Object.entries(deployments)) {
    for (let i = 0; i < PER_ROUND; i++) {
      const started = performance.now();
      const response = await chat(deployment, keys[name]!, { model: 'svc/alpha', messages: hello });
      await response.json();
      const json = performance.now() - started;
      const [first, stream] = await firstContentMs(deployment, keys[name]!);
      if (round === 0) continue; // warm-up
      results[name]!.json.push(json);
      results[name]!.first.push(first);
      results[name]!.stream.push(stream);
    }
  }
  double.requests.length = 0;
}

console.log(`${ROUNDS} interleaved rounds of ${PER_ROUND} sequential requests each (after a warm-up round)`);
console.log('| deployment | JSON p50 | JSON p99 | stream first content p50 | p99 | whole stream p50 |');
console.log('|---|---|---|---|---|---|');
for (const [name, r] of Object.entries(results)) {
  const f = (v: number) => `${v.toFixed(2)} ms`;
  console.log(`| ${name} | ${f(percentile(r.json, 50))} | ${f(percentile(r.json, 99))} | ${f(percentile(r.first, 50))} | ${f(percentile(r.first, 99))} | ${f(percentile(r.stream, 50))} |`);
}
for (const deployment of Object.values(deployments)) await deployment.close();
await double.close();
process.exit(0);
