import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { findProcesses, processTree } from './proc-stats.js';
import { freePort, repoRoot, sleep, startChild, waitForHttp, waitForLog, type Child } from './processes.js';

// The systems under test. Each one is started once per run and kept up for the whole run, so that
// runs against the targets can be interleaved.

export interface Target {
  name: string;
  label: string;
  /** Where the load goes (POST). */
  url: string;
  /** Extra request headers, `name: value`. */
  headers: string[];
  /** The processes whose CPU and memory count as this target's (the gateway, not the provider). */
  pids(): number[];
  /** Named groups of processes for a breakdown (ingress, workers, redis). */
  parts(): Record<string, number[]>;
  notes: string[];
  stop(): Promise<void>;
}

export interface TargetContext {
  tmp: string;
  logDir: string;
  providerPort: number;
  providerPid: number;
  redisUrl: string;
  databaseUrl: string;
  /** Distinguishes this run's Redis keys. */
  runId: string;
  /** The Switchboard tree to run (its src/ and node_modules/); the repository by default. */
  switchboardDir: string;
}

export const targetNames = ['direct', 'nginx', 'node-proxy', 'portkey', 'embedded', 'scaled-1', 'scaled-2', 'scaled-4', 'scaled-lists-1', 'scaled-lists-2', 'scaled-lists-4'] as const;
export type TargetName = (typeof targetNames)[number];

export const adminToken = 'sb-admin-bench-token-0123456789';
export const chatPath = '/v1/chat/completions';
/**
 * Switchboard keeps one keep-alive pool of at most 512 connections per provider and process, so
 * idle streams are spread over this many catalog providers (all pointing at the same fast
 * provider) to hold thousands open at once. See BENCHMARKS.md.
 */
export const idleProviders = 40;

const node = process.execPath;

export function switchboardCatalog(providerPort: number): string {
  const base = `http://127.0.0.1:${providerPort}/v1`;
  const lines = ['providers:', '  fast:', '    api: openai', `    base_url: ${base}`, '    api_key: bench-upstream-key'];
  for (let i = 0; i < idleProviders; i += 1) lines.push(`  idle-${i}:`, '    api: openai', `    base_url: ${base}`, '    api_key: bench-upstream-key');
  lines.push('models:');
  const model = (id: string, provider: string, upstream: string) =>
    lines.push(`  - id: svc/${id}`, `    provider: ${provider}`, `    upstream_model: ${upstream}`, '    context_length: 32768', '    max_output_tokens: 1000', '    pricing: { prompt_usd_per_million: 1, completion_usd_per_million: 2 }');
  model('bench', 'fast', 'bench');
  model('paced-20-5', 'fast', 'paced-20-5');
  model('paced-20-0', 'fast', 'paced-20-0');
  for (let i = 0; i < idleProviders; i += 1) model(`idle-${i}`, `idle-${i}`, 'idle');
  return `${lines.join('\n')}\n`;
}

export function directTarget(context: TargetContext): Target {
  return {
    name: 'direct',
    label: 'provider directly (floor)',
    url: `http://127.0.0.1:${context.providerPort}${chatPath}`,
    headers: ['authorization: Bearer bench-upstream-key'],
    pids: () => [],
    parts: () => ({}),
    notes: [],
    stop: async () => {},
  };
}

export function nginxAvailable(): boolean {
  try {
    execFileSync('nginx', ['-v'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export async function startNginx(context: TargetContext): Promise<Target> {
  const dir = join(context.tmp, 'nginx');
  mkdirSync(join(dir, 'temp'), { recursive: true });
  const port = await freePort();
  const conf = `
user root;
daemon off;
worker_processes 1;
worker_rlimit_nofile 19000;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 18000; }
http {
  access_log off;
  client_body_temp_path ${dir}/temp/client;
  proxy_temp_path ${dir}/temp/proxy;
  fastcgi_temp_path ${dir}/temp/fastcgi;
  uwsgi_temp_path ${dir}/temp/uwsgi;
  scgi_temp_path ${dir}/temp/scgi;
  keepalive_requests 1000000;
  upstream provider {
    server 127.0.0.1:${context.providerPort};
    keepalive 512;
    keepalive_requests 1000000;
  }
  server {
    listen 127.0.0.1:${port} backlog=4096;
    location / {
      proxy_pass http://provider;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 300s;
    }
  }
}
`;
  writeFileSync(join(dir, 'nginx.conf'), conf);
  const child = startChild('nginx', 'nginx', ['-e', join(dir, 'error.log'), '-p', dir, '-c', join(dir, 'nginx.conf')], { logDir: context.logDir });
  await waitForHttp(`http://127.0.0.1:${port}/healthz`, 10_000, child);
  return {
    name: 'nginx',
    label: 'nginx 1 worker, plain reverse proxy',
    url: `http://127.0.0.1:${port}${chatPath}`,
    headers: ['authorization: Bearer bench-upstream-key'],
    pids: () => processTree(child.pid),
    parts: () => ({ nginx: processTree(child.pid) }),
    notes: ['worker_processes 1, access_log off, proxy_buffering off, upstream keepalive 512'],
    stop: () => child.stop(),
  };
}

/** node:http + an undici Pool, JSON parsed and re-serialised, SSE piped: what Node itself costs. */
export async function startNodeProxy(context: TargetContext): Promise<Target> {
  const child = startChild('node-proxy', node, ['--import', 'tsx', join(repoRoot, 'bench/node-proxy.ts'), '--port', '0', '--upstream', `http://127.0.0.1:${context.providerPort}/v1`], {
    logDir: context.logDir,
    env: { ...process.env, NODE_ENV: 'production' },
  });
  const port = Number((await waitForLog(child, /listening (\d+)/, 30_000))[1]);
  return {
    name: 'node-proxy',
    label: 'plain Node proxy (node:http + undici Pool)',
    url: `http://127.0.0.1:${port}${chatPath}`,
    headers: ['authorization: Bearer bench-upstream-key'],
    pids: () => processTree(child.pid),
    parts: () => ({ 'node-proxy': processTree(child.pid) }),
    notes: ['no auth, no accounting: JSON bodies parsed and re-serialised, SSE piped'],
    stop: () => child.stop(),
  };
}

export function portkeyAvailable(): boolean {
  return existsSync(join(repoRoot, 'node_modules/@portkey-ai/gateway/build/start-server.js'));
}

export async function startPortkey(context: TargetContext): Promise<Target> {
  const port = await freePort();
  const child = startChild(
    'portkey',
    node,
    ['--import', join(repoRoot, 'bench/portkey-preload.mjs'), join(repoRoot, 'node_modules/@portkey-ai/gateway/build/start-server.js'), `--port=${port}`, '--headless'],
    { logDir: context.logDir, env: { ...process.env, NODE_ENV: 'production' } },
  );
  await waitForHttp(`http://127.0.0.1:${port}/`, 30_000, child);
  return {
    name: 'portkey',
    label: 'Portkey gateway 1.15.2',
    url: `http://127.0.0.1:${port}${chatPath}`,
    headers: ['authorization: Bearer bench-upstream-key', 'x-portkey-provider: openai', `x-portkey-custom-host: http://127.0.0.1:${context.providerPort}/v1`],
    pids: () => processTree(child.pid),
    parts: () => ({ portkey: processTree(child.pid) }),
    notes: ['streams need bench/portkey-preload.mjs (upstream stream responses re-wrapped with writable headers) on Node 20'],
    stop: () => child.stop(),
  };
}

async function createKey(baseUrl: string): Promise<string> {
  const response = await fetch(`${baseUrl}/admin/v1/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench' }),
  });
  const body = (await response.json()) as { key?: string };
  if (response.status !== 201 || !body.key) throw new Error(`Creating a key failed: ${response.status} ${JSON.stringify(body)}`);
  return body.key;
}

function switchboardEnvironment(context: TargetContext, port: number, dataDir: string): NodeJS.ProcessEnv {
  // The embedded targets run the default deployment: a REDIS_URL or DATABASE_URL in the bench's own
  // environment (set for the scaled-out targets) would turn them into scaled-out processes.
  const { REDIS_URL: _redis, DATABASE_URL: _database, ...inherited } = process.env;
  return {
    ...inherited,
    PORT: String(port),
    HOST: '127.0.0.1',
    SWITCHBOARD_CATALOG: join(context.tmp, 'catalog.yaml'),
    SWITCHBOARD_DATA_DIR: dataDir,
    SWITCHBOARD_ADMIN_TOKEN: adminToken,
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
    // Enough job slots for the idle-stream test; the load tests never have this many in flight.
    SWITCHBOARD_WORKER_CONCURRENCY: '12000',
    SWITCHBOARD_DRAIN_DEADLINE_MS: '2000',
    NODE_ENV: 'production',
  };
}

/**
 * A collector that accepts OTLP/HTTP trace exports and drops them, so that the `embedded-traced`
 * target pays for building and exporting spans, not for a collector's work.
 */
async function startTraceSink(): Promise<string> {
  const { createServer } = await import('node:http');
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref();
  const address = server.address();
  return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/v1/traces`;
}

export async function startEmbedded(context: TargetContext, name = 'embedded', extraEnv: NodeJS.ProcessEnv = {}): Promise<Target> {
  const port = await freePort();
  const dataDir = join(context.tmp, `${name}-data`);
  mkdirSync(dataDir, { recursive: true });
  // The same program as `npm start` (tsx src/main.ts), run as one node process so that its pid is the gateway's.
  const child = startChild(name, node, ['--import', 'tsx', 'src/main.ts'], { logDir: context.logDir, env: { ...switchboardEnvironment(context, port, dataDir), ...extraEnv }, cwd: context.switchboardDir });
  const base = `http://127.0.0.1:${port}`;
  await waitForHttp(`${base}/healthz`, 30_000, child);
  const key = await createKey(base);
  return {
    name,
    label: name === 'embedded' ? 'Switchboard embedded (npm start)' : name === 'embedded-traced' ? 'Switchboard embedded, OpenTelemetry traces exported' : `Switchboard embedded, ${context.switchboardDir}`,
    url: `${base}${chatPath}`,
    headers: [`authorization: Bearer ${key}`],
    pids: () => [child.pid],
    parts: () => ({ gateway: [child.pid] }),
    notes: [],
    stop: () => child.stop(),
  };
}

/** The embedded gateway with tracing on: every span built and exported (OTLP/HTTP JSON) to a sink. */
export async function startEmbeddedTraced(context: TargetContext): Promise<Target> {
  const endpoint = await startTraceSink();
  return startEmbedded(context, 'embedded-traced', { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: 'switchboard-bench' });
}

export function scaledOutAvailable(switchboardDir: string): boolean {
  return existsSync(join(switchboardDir, 'src/ingress/ingress-main.ts')) && existsSync(join(switchboardDir, 'src/workers/worker-main.ts'));
}

export function redisPids(redisUrl: string): number[] {
  const port = new URL(redisUrl).port || '6379';
  return findProcesses('redis-server', `:${port}`);
}

/** `scaled-<workers>` (BullMQ, the default queue) or `scaled-lists-<workers>` (SWITCHBOARD_QUEUE=lists). */
export function scaledTargetName(name: string): { workers: number; queue: 'bullmq' | 'lists' } | undefined {
  const match = /^scaled-(lists-)?(\d+)$/.exec(name);
  return match ? { workers: Number(match[2]), queue: match[1] ? 'lists' : 'bullmq' } : undefined;
}

/** `nodeArgs` go before each process's script (bench/profile.ts passes `--cpu-prof`). */
export async function startScaledOut(context: TargetContext, workers: number, schema: string, queue: 'bullmq' | 'lists' = 'bullmq', nodeArgs: string[] = []): Promise<Target> {
  const port = await freePort();
  const name = queue === 'lists' ? `scaled-lists-${workers}` : `scaled-${workers}`;
  const dataDir = join(context.tmp, `${name}-data`);
  mkdirSync(dataDir, { recursive: true });
  const environment = {
    ...switchboardEnvironment(context, port, dataDir),
    REDIS_URL: context.redisUrl,
    DATABASE_URL: context.databaseUrl,
    SWITCHBOARD_REDIS_PREFIX: `sbbench-${context.runId}-${name}`,
    SWITCHBOARD_DATABASE_SCHEMA: schema,
    SWITCHBOARD_QUEUE: queue,
  };
  const ingress = startChild(`${name}-ingress`, node, [...nodeArgs, '--import', 'tsx', 'src/ingress/ingress-main.ts'], { logDir: context.logDir, env: environment, cwd: context.switchboardDir });
  const base = `http://127.0.0.1:${port}`;
  const workerChildren: Child[] = [];
  try {
    await waitForHttp(`${base}/healthz`, 30_000, ingress);
    for (let i = 0; i < workers; i += 1) {
      workerChildren.push(startChild(`${name}-worker-${i}`, node, [...nodeArgs, '--import', 'tsx', 'src/workers/worker-main.ts'], { logDir: context.logDir, env: environment, cwd: context.switchboardDir }));
    }
    await Promise.all(workerChildren.map((worker) => waitForLog(worker, /ready/, 30_000)));
  } catch (error) {
    await Promise.all([ingress.stop(), ...workerChildren.map((worker) => worker.stop())]);
    throw error;
  }
  const key = await createKey(base);
  await sleep(200);
  const workerPids = () => workerChildren.map((worker) => worker.pid);
  return {
    name,
    label: `Switchboard scaled out, ingress + ${workers} worker${workers > 1 ? 's' : ''}${queue === 'lists' ? ', lists queue' : ''}`,
    url: `${base}${chatPath}`,
    headers: [`authorization: Bearer ${key}`],
    pids: () => [ingress.pid, ...workerPids()],
    parts: () => ({ ingress: [ingress.pid], workers: workerPids(), redis: redisPids(context.redisUrl) }),
    notes: [],
    stop: async () => {
      await Promise.all([ingress.stop(), ...workerChildren.map((worker) => worker.stop())]);
    },
  };
}
