import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from './doubles/openai-provider-double.js';
import { testAdminToken } from './support/gateway-harness.js';
import { assembleFinalStage, parseDockerfile, stageEnvironment, type Assembled, type Stage } from './support/image-layout.js';
import { childrenOf, killQuietly, repoRoot, runProcess, type RunningProcess } from './support/process-runner.js';
import { DATABASE_URL, dropSchema, REDIS_URL, removeRedisPrefix, scaledOutAvailable, scaledOutSkipNotice } from './support/scaled-harness.js';
import { testCatalogYaml } from './support/test-catalog.js';

// The Docker image without a Docker engine: the final stage's COPY lines are read from the
// Dockerfile and their files laid out in a folder (node_modules: the lockfile's production
// packages only, as `npm ci --omit=dev` installs them), then the gateway starts there the way the
// image's CMD (and docker-compose's web command) starts it, and must answer /healthz, pass the
// image's HEALTHCHECK and serve the dashboard.

const stages: Stage[] = parseDockerfile(readFileSync(join(repoRoot, 'Dockerfile'), 'utf8'));
const final = stages.at(-1)!;
const packageJson = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };

// Real processes start in seconds, but a busy two-core machine can make that many seconds.
vi.setConfig({ testTimeout: 60_000 });

let folder: string;
let image: Assembled;
let double: OpenAiProviderDouble;
const running: RunningProcess[] = [];

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'switchboard-image-'));
  image = assembleFinalStage(repoRoot, stages, join(folder, 'app'));
  double = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
  writeFileSync(join(folder, 'catalog.yaml'), testCatalogYaml({ openAiUrl: double.url }));
});

afterEach(() => {
  for (const process of running.splice(0)) {
    if (process.child.pid !== undefined) childrenOf(process.child.pid).forEach(killQuietly);
    killQuietly(process.child.pid);
  }
});

afterAll(async () => {
  await double?.close();
  rmSync(folder, { recursive: true, force: true });
});

/** The image's environment (its ENV lines, paths inside the image mapped into the folder) with test settings on top. */
function imageEnvironment(extra: Record<string, string>): Record<string, string> {
  const environment: Record<string, string> = { PATH: process.env.PATH ?? '' };
  for (const [name, value] of Object.entries(stageEnvironment(final))) environment[name] = value.startsWith('/') ? image.toHost(value) : value;
  return { ...environment, PORT: '0', SWITCHBOARD_CATALOG: join(folder, 'catalog.yaml'), SWITCHBOARD_ADMIN_TOKEN: testAdminToken, SB_TEST_UPSTREAM_KEY: 'upstream-secret-key', SWITCHBOARD_DRAIN_DEADLINE_MS: '2000', ...extra };
}

/** Runs an exec-form command in the folder, as the image would (its `node` is this Node). */
function runInImage(command: string[], environment: Record<string, string>): RunningProcess {
  const [program, ...args] = command;
  const started = runProcess(program === 'node' ? process.execPath : program!, args, environment, image.root);
  running.push(started);
  return started;
}

function healthcheckCommand(): string[] {
  const line = final.instructions.find((entry) => entry.keyword === 'HEALTHCHECK');
  if (!line) throw new Error('The Dockerfile has no HEALTHCHECK');
  return JSON.parse(/\bCMD\s+(\[.*\])\s*$/.exec(line.raw)![1]!) as string[];
}

async function checkServes(base: string, environment: Record<string, string>): Promise<void> {
  const health = await fetch(`${base}/healthz`);
  expect(health.status).toBe(200);
  const healthcheck = spawnSync(process.execPath, healthcheckCommand().slice(1), { cwd: image.root, env: environment, timeout: 10_000 });
  expect(healthcheck.status).toBe(0);
  const page = await fetch(`${base}/dashboard/`);
  expect(page.status).toBe(200);
  expect(page.headers.get('content-type')).toMatch(/text\/html/);
  // The dashboard's own files (web/) and its ES modules from node_modules are both in the image.
  const html = await page.text();
  const script = /src="(assets\/[\w.-]+\.js)"/.exec(html)?.[1];
  expect(script).toBeDefined();
  expect((await fetch(`${base}/dashboard/${script}`)).status).toBe(200);
  expect((await fetch(`${base}/dashboard/vendor/preact.js`)).status).toBe(200);
}

describe('the Dockerfile', () => {
  it('builds in stages, installs production dependencies only, runs as a non-root user and has a HEALTHCHECK', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const install = stages.slice(0, -1).flatMap((stage) => stage.instructions).find((entry) => entry.keyword === 'RUN' && /npm ci/.test(entry.raw));
    expect(install?.raw).toMatch(/npm ci --omit=dev/);
    expect(final.instructions.some((entry) => entry.keyword === 'RUN' && /npm (ci|install)/.test(entry.raw))).toBe(false);
    const user = final.instructions.filter((entry) => entry.keyword === 'USER').at(-1)?.args[0];
    expect(user).toBeDefined();
    expect(['root', '0']).not.toContain(user);
    expect(healthcheckCommand()[0]).toBe('node');
    expect(stageEnvironment(final).HOST).toBe('0.0.0.0');
  });

  it('copies what the gateway needs at run time, and not the tests, benchmarks or local data', () => {
    for (const needed of ['package.json', 'src/main.ts', 'src/ingress/ingress-main.ts', 'src/workers/worker-main.ts', 'web/dashboard/index.html', 'bin/switchboard.mjs']) expect(image.copied).toContain(needed);
    expect(image.copied.filter((path) => /^(test|bench|data|node_modules)\//.test(path))).toEqual([]);
    expect(existsSync(join(image.root, 'node_modules', 'tsx'))).toBe(true);
    for (const devOnly of Object.keys(packageJson.devDependencies)) expect(existsSync(join(image.root, 'node_modules', devOnly))).toBe(false);
  });

  it("starts from the image's files with the image's CMD, answers /healthz, passes its HEALTHCHECK and serves the dashboard", async () => {
    const cmd = final.instructions.filter((entry) => entry.keyword === 'CMD').at(-1)!.args;
    expect(cmd[0]).toBe('node'); // no npm or shell layer between the container's stop signal and the server
    const environment = imageEnvironment({});
    const gateway = runInImage(cmd, environment);
    const [, port] = await gateway.waitFor(/listening on http:\/\/0\.0\.0\.0:(\d+)/, 30_000);
    await checkServes(`http://127.0.0.1:${port}`, { ...environment, PORT: port! });
    // The admin API works end to end, with the database in the image's data folder.
    const created = await fetch(`http://127.0.0.1:${port}/admin/v1/keys`, { method: 'POST', headers: { authorization: `Bearer ${testAdminToken}` }, body: '{"name":"image"}' });
    expect(created.status).toBe(201);
    expect(readdirSync(environment.SWITCHBOARD_DATA_DIR!)).toContain('switchboard.db');
    gateway.child.kill('SIGTERM');
    expect((await gateway.exited).code).toBe(0);
  });

  if (!scaledOutAvailable) console.warn(`docker-compose web command in the image: ${scaledOutSkipNotice}`);
  it.runIf(scaledOutAvailable)("runs docker-compose's web command from the image's files: /healthz, HEALTHCHECK and the dashboard", async () => {
    const compose = parseYaml(readFileSync(join(repoRoot, 'docker-compose.yml'), 'utf8')) as { services: Record<string, { command: string[]; environment?: Record<string, string> }> };
    for (const service of ['web', 'worker']) expect(existsSync(join(image.root, compose.services[service]!.command.at(-1)!))).toBe(true);
    const id = randomBytes(5).toString('hex');
    const environment = imageEnvironment({ HOST: compose.services.web!.environment!.HOST!, REDIS_URL: REDIS_URL!, DATABASE_URL: DATABASE_URL!, SWITCHBOARD_REDIS_PREFIX: `sbtest-image-${id}`, SWITCHBOARD_DATABASE_SCHEMA: `sb_test_image_${id}` });
    try {
      const web = runInImage(compose.services.web!.command, environment);
      const [, port] = await web.waitFor(/listening on http:\/\/0\.0\.0\.0:(\d+)/, 30_000);
      await checkServes(`http://127.0.0.1:${port}`, { ...environment, PORT: port! });
      web.child.kill('SIGTERM');
      expect((await web.exited).code).toBe(0);
    } finally {
      await removeRedisPrefix(REDIS_URL!, environment.SWITCHBOARD_REDIS_PREFIX!).catch(() => undefined);
      await dropSchema(DATABASE_URL!, environment.SWITCHBOARD_DATABASE_SCHEMA!).catch(() => undefined);
    }
  }, 60_000);
});

const engine = spawnSync('docker', ['version', '--format', '{{.Server.Version}}'], { encoding: 'utf8', timeout: 10_000 }).status === 0;
if (!engine) console.warn('the Docker image: no Docker engine answers, so the image is NOT built for real here (its file layout is tested above)');
describe.runIf(engine)('the Docker image, built for real', () => {
  const tag = `switchboard-test:${randomBytes(4).toString('hex')}`;
  const docker = (...args: string[]) => spawnSync('docker', args, { cwd: repoRoot, encoding: 'utf8', timeout: 600_000 });
  afterAll(() => void docker('image', 'rm', '-f', tag));

  it('builds, runs as a non-root user, becomes healthy, serves the dashboard and drains on docker stop', async () => {
    const build = docker('build', '-t', tag, '.');
    expect(build.status, build.stderr).toBe(0);
    expect(docker('run', '--rm', '--entrypoint', 'id', tag, '-u').stdout.trim()).not.toBe('0');
    const run = docker('run', '-d', '-p', '127.0.0.1::8080', '-e', `SWITCHBOARD_ADMIN_TOKEN=${testAdminToken}`, tag);
    expect(run.status, run.stderr).toBe(0);
    const id = run.stdout.trim();
    try {
      const port = /:(\d+)\s*$/.exec(docker('port', id, '8080/tcp').stdout.split('\n')[0]!)![1];
      const deadline = Date.now() + 90_000;
      while (docker('inspect', '--format', '{{.State.Health.Status}}', id).stdout.trim() !== 'healthy') {
        if (Date.now() > deadline) throw new Error(`the container never became healthy:\n${docker('logs', id).stdout}`);
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
      expect((await fetch(`http://127.0.0.1:${port}/dashboard/`)).status).toBe(200);
      expect(docker('stop', '-t', '30', id).status).toBe(0);
      expect(docker('inspect', '--format', '{{.State.ExitCode}}', id).stdout.trim()).toBe('0');
    } finally {
      docker('rm', '-f', id);
    }
  }, 600_000);
});

/** Every file under a folder. */
function filesUnder(folder: string): string[] {
  return readdirSync(folder).flatMap((entry) => {
    const path = join(folder, entry);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** `pkg` of 'pkg/sub/path' and '@scope/pkg' of '@scope/pkg/sub'. */
function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

describe('the production install (npm ci --omit=dev)', () => {
  it('has every package that src/ and bin/ import at run time in "dependencies"', () => {
    const importPattern = /(?:^|[\s;])(?:import|export)\s+(?!type\s)(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]|(?:\bimport|\brequire|\btsImport)\s*\(\s*['"]([^'"]+)['"]/gm;
    const builtins = new Set(builtinModules);
    const missing: string[] = [];
    const files = ['src', 'bin'].flatMap((folder) => filesUnder(join(repoRoot, folder))).filter((path) => /\.(m?[jt]s)$/.test(path));
    expect(files.length).toBeGreaterThan(20);
    for (const file of files) {
      for (const match of readFileSync(file, 'utf8').matchAll(importPattern)) {
        const specifier = match[1] ?? match[2]!;
        if (specifier.startsWith('.') || specifier.startsWith('node:') || builtins.has(specifier)) continue;
        const name = packageOf(specifier);
        if (!(name in packageJson.dependencies)) missing.push(`${name} (imported by ${file.slice(repoRoot.length)})`);
      }
    }
    expect(missing).toEqual([]);
  });
});
