import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, startChild, waitForHttp } from './processes.js';
import type { ProcessRole } from './stage-map.js';
import { cleanBenchRedis, dropBenchSchema } from './bench-store.js';
import { adminToken, chatPath, startScaledOut, type TargetContext } from './targets.js';

// The gateway under `node --cpu-prof`, for bench/profile.ts: embedded (one process, `npm start`'s
// program) or scaled out (one ingress and ONE worker on Redis and PostgreSQL, started the way the
// benchmark starts them, with a Redis prefix and a schema of their own, both removed afterwards).
// The parent's environment is passed through, so a caller can select an alternative build (for
// example SWITCHBOARD_QUEUE=...).

export interface ProfiledProcess {
  label: string;
  role: ProcessRole;
  pid: number;
}

export interface ProfiledDeployment {
  url: string;
  headers: string[];
  processes: ProfiledProcess[];
  /** Stops every process (they write their profiles on the way out). */
  stop(): Promise<void>;
  /** Copies each process's profile to `outDir` as `<prefix>-<label>.cpuprofile` (or `<prefix>.cpuprofile` alone). */
  keepProfiles(outDir: string, prefix: string): Map<ProfiledProcess, string>;
}

export interface DeploymentContext {
  tmp: string;
  logDir: string;
  switchboardDir: string;
  providerPort: number;
  providerPid: number;
}

function keeper(profileDir: string, processes: ProfiledProcess[], logTail: () => string) {
  return (outDir: string, prefix: string): Map<ProfiledProcess, string> => {
    const files = readdirSync(profileDir).filter((name) => name.endsWith('.cpuprofile'));
    const kept = new Map<ProfiledProcess, string>();
    for (const process of processes) {
      // node names each file CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile.
      const file = files.find((name) => name.split('.')[3] === String(process.pid));
      if (!file) throw new Error(`no profile written by the ${process.label} (pid ${process.pid}):\n${logTail()}`);
      const target = join(outDir, processes.length === 1 ? `${prefix}.cpuprofile` : `${prefix}-${process.label}.cpuprofile`);
      copyFileSync(join(profileDir, file), target);
      kept.set(process, target);
    }
    return kept;
  };
}

export async function startProfiledEmbedded(context: DeploymentContext, name: string): Promise<ProfiledDeployment> {
  const listenPort = await freePort();
  const dataDir = join(context.tmp, `data-${name}`);
  const profileDir = join(context.tmp, `prof-${name}`);
  mkdirSync(dataDir, { recursive: true });
  // The default deployment even when REDIS_URL or DATABASE_URL is set (for the scaled-out mode).
  const { REDIS_URL: _redis, DATABASE_URL: _database, ...inherited } = process.env;
  const gateway = startChild(name, process.execPath, ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, '--import', 'tsx', 'src/main.ts'], {
    logDir: context.logDir,
    cwd: context.switchboardDir,
    env: {
      ...inherited,
      PORT: String(listenPort),
      HOST: '127.0.0.1',
      SWITCHBOARD_CATALOG: join(context.tmp, 'catalog.yaml'),
      SWITCHBOARD_DATA_DIR: dataDir,
      SWITCHBOARD_ADMIN_TOKEN: adminToken,
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
      SWITCHBOARD_DRAIN_DEADLINE_MS: '2000',
      NODE_ENV: 'production',
    },
  });
  const base = `http://127.0.0.1:${listenPort}`;
  await waitForHttp(`${base}/healthz`, 30_000, gateway);
  const created = await fetch(`${base}/admin/v1/keys`, { method: 'POST', headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' }, body: '{"name":"profile"}' });
  const { key } = (await created.json()) as { key: string };
  const processes: ProfiledProcess[] = [{ label: 'embedded', role: 'embedded', pid: gateway.pid }];
  return {
    url: `${base}${chatPath}`,
    headers: [`authorization: Bearer ${key}`],
    processes,
    stop: () => gateway.stop(10_000),
    keepProfiles: keeper(profileDir, processes, () => gateway.logTail()),
  };
}

export async function startProfiledScaled(context: DeploymentContext, name: string): Promise<ProfiledDeployment> {
  const runId = `profile-${process.pid}-${name}`;
  const schema = `switchboard_profile_${process.pid}_${name.replace(/\W/g, '_')}`;
  const targetContext: TargetContext = {
    ...context,
    redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    databaseUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
    runId,
  };
  const profileDir = join(context.tmp, `prof-${name}`);
  await dropBenchSchema(targetContext.databaseUrl, schema);
  // SWITCHBOARD_QUEUE=lists in the environment profiles the lists queue (bench/targets.ts sets it per stack).
  const queue = process.env.SWITCHBOARD_QUEUE === 'lists' ? 'lists' : 'bullmq';
  const target = await startScaledOut(targetContext, 1, schema, queue, ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]);
  const parts = target.parts();
  const processes: ProfiledProcess[] = [
    { label: 'ingress', role: 'ingress', pid: parts.ingress![0]! },
    { label: 'worker', role: 'worker', pid: parts.workers![0]! },
  ];
  return {
    url: target.url,
    headers: target.headers,
    processes,
    async stop() {
      await target.stop();
      await Promise.allSettled([dropBenchSchema(targetContext.databaseUrl, schema), cleanBenchRedis(targetContext.redisUrl, runId)]);
    },
    keepProfiles: keeper(profileDir, processes, () => `see the logs in ${context.logDir}`),
  };
}
