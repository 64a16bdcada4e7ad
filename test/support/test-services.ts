import { spawnSync } from 'node:child_process';
import type { TestProject } from 'vitest/node';

// vitest globalSetup: where the Redis and PostgreSQL suites get their services, decided once per run.
//   1. REDIS_URL / DATABASE_URL when set (CI, a machine with its own services);
//   2. else containers, when a Docker engine answers (testcontainers; the docker CLI when the
//      installed testcontainers cannot load on this Node);
//   3. else those suites skip, and this prints one loud line saying why. Under CI they fail instead.
// The URLs go into process.env before any test file loads (test workers inherit it), and are
// also provided as `redisUrl` / `databaseUrl` for inject().

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
    databaseUrl: string;
  }
}

interface ServiceSpec {
  variable: 'REDIS_URL' | 'DATABASE_URL';
  image: string;
  port: number;
  environment: Record<string, string>;
  /** The log line that says the service accepts connections, and how many times it must appear. */
  ready: { pattern: RegExp; times: number };
  url(host: string, port: number): string;
}

const services: ServiceSpec[] = [
  {
    variable: 'REDIS_URL',
    image: 'redis:7-alpine',
    port: 6379,
    environment: {},
    ready: { pattern: /Ready to accept connections/, times: 1 },
    url: (host, port) => `redis://${host}:${port}`,
  },
  {
    variable: 'DATABASE_URL',
    image: 'postgres:16-alpine',
    port: 5432,
    environment: { POSTGRES_USER: 'postgres', POSTGRES_PASSWORD: 'switchboard-test', POSTGRES_DB: 'test' },
    // The image's init script starts the server once, stops it, then starts it for good.
    ready: { pattern: /database system is ready to accept connections/, times: 2 },
    url: (host, port) => `postgres://postgres:switchboard-test@${host}:${port}/test`,
  },
];

interface Started {
  url: string;
  stop(): Promise<void>;
}

type Starter = (spec: ServiceSpec) => Promise<Started>;

/** testcontainers: its Ryuk container removes what we started even if this run is killed. */
async function testcontainersStarter(): Promise<Starter> {
  const loaded = await import('testcontainers').catch((error: Error) => {
    throw new Error(`the installed testcontainers does not load on Node ${process.version} (${error.message.split('\n')[0]})`);
  });
  const { GenericContainer, Wait, getContainerRuntimeClient } = loaded;
  await getContainerRuntimeClient(); // throws when no engine answers
  return async (spec) => {
    const container = await new GenericContainer(spec.image)
      .withEnvironment(spec.environment)
      .withExposedPorts(spec.port)
      .withWaitStrategy(Wait.forLogMessage(spec.ready.pattern, spec.ready.times))
      .withStartupTimeout(120_000)
      .start();
    return { url: spec.url(container.getHost(), container.getMappedPort(spec.port)), stop: async () => void (await container.stop()) };
  };
}

function docker(args: string[], timeoutMs = 120_000): { ok: boolean; out: string } {
  const result = spawnSync('docker', args, { encoding: 'utf8', timeout: timeoutMs });
  return { ok: result.status === 0, out: `${result.stdout ?? ''}${result.stderr ?? ''}`.trim() || String(result.error?.message ?? '') };
}

/** The docker CLI, for when testcontainers cannot load; `--rm` removes the container once stopped. */
async function dockerCliStarter(): Promise<Starter> {
  const engine = docker(['version', '--format', '{{.Server.Version}}'], 10_000);
  if (!engine.ok) throw new Error(engine.out.split('\n').find((line) => /cannot connect|error|not found/i.test(line)) ?? engine.out);
  return async (spec) => {
    const environment = Object.entries(spec.environment).flatMap(([name, value]) => ['-e', `${name}=${value}`]);
    const run = docker(['run', '-d', '--rm', '-p', `127.0.0.1::${spec.port}`, ...environment, spec.image]);
    if (!run.ok) throw new Error(`docker run ${spec.image} failed: ${run.out}`);
    const id = run.out.split('\n').at(-1)!;
    const stop = async () => void docker(['stop', '-t', '2', id]);
    const deadline = Date.now() + 120_000;
    while ((docker(['logs', id]).out.match(new RegExp(spec.ready.pattern, 'g')) ?? []).length < spec.ready.times) {
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`${spec.image} did not become ready within 120 s`);
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const mapped = /:(\d+)\s*$/.exec(docker(['port', id, `${spec.port}/tcp`]).out.split('\n')[0] ?? '');
    if (!mapped) {
      await stop();
      throw new Error(`docker port ${id} gave no host port`);
    }
    return { url: spec.url('127.0.0.1', Number(mapped[1])), stop };
  };
}

async function findStarter(): Promise<{ starter?: Starter; why?: string }> {
  const reasons: string[] = [];
  for (const [name, make] of [['testcontainers', testcontainersStarter], ['docker CLI', dockerCliStarter]] as const) {
    try {
      return { starter: await make() };
    } catch (error) {
      reasons.push(`${name}: ${(error as Error).message.split('\n')[0]}`);
    }
  }
  return { why: reasons.join('; ') };
}

function isCi(environment: NodeJS.ProcessEnv): boolean {
  return Boolean(environment.CI) && environment.CI !== 'false' && environment.CI !== '0';
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started: Started[] = [];
  const missing = services.filter((spec) => !process.env[spec.variable]);
  let why: string | undefined;
  if (missing.length > 0) {
    const found = await findStarter();
    why = found.why;
    if (found.starter) {
      try {
        for (const spec of missing) {
          const service = await found.starter(spec);
          started.push(service);
          process.env[spec.variable] = service.url;
        }
        process.stdout.write(`Test services: started ${missing.map((spec) => spec.image).join(' and ')} in containers (${missing.map((spec) => spec.variable).join(', ')} were not set).\n`);
      } catch (error) {
        why = (error as Error).message;
      }
    }
  }
  const unavailable = services.filter((spec) => !process.env[spec.variable]).map((spec) => spec.variable);
  if (unavailable.length > 0) {
    const reason = `${unavailable.join(' and ')} not set and no container could be started (${why})`;
    if (isCi(process.env)) {
      await Promise.all(started.map((service) => service.stop()));
      throw new Error(`CI must run the Redis and PostgreSQL suites, but ${reason}.`);
    }
    // Containers already started stay: the Redis-only suites can still use one.
    process.stderr.write(`\n!!! ${reason}, so the scaled-out deployment, Redis and PostgreSQL suites are SKIPPED. Set REDIS_URL=redis://127.0.0.1:6379 DATABASE_URL=postgres://postgres@127.0.0.1:5432/test, or start a Docker engine.\n\n`);
  }
  project.provide('redisUrl', process.env.REDIS_URL ?? '');
  project.provide('databaseUrl', process.env.DATABASE_URL ?? '');
  return async () => {
    await Promise.all(started.map((service) => service.stop()));
  };
}
