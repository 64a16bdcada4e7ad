import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from './doubles/openai-provider-double.js';
import { eventually, hello } from './support/api-client.js';
import { testAdminToken, testEnvironment } from './support/gateway-harness.js';
import { DATABASE_URL, dropSchema, REDIS_URL, removeRedisPrefix, scaledOutAvailable, scaledOutSkipNotice } from './support/scaled-harness.js';

// The Procfile as a Procfile platform runs it: `nf start` (foreman) starts `web` and `worker`
// from the repository's own Procfile; the web process answers a completion end to end, and both
// stop cleanly when the runner is interrupted (exec in the Procfile lets the signal reach Node).

const repoRoot = fileURLToPath(new URL('../', import.meta.url));

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const composeAvailable = spawnSync('docker-compose', ['version'], { stdio: 'ignore' }).status === 0;
if (!composeAvailable) console.warn('docker-compose is not installed, so docker-compose.yml is NOT validated (apt-get install -y docker-compose)');
describe.runIf(composeAvailable)('docker-compose.yml', () => {
  it('is a valid compose file with redis, postgres, web and a scalable worker', () => {
    const check = spawnSync('docker-compose', ['-f', 'docker-compose.yml', 'config', '-q'], { cwd: repoRoot, encoding: 'utf8' });
    expect(check.stderr).toBe('');
    expect(check.status).toBe(0);
    const services = spawnSync('docker-compose', ['-f', 'docker-compose.yml', 'config', '--services'], { cwd: repoRoot, encoding: 'utf8' });
    expect(services.stdout.trim().split('\n').sort()).toEqual(['postgres', 'redis', 'web', 'worker']);
  });
});

if (!scaledOutAvailable) {
  console.warn(`Procfile test: ${scaledOutSkipNotice}`);
  describe.skip('Procfile (REDIS_URL / DATABASE_URL not set)', () => {
    it('needs REDIS_URL and DATABASE_URL', () => undefined);
  });
} else {
  describe('Procfile under a Procfile runner (foreman: nf start)', () => {
    const id = randomBytes(5).toString('hex');
    const prefix = `sbtest-procfile-${id}`;
    const schema = `sb_test_procfile_${id}`;
    const dataDir = mkdtempSync(join(tmpdir(), 'switchboard-procfile-'));
    let double: OpenAiProviderDouble | undefined;

    afterAll(async () => {
      await double?.close();
      rmSync(dataDir, { recursive: true, force: true });
      await removeRedisPrefix(REDIS_URL!, prefix);
      await dropSchema(DATABASE_URL!, schema);
    });

    it('starts web and worker from the Procfile, answers a completion, and stops on SIGINT', async () => {
      double = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
      double.script('alpha', { kind: 'text', text: 'Hello from the Procfile', usage: { prompt_tokens: 5, completion_tokens: 4 } });
      const port = await freePort();
      const environment = {
        ...testEnvironment({ openAiUrl: double.url }, dataDir),
        REDIS_URL: REDIS_URL!,
        DATABASE_URL: DATABASE_URL!,
        SWITCHBOARD_REDIS_PREFIX: prefix,
        SWITCHBOARD_DATABASE_SCHEMA: schema,
        SWITCHBOARD_WORKER_CONCURRENCY: '16',
        LOG_LEVEL: 'info',
      };
      const runner = spawn(join(repoRoot, 'node_modules/.bin/nf'), ['start', '--procfile', 'Procfile', '--env', '/dev/null', '--port', String(port), '--raw'], {
        cwd: repoRoot,
        env: environment,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      runner.stdout.on('data', (data: Buffer) => (output += data.toString()));
      runner.stderr.on('data', (data: Buffer) => (output += data.toString()));
      const exited = new Promise<number | null>((resolve) => runner.once('exit', resolve));
      try {
        const base = `http://127.0.0.1:${port}`;
        await eventually(async () => expect((await fetch(`${base}/healthz`)).status).toBe(200), 30_000);
        await eventually(() => expect(output).toMatch(/Switchboard worker \S+ ready/), 30_000);
        const created = await fetch(`${base}/admin/v1/keys`, { method: 'POST', headers: { authorization: `Bearer ${testAdminToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'procfile' }) });
        expect(created.status).toBe(201);
        const { key } = await created.json();
        const response = await fetch(`${base}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'svc/alpha', messages: hello }) });
        expect(response.status).toBe(200);
        const body = await response.json();
        expect(body.choices[0].message.content).toBe('Hello from the Procfile');
        expect(double.requests).toHaveLength(1);
      } finally {
        runner.kill('SIGINT');
        const timer = setTimeout(() => runner.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      // Both processes are gone (exec: nothing between the runner and Node swallowed the signal).
      await eventually(async () => expect(await fetch(`http://127.0.0.1:${port}/healthz`).then(() => 'up', () => 'down')).toBe('down'), 5000);
      expect(output).toMatch(/ingress draining/);
      expect(output).toMatch(/worker finishing its active jobs/);
    }, 60_000);
  });
}
