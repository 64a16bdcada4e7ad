import { join } from 'node:path';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { GatewayConfig } from './config.js';
import type { Counters } from './counters/counters.js';
import { createMemoryCounters } from './counters/memory-counters.js';
import { LedgerStream, ledgerStreamKey } from './counters/ledger-stream.js';
import { createRedisCounters } from './counters/redis-counters.js';
import { LedgerStreamConsumer } from './store/ledger-stream-consumer.js';
import { storeUnavailable } from './store/store-unavailable.js';
import { openPostgresStore } from './store/postgres-store.js';
import { openSqliteStore } from './store/sqlite-store.js';
import type { QueuedJob } from './job.js';
import type { Store } from './store/store.js';
import { InProcessTransport } from './transport/in-process-transport.js';
import { asUnavailable, openRedis, quitQuietly, RedisNames, waitUntilReady } from './transport/redis-connections.js';
import type { LostJob } from './transport/lost-job-tracker.js';
import type { IngressTransport, WorkerTransport } from './transport/transport.js';
import { queueKinds, type QueueKind } from './transport/job-queue.js';

// Picks the parts behind each interface: PostgreSQL when DATABASE_URL is set, else the embedded
// database file in the data folder; Redis counters and the Redis transport when REDIS_URL is set
// (the scaled-out processes, src/ingress/ingress-main.ts and src/workers/worker-main.ts).

export interface ScaleOutSettings {
  /** Prefix of every Redis key, channel and queue (SWITCHBOARD_REDIS_PREFIX). */
  redisPrefix: string;
  /** The queue between ingress and workers (SWITCHBOARD_QUEUE): BullMQ, or lists of our own. */
  queue: QueueKind;
  /** PostgreSQL schema holding the tables (SWITCHBOARD_DATABASE_SCHEMA); the default search path when unset. */
  databaseSchema?: string;
  /** Ingress: silence after which a running job's worker is taken for dead (SWITCHBOARD_WORKER_SILENCE_MS). */
  workerSilenceMs: number;
  /** Ingress: how long a job whose worker died before its first token waits for a re-run (SWITCHBOARD_RERUN_WAIT_MS). */
  rerunWaitMs: number;
  /** Ingress: how long a job may wait for any worker (SWITCHBOARD_QUEUE_WAIT_MS). */
  queueWaitMs: number;
  /** Worker: heartbeat of a quiet running job (SWITCHBOARD_HEARTBEAT_MS). */
  heartbeatMs: number;
  /**
   * Worker: how long a worker may be silent before its running jobs are re-queued (BullMQ's job
   * lock, or the lists queue's alive key; SWITCHBOARD_JOB_LOCK_MS).
   */
  jobLockMs: number;
  /** Worker: how often stalled jobs are looked for (SWITCHBOARD_STALLED_CHECK_MS). */
  stalledCheckMs: number;
}

function positiveInteger(environment: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = environment[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive whole number, got '${raw}'.`);
  return value;
}

function queueKind(raw: string | undefined): QueueKind {
  if (raw === undefined || raw === '') return 'bullmq';
  if ((queueKinds as readonly string[]).includes(raw)) return raw as QueueKind;
  throw new Error(`SWITCHBOARD_QUEUE must be one of ${queueKinds.join(', ')}, got '${raw}'.`);
}

export function readScaleOutSettings(environment: NodeJS.ProcessEnv = process.env): ScaleOutSettings {
  const redisPrefix = environment.SWITCHBOARD_REDIS_PREFIX || 'switchboard';
  new RedisNames(redisPrefix); // validates
  return {
    redisPrefix,
    queue: queueKind(environment.SWITCHBOARD_QUEUE),
    databaseSchema: environment.SWITCHBOARD_DATABASE_SCHEMA || undefined,
    workerSilenceMs: positiveInteger(environment, 'SWITCHBOARD_WORKER_SILENCE_MS', 4000),
    rerunWaitMs: positiveInteger(environment, 'SWITCHBOARD_RERUN_WAIT_MS', 15_000),
    queueWaitMs: positiveInteger(environment, 'SWITCHBOARD_QUEUE_WAIT_MS', 60_000),
    heartbeatMs: positiveInteger(environment, 'SWITCHBOARD_HEARTBEAT_MS', 1000),
    jobLockMs: positiveInteger(environment, 'SWITCHBOARD_JOB_LOCK_MS', 3000),
    stalledCheckMs: positiveInteger(environment, 'SWITCHBOARD_STALLED_CHECK_MS', 1000),
  };
}

/** The scaled-out processes need both shared services; say so plainly instead of half-starting. */
export function requireScaleOutServices(config: GatewayConfig, processName: string): { redisUrl: string; databaseUrl: string } {
  const missing = [!config.redisUrl && 'REDIS_URL (e.g. redis://127.0.0.1:6379)', !config.databaseUrl && 'DATABASE_URL (e.g. postgres://user@host:5432/switchboard)'].filter(Boolean);
  if (missing.length > 0) throw new Error(`The ${processName} process is part of the scaled-out deployment and needs ${missing.join(' and ')}. For a single process without them, run \`npm start\`.`);
  return { redisUrl: config.redisUrl!, databaseUrl: config.databaseUrl! };
}

export async function openStore(config: GatewayConfig, options: { schema?: string } = {}): Promise<Store> {
  if (config.databaseUrl) return openPostgresStore(config.databaseUrl, { schema: options.schema });
  return openSqliteStore(join(config.dataDir, 'switchboard.db'));
}

/** The ledger as the counters' source of a key's period spend; a store outage is a 503, not a 500. */
function ledgerSpend(store: Store) {
  return (keyId: string, since: string) => store.spentNanosSince(keyId, since).catch((error: unknown) => {
    throw storeUnavailable(error, "read this key's spend");
  });
}

/** A project's period spend: the ledger of its keys. */
function projectLedgerSpend(store: Store) {
  return (projectId: string, since: string) => store.projectSpentNanosSince(projectId, since).catch((error: unknown) => {
    throw storeUnavailable(error, "read this key's project spend");
  });
}

export function openMemoryCounters(store: Store): Counters {
  return createMemoryCounters({ spendSource: ledgerSpend(store), projectSpendSource: projectLedgerSpend(store) });
}

/** The Redis ledger stream of the deployment (records settled but maybe not yet in the store). */
export function openLedgerStream(redis: Redis, settings: ScaleOutSettings): LedgerStream {
  return new LedgerStream(redis, ledgerStreamKey(new RedisNames(settings.redisPrefix).counters));
}

/** Writes settled records the store missed (outage, crash) from the ledger stream; one per worker process. */
export function startLedgerStreamConsumer(stream: LedgerStream, store: Store, logger: Logger): LedgerStreamConsumer {
  const consumer = new LedgerStreamConsumer(stream, store, logger);
  consumer.start();
  return consumer;
}

/**
 * Counters in Redis, shared by every ingress and worker, so limits, budgets and revocations hold
 * across instances. A Redis failure surfaces as a 503 `service_unavailable` with a clear message.
 */
export function openRedisCounters(redis: Redis, settings: ScaleOutSettings, store: Store): Counters {
  const counters = createRedisCounters({
    redis,
    keyPrefix: new RedisNames(settings.redisPrefix).counters,
    spendSource: ledgerSpend(store),
    projectSpendSource: projectLedgerSpend(store),
  });
  const guard = <A extends unknown[], R>(what: string, call: (...args: A) => Promise<R>) => async (...args: A): Promise<R> => {
    try {
      return await call(...args);
    } catch (error) {
      throw asUnavailable(error, what);
    }
  };
  return {
    admit: guard('check this key\'s limits', counters.admit),
    settle: guard('settle this request\'s cost', counters.settle),
    revoke: guard('revoke the key', counters.revoke),
    isRevoked: guard('check the key', counters.isRevoked),
    forgetLedgerRecord: guard('update the ledger stream', counters.forgetLedgerRecord),
    reset: guard('reset the key\'s counters', counters.reset),
    close: counters.close,
  };
}

/** Ingress and workers in one process (`npm start`), joined in memory or, with REDIS_URL, over Redis. */
export interface JoinedParts {
  counters: Counters;
  ingress: IngressTransport;
  worker: WorkerTransport;
  /** How long the ingress may trust a cached key record: forever when it is the only ingress. */
  keyCacheMs: number;
  announceKeyChange?: (publicId: string) => void;
  /** Tells the key directory of changes made through other ingresses (undefined: drop all). */
  onKeyChange(listener: (publicId: string | undefined) => void): void;
  /** Bills streams whose worker (another process) died after the first token; never called in memory. */
  onWorkerLost(listener: (lost: LostJob) => void): void;
  /** Closes what these parts opened (after the ingress drained and the worker closed). */
  close(): Promise<void>;
}

/**
 * Without REDIS_URL: the in-process transport and memory counters. With it, this process is one
 * ingress and one worker of a scaled-out deployment (the Redis queue + pub/sub, Redis counters), so
 * it can run beside `web` and `worker` processes, or as several copies behind a load balancer.
 */
export async function openJoinedParts(config: GatewayConfig, environment: NodeJS.ProcessEnv, store: Store, logger: Logger, onDropped: (job: QueuedJob) => Promise<void>): Promise<JoinedParts> {
  let keyListener: (publicId: string | undefined) => void = () => undefined;
  let lostListener: (lost: LostJob) => void = () => undefined;
  if (!config.redisUrl) {
    const transport = new InProcessTransport({ maxQueued: config.maxQueuedJobs, onDropped });
    return {
      counters: openMemoryCounters(store),
      ingress: transport.ingress,
      worker: transport.worker,
      keyCacheMs: Number.MAX_SAFE_INTEGER,
      onKeyChange: () => undefined,
      onWorkerLost: () => undefined,
      close: async () => undefined,
    };
  }
  const redisUrl = config.redisUrl;
  const settings = readScaleOutSettings(environment);
  // Loaded only here, so the embedded default does not load BullMQ.
  const { createRedisIngressTransport, createRedisWorkerTransport } = await import('./transport/redis-transport-factory.js');
  const countersRedis = openRedis(redisUrl, 'fail-fast', 'sb:embedded:counters', logger);
  await waitUntilReady(countersRedis, redisUrl);
  const ingress = createRedisIngressTransport(redisUrl, settings, config, logger, (publicId) => keyListener(publicId), (lost) => lostListener(lost));
  const worker = createRedisWorkerTransport(redisUrl, settings, logger, (job) => onDropped(job));
  const ledgerStream = openLedgerStream(countersRedis, settings);
  const consumer = startLedgerStreamConsumer(ledgerStream, store, logger);
  return {
    counters: openRedisCounters(countersRedis, settings, store),
    ingress,
    worker,
    keyCacheMs: config.keyCacheMs,
    announceKeyChange: (publicId) => ingress.announceKeyChange(publicId),
    onKeyChange: (listener) => {
      keyListener = listener;
    },
    onWorkerLost: (listener) => {
      lostListener = listener;
    },
    close: async () => {
      await consumer.stop();
      await quitQuietly(countersRedis);
    },
  };
}
