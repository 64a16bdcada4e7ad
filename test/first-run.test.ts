import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { testEnvironment } from './support/gateway-harness.js';
import { childrenOf, freePort, isAlive, killQuietly, portIsFree, repoRoot, runProcess, waitUntilGone, type RunningProcess } from './support/process-runner.js';
import { DATABASE_URL, dropSchema, REDIS_URL, removeRedisPrefix, scaledOutAvailable, scaledOutSkipNotice } from './support/scaled-harness.js';

// The first minutes of a user's life with the gateway, with real processes: `npm start` twice on
// one port, which address it binds and prints, and stopping it through npm or a Procfile runner.

// Real processes start in seconds, but a busy two-core machine can make that many seconds.
vi.setConfig({ testTimeout: 60_000 });

let dataDir: string;
const started: RunningProcess[] = [];
const strays: number[] = [];

beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'switchboard-first-run-'));
});

afterEach(() => {
  // Children first: a failed test must not leave a gateway behind (with the parent gone, they would be orphans).
  for (const running of started.splice(0)) {
    if (running.child.pid !== undefined) childrenOf(running.child.pid).forEach(killQuietly);
    killQuietly(running.child.pid);
  }
  for (const pid of strays.splice(0)) killQuietly(pid);
});

afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

function environment(extra: Record<string, string> = {}): Record<string, string> {
  // The catalog's provider is never called here; the gateway only has to start and stop.
  const base = testEnvironment({ openAiUrl: 'http://127.0.0.1:9/v1' }, dataDir);
  return { ...base, HOME: process.env.HOME ?? dataDir, LOG_LEVEL: 'info', ...extra };
}

function withoutHost(values: Record<string, string>): Record<string, string> {
  const { HOST: _host, ...rest } = values;
  return rest;
}

function startGateway(values: Record<string, string>): RunningProcess {
  const running = runProcess(process.execPath, ['--import', 'tsx', 'src/main.ts'], values);
  started.push(running);
  return running;
}

function startNpm(values: Record<string, string>): RunningProcess {
  const running = runProcess('npm', ['start'], values);
  started.push(running);
  return running;
}

/** The pid in the pino line the serving process logs once it listens. */
async function servingPid(running: RunningProcess): Promise<number> {
  const pid = Number((await running.waitFor(/"pid":(\d+)[^\n]*"msg":"ingress listening"/))[1]);
  strays.push(pid);
  return pid;
}

function externalAddress(): string | undefined {
  return Object.values(networkInterfaces())
    .flat()
    .find((entry) => entry && entry.family === 'IPv4' && !entry.internal)?.address;
}

async function answers(url: string): Promise<boolean> {
  return fetch(url, { signal: AbortSignal.timeout(3000) }).then((reply) => reply.ok, () => false);
}

describe('a second gateway on a taken port', () => {
  it('refuses to start with a clear message and a non-zero exit, and the first keeps the port to itself', async () => {
    const port = await freePort();
    const first = startGateway(environment({ PORT: String(port) }));
    await first.waitFor(/listening on http:/);

    const second = startGateway(environment({ PORT: String(port) }));
    const { code } = await second.exited;
    expect(code).not.toBe(0);
    expect(second.output()).toContain(`Switchboard could not start: The gateway cannot listen on 127.0.0.1:${port}: the port is already in use`);
    expect(second.output()).not.toMatch(/listening on/);

    expect(await answers(`http://127.0.0.1:${port}/healthz`)).toBe(true);
    first.child.kill('SIGTERM');
    expect((await first.exited).code).toBe(0);
    expect(await portIsFree(port)).toBe(true);
  });

  it('refuses a dashboard port that is taken too (SWITCHBOARD_DASHBOARD_PORT)', async () => {
    const taken = await freePort();
    const first = startGateway(environment({ PORT: String(taken) }));
    await first.waitFor(/listening on http:/);

    const second = startGateway(environment({ SWITCHBOARD_DASHBOARD_PORT: String(taken) }));
    const { code } = await second.exited;
    expect(code).not.toBe(0);
    expect(second.output()).toContain(`The dashboard (SWITCHBOARD_DASHBOARD_PORT) cannot listen on 127.0.0.1:${taken}: the port is already in use`);
  });
});

describe('the bind address', () => {
  const external = externalAddress();

  it('is 127.0.0.1 when HOST is unset, and the banner prints exactly that', async () => {
    const gateway = startGateway(withoutHost(environment()));
    const [, port] = await gateway.waitFor(/Switchboard listening on http:\/\/127\.0\.0\.1:(\d+) \(uWebSockets/);
    expect(await answers(`http://127.0.0.1:${port}/healthz`)).toBe(true);
    // Not reachable from another interface of the machine.
    if (external) expect(await answers(`http://${external}:${port}/healthz`)).toBe(false);
    expect(gateway.output()).toContain(`Dashboard: http://127.0.0.1:${port}/dashboard/`);
  });

  it('is every interface with HOST=0.0.0.0, and the banner says so (with the address to open locally)', async () => {
    const gateway = startGateway(environment({ HOST: '0.0.0.0' }));
    const [, port] = await gateway.waitFor(/Switchboard listening on http:\/\/0\.0\.0\.0:(\d+) \(every interface; from this machine http:\/\/127\.0\.0\.1:\d+\)/);
    expect(await answers(`http://127.0.0.1:${port}/healthz`)).toBe(true);
    if (external) expect(await answers(`http://${external}:${port}/healthz`)).toBe(true);
  });
});

describe('stopping npm start', () => {
  it('SIGTERM to the npm process reaches the serving process: it drains, exits and frees the port', async () => {
    const port = await freePort();
    const npm = startNpm(environment({ PORT: String(port) }));
    const pid = await servingPid(npm);
    expect(pid).not.toBe(npm.child.pid); // npm is a separate process; the signal has to get through it
    npm.child.kill('SIGTERM');
    await npm.exited;
    await waitUntilGone(pid, 10_000);
    expect(npm.output()).not.toMatch(/shutdown failed/);
    expect(await portIsFree(port)).toBe(true);
  });

  it('a killed npm (SIGKILL, nothing forwarded) does not leave the gateway running as an orphan', async () => {
    const port = await freePort();
    const npm = startNpm(environment({ PORT: String(port) }));
    const pid = await servingPid(npm);
    npm.child.kill('SIGKILL');
    await npm.exited;
    await waitUntilGone(pid, 10_000);
    expect(npm.output()).toMatch(/is gone; draining and exiting/);
    expect(await portIsFree(port)).toBe(true);
  });
});

if (!scaledOutAvailable) console.warn(`nf start with the Procfile: ${scaledOutSkipNotice}`);
describe.runIf(scaledOutAvailable)('stopping nf start (the Procfile under foreman)', () => {
  const id = randomBytes(5).toString('hex');
  const prefix = `sbtest-firstrun-${id}`;
  const schema = `sb_test_firstrun_${id}`;

  afterAll(async () => {
    await removeRedisPrefix(REDIS_URL!, prefix).catch(() => undefined);
    await dropSchema(DATABASE_URL!, schema).catch(() => undefined);
  });

  it('SIGTERM to nf stops web and worker and frees the port; web binds 0.0.0.0 from the Procfile', async () => {
    const port = await freePort();
    const values = withoutHost(environment({ REDIS_URL: REDIS_URL!, DATABASE_URL: DATABASE_URL!, SWITCHBOARD_REDIS_PREFIX: prefix, SWITCHBOARD_DATABASE_SCHEMA: schema, SWITCHBOARD_WORKER_CONCURRENCY: '4' }));
    const nf = runProcess(join(repoRoot, 'node_modules/.bin/nf'), ['start', '--procfile', 'Procfile', '--env', '/dev/null', '--port', String(port), '--raw'], values);
    started.push(nf);
    await nf.waitFor(new RegExp(`listening on http://0\\.0\\.0\\.0:${port} \\(every interface`));
    await nf.waitFor(/Switchboard worker \S+ ready/);
    const served = childrenOf(nf.child.pid!);
    expect(served, nf.output()).toHaveLength(2); // web and worker, each exec'd in place of its shell
    strays.push(...served);

    nf.child.kill('SIGTERM');
    await nf.exited;
    // A worker waits for BullMQ's blocking fetch to return before it exits; allow for a busy machine.
    await Promise.all(served.map((pid) => waitUntilGone(pid, 30_000)));
    expect(served.filter(isAlive)).toEqual([]);
    expect(await portIsFree(port, '0.0.0.0')).toBe(true);
  }, 60_000);
});
