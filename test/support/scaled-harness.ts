import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import { registerDeploymentStarter, testEnvironment, type HarnessOptions, type TestDeployment } from './gateway-harness.js';
import { testCatalogYaml } from './test-catalog.js';
import { dropSchema, removeRedisPrefix } from './service-cleanup.js';

// The scaled-out deployment as real processes: two ingress (`web`) and two worker processes, each
// started as the Procfile would (`node --import tsx src/.../x-main.ts`), sharing Redis and
// PostgreSQL. Each deployment gets its own Redis prefix and PostgreSQL schema, so test runs never
// collide; both are removed on close. `url()` alternates between the two ingress ports.

// The services test/support/test-services.ts (vitest globalSetup) resolved: the environment's, or
// containers it started.
export const REDIS_URL = process.env.REDIS_URL || provided('redisUrl');
export const DATABASE_URL = process.env.DATABASE_URL || provided('databaseUrl');

/** Outside a vitest run (bench/scale-out-latency.ts) there is nothing provided, only the environment. */
function provided(name: 'redisUrl' | 'databaseUrl'): string | undefined {
  try {
    return inject(name) || undefined;
  } catch {
    return undefined;
  }
}
export const scaledOutAvailable = Boolean(REDIS_URL && DATABASE_URL);
export const scaledOutSkipNotice = 'no Redis and PostgreSQL (REDIS_URL / DATABASE_URL unset and no Docker engine; see the line at the start of the run); the scaled-out deployment is NOT tested';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const entryPoints = { ingress: 'src/ingress/ingress-main.ts', worker: 'src/workers/worker-main.ts' } as const;

export interface ManagedProcess {
  role: 'ingress' | 'worker';
  child: ChildProcess;
  /** Everything it printed, for diagnostics. */
  output: () => string;
  exited: Promise<number | null>;
  /** Worker only, with `tagWorkers`: the value of the x-test-worker header it sends upstream. */
  tag?: string;
  /** Ingress only. */
  port?: number;
  url?: string;
}

export interface ScaledDeployment extends TestDeployment {
  prefix: string;
  schema: string;
  environment: Record<string, string>;
  ingresses: ManagedProcess[];
  workers: ManagedProcess[];
  /** Starts one more process of the deployment (e.g. a worker to replace a killed one). */
  spawnProcess(role: 'ingress' | 'worker', extraEnvironment?: Record<string, string>): Promise<ManagedProcess>;
  /** With `tagWorkers`: the worker whose upstream call carried these headers (the double's record of it). */
  workerThatSent(headers: Record<string, string>): ManagedProcess;
  /** Takes a stopped worker out of the deployment and starts another in its place. */
  replaceWorker(gone: ManagedProcess): Promise<ManagedProcess>;
}

export interface ScaledOptions extends HarnessOptions {
  ingressCount?: number;
  workerCount?: number;
  /** Each worker sends an `x-test-worker` header upstream, so a test can tell which one holds a job. */
  tagWorkers?: boolean;
}

function spawnManaged(role: 'ingress' | 'worker', environment: Record<string, string>): Promise<ManagedProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', entryPoints[role]], { cwd: repoRoot, env: environment, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const managed: ManagedProcess = { role, child, output: () => output, exited };
  return new Promise<ManagedProcess>((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`${role} did not become ready within 30 s:\n${output}`)), 30_000);
    const fail = (error: Error) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(error);
    };
    const onData = (data: Buffer) => {
      output += data.toString();
      if (output.length > 200_000) output = output.slice(-100_000);
      const listening = /listening on (http:\/\/[\d.]+:(\d+))/.exec(output);
      if (role === 'ingress' && listening && managed.port === undefined) {
        managed.url = listening[1];
        managed.port = Number(listening[2]);
        clearTimeout(timer);
        resolve(managed);
      } else if (role === 'worker' && /Switchboard worker \S+ ready/.test(output)) {
        clearTimeout(timer);
        resolve(managed);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    exited.then((code) => fail(new Error(`${role} exited with ${code} before it was ready:\n${output}`)));
  });
}

async function waitForHealth(url: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      const response = await fetch(`${url}/healthz`);
      if (response.ok) return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`${url}/healthz did not answer`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export async function stopProcess(managed: ManagedProcess, signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 10_000): Promise<number | null> {
  if (managed.child.exitCode === null && managed.child.signalCode === null) managed.child.kill(signal);
  const timer = setTimeout(() => managed.child.kill('SIGKILL'), timeoutMs);
  const code = await managed.exited;
  clearTimeout(timer);
  return code;
}

export { dropSchema, removeRedisPrefix } from './service-cleanup.js';

export async function startScaledDeployment(options: ScaledOptions): Promise<ScaledDeployment> {
  if (!REDIS_URL || !DATABASE_URL) throw new Error(scaledOutSkipNotice);
  const id = randomBytes(5).toString('hex');
  const prefix = `sbtest-${id}`;
  const schema = `sb_test_${id}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'switchboard-scaled-'));
  const environment: Record<string, string> = {
    ...testEnvironment(options, dataDir),
    REDIS_URL,
    DATABASE_URL,
    SWITCHBOARD_REDIS_PREFIX: prefix,
    SWITCHBOARD_DATABASE_SCHEMA: schema,
    // Generous for a 2-core machine running many processes, still well under the test time-outs.
    SWITCHBOARD_WORKER_CONCURRENCY: '64',
    ...options.environment,
  };
  let tags = 0;
  const spawnProcess = async (role: 'ingress' | 'worker', extra: Record<string, string> = {}) => {
    let tag: string | undefined;
    if (role === 'worker' && options.tagWorkers) {
      tag = `w${++tags}`;
      const catalog = join(dataDir, `catalog-${tag}.yaml`);
      writeFileSync(catalog, testCatalogYaml(options).replace('  double:\n    api: openai\n', `  double:\n    api: openai\n    headers: { x-test-worker: ${tag} }\n`));
      extra = { SWITCHBOARD_CATALOG: catalog, ...extra };
    }
    const managed = await spawnManaged(role, { ...environment, ...extra });
    managed.tag = tag;
    if (managed.url) await waitForHealth(managed.url);
    (role === 'ingress' ? ingresses : workers).push(managed);
    return managed;
  };
  const ingresses: ManagedProcess[] = [];
  const workers: ManagedProcess[] = [];
  try {
    // The first process creates the schema; the rest start together.
    await spawnProcess('ingress');
    await Promise.all([
      ...Array.from({ length: (options.ingressCount ?? 2) - 1 }, () => spawnProcess('ingress')),
      ...Array.from({ length: options.workerCount ?? 2 }, () => spawnProcess('worker')),
    ]);
  } catch (error) {
    await Promise.all([...ingresses, ...workers].map((managed) => stopProcess(managed, 'SIGKILL')));
    await cleanUp();
    throw error;
  }

  async function cleanUp(): Promise<void> {
    rmSync(dataDir, { recursive: true, force: true });
    await removeRedisPrefix(REDIS_URL!, prefix).catch(() => undefined);
    await dropSchema(DATABASE_URL!, schema).catch(() => undefined);
  }

  let turn = 0;
  return {
    kind: 'scaled',
    get urls() {
      return ingresses.map((managed) => managed.url!);
    },
    adminToken: environment.SWITCHBOARD_ADMIN_TOKEN!,
    url() {
      const live = ingresses.filter((managed) => managed.child.exitCode === null && managed.child.signalCode === null);
      return live[turn++ % live.length]!.url!;
    },
    prefix,
    schema,
    environment,
    ingresses,
    workers,
    spawnProcess,
    workerThatSent(headers) {
      const tag = headers['x-test-worker'];
      const holder = workers.find((worker) => worker.tag === tag);
      if (!holder) throw new Error(`no worker tagged ${tag}`);
      return holder;
    },
    async replaceWorker(gone) {
      workers.splice(workers.indexOf(gone), 1);
      return spawnProcess('worker');
    },
    async close() {
      // Ingresses drain first (their streams need the workers), then the workers finish.
      await Promise.all(ingresses.map((managed) => stopProcess(managed)));
      await Promise.all(workers.map((managed) => stopProcess(managed)));
      await cleanUp();
    },
  };
}

registerDeploymentStarter('scaled', startScaledDeployment);
