import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from './doubles/openai-provider-double.js';
import { readSse } from './doubles/sse.js';
import { testEnvironment } from './support/gateway-harness.js';

// `npm start` as a user runs it: a real process, no Redis or PostgreSQL, stopped with SIGTERM.

interface Started {
  child: ChildProcess;
  url: string;
  output: () => string;
  exited: Promise<number | null>;
}

async function startGateway(environment: Record<string, string>): Promise<Started> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { env: environment, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (data) => (output += data));
  child.stderr!.on('data', (data) => (output += data));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const deadline = Date.now() + 20_000;
  while (!/listening on (http:\/\/\S+)/.test(output)) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`The gateway did not start:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const url = /listening on (http:\/\/\S+)/.exec(output)![1]!;
  return { child, url, output: () => output, exited };
}

describe('the gateway process (npm start)', () => {
  let double: OpenAiProviderDouble;
  let dataDir: string;
  let environment: Record<string, string>;

  beforeAll(async () => {
    double = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
    dataDir = mkdtempSync(join(tmpdir(), 'switchboard-process-'));
    environment = testEnvironment({ openAiUrl: double.url }, dataDir);
    delete environment.SWITCHBOARD_ADMIN_TOKEN;
    environment.LOG_LEVEL = 'info';
    environment.SWITCHBOARD_DRAIN_DEADLINE_MS = '10000';
  });

  afterAll(async () => {
    await double.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('starts without Redis or PostgreSQL, prints a generated admin token once, drains a stream on SIGTERM, and logs no secrets', async () => {
    const first = await startGateway(environment);
    const token = /shown once\): (\S+)/.exec(first.output())?.[1];
    expect(token).toMatch(/^sb-admin-/);
    const created = await (await fetch(`${first.url}/admin/v1/keys`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: '{"name":"process test"}' })).json();
    const secretPrompt = 'my secret prompt text 8c1f';
    double.script('alpha', { kind: 'text', chunks: Array.from({ length: 10 }, (_, index) => `w${index} `), chunkDelayMs: 100 });
    const response = await fetch(`${first.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${created.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'svc/alpha', stream: true, messages: [{ role: 'user', content: secretPrompt }] }),
    });
    expect(response.status).toBe(200);
    first.child.kill('SIGTERM');
    // The open stream still completes in full...
    const { events } = await readSse(response);
    expect(events.at(-1)!.data).toBe('[DONE]');
    const text = events.slice(0, -1).map((event) => JSON.parse(event.data).choices[0]?.delta?.content ?? '').join('');
    expect(text).toBe(Array.from({ length: 10 }, (_, index) => `w${index} `).join(''));
    // ...while new requests are refused (503 on a kept-alive connection, or no connection at all),
    // and then the process exits cleanly.
    const late = await fetch(`${first.url}/healthz`).then((reply) => reply.status, () => 'refused');
    expect([503, 'refused']).toContain(late);
    expect(await first.exited).toBe(0);
    const logs = first.output().split('\n').filter((line) => line.startsWith('{'));
    expect(logs.length).toBeGreaterThan(0);
    const joined = logs.join('\n');
    expect(joined).not.toContain(created.key);
    expect(joined).not.toContain(token!);
    expect(joined).not.toContain(secretPrompt);

    // A second start reuses the stored token and does not print it again.
    const second = await startGateway(environment);
    expect(second.output()).not.toContain(token!);
    const health = await fetch(`${second.url}/v1/models`, { headers: { authorization: `Bearer ${created.key}` } });
    expect(health.status).toBe(200);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  }, 60_000);

  it('stops with a clear message when the catalog file is invalid', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      env: { ...environment, SWITCHBOARD_CATALOG: join(dataDir, 'missing-catalog.yaml') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stderr!.on('data', (data) => (output += data));
    const code = await new Promise((resolve) => child.on('exit', resolve));
    expect(code).toBe(1);
    expect(output).toMatch(/catalog file .*missing-catalog.yaml cannot be read/);
  }, 30_000);
});
