import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from './support/process-runner.js';

// How `npm test` finds Redis and PostgreSQL (test/support/test-services.ts, the vitest
// globalSetup), run as a contributor would meet it: a vitest run of a one-test project that
// prints what its test file sees. Without an engine, DOCKER_HOST points at a socket that does not
// exist, so the outcome does not depend on this machine.

let project: string;

beforeAll(() => {
  project = mkdtempSync(join(tmpdir(), 'switchboard-services-'));
  writeFileSync(
    join(project, 'vitest.config.mjs'),
    `export default { test: { include: ['probe.test.mjs'], globalSetup: [${JSON.stringify(join(repoRoot, 'test/support/test-services.ts'))}] } };\n`,
  );
  writeFileSync(
    join(project, 'probe.test.mjs'),
    "import { it, inject } from 'vitest';\nit('sees', () => { console.log(`SEEN redis=${process.env.REDIS_URL ?? ''} database=${process.env.DATABASE_URL ?? ''} injected=${inject('redisUrl')}`); });\n",
  );
});

afterAll(() => rmSync(project, { recursive: true, force: true }));

async function runVitest(environment: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const base: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? project, NODE_PATH: join(repoRoot, 'node_modules') };
  const child = spawn(process.execPath, [join(repoRoot, 'node_modules/vitest/vitest.mjs'), 'run', '--root', project, '--config', join(project, 'vitest.config.mjs')], {
    cwd: repoRoot,
    env: { ...base, ...environment },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (data: Buffer) => (output += data.toString()));
  child.stderr.on('data', (data: Buffer) => (output += data.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, output };
}

const noEngine = { DOCKER_HOST: 'unix:///nonexistent/switchboard-test-docker.sock' };

describe('Redis and PostgreSQL for npm test', () => {
  it('takes them from REDIS_URL and DATABASE_URL when set, and says nothing about skipping', async () => {
    const { code, output } = await runVitest({ REDIS_URL: 'redis://127.0.0.1:1/', DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', ...noEngine });
    expect(code).toBe(0);
    expect(output).toContain('SEEN redis=redis://127.0.0.1:1/ database=postgres://nobody@127.0.0.1:1/none injected=redis://127.0.0.1:1/');
    expect(output).not.toMatch(/SKIPPED/);
  }, 60_000);

  it('without them and without a Docker engine, runs the rest and says loudly, once, which suites it skips and why', async () => {
    const { code, output } = await runVitest(noEngine);
    expect(code).toBe(0);
    expect(output).toContain('SEEN redis= database=');
    const lines = output.split('\n').filter((line) => line.includes('SKIPPED'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^!!! REDIS_URL and DATABASE_URL not set and no container could be started \(.*docker.*\), so the scaled-out deployment, Redis and PostgreSQL suites are SKIPPED/i);
  }, 60_000);

  it('under CI the same situation fails the run instead of skipping', async () => {
    const { code, output } = await runVitest({ ...noEngine, CI: 'true' });
    expect(code).not.toBe(0);
    expect(output).toContain('CI must run the Redis and PostgreSQL suites, but REDIS_URL and DATABASE_URL not set');
    expect(output).not.toContain('SEEN');
  }, 60_000);
});
