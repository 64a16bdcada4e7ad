import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';

export interface GatewayConfig {
  port: number;
  host: string;
  dataDir: string;
  maxBodyBytes: number;
  /** Bytes a slow SSE reader may fall behind before it is disconnected. */
  maxQueuedStreamBytes: number;
  workerConcurrency: number;
  /** Jobs allowed to wait for a worker before new requests are refused with 503 overloaded. */
  maxQueuedJobs: number;
  drainDeadlineMs: number;
  /** How long an ingress trusts a cached key record changed elsewhere (revocation is never cached). */
  keyCacheMs: number;
  redisUrl?: string;
  databaseUrl?: string;
  logLevel: string;
  /** How long stored responses of the Responses API are kept (SWITCHBOARD_RESPONSE_RETENTION_DAYS, fractions allowed). */
  responseRetentionMs: number;
  /** How often expired stored responses are purged (SWITCHBOARD_RESPONSE_PURGE_INTERVAL_MS). */
  responsePurgeIntervalMs: number;
}

function positiveNumber(environment: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = environment[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got '${raw}'.`);
  return value;
}

function integer(environment: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = environment[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a whole number, got '${raw}'.`);
  return value;
}

export function readConfig(environment: NodeJS.ProcessEnv = process.env): GatewayConfig {
  return {
    port: integer(environment, 'PORT', 8080),
    host: environment.HOST ?? '0.0.0.0',
    dataDir: resolve(environment.SWITCHBOARD_DATA_DIR ?? './data'),
    maxBodyBytes: integer(environment, 'SWITCHBOARD_MAX_BODY_BYTES', 4 * 1024 * 1024),
    maxQueuedStreamBytes: integer(environment, 'SWITCHBOARD_MAX_STREAM_BUFFER_BYTES', 4 * 1024 * 1024),
    workerConcurrency: integer(environment, 'SWITCHBOARD_WORKER_CONCURRENCY', 512),
    maxQueuedJobs: integer(environment, 'SWITCHBOARD_MAX_QUEUED_JOBS', 2000),
    drainDeadlineMs: integer(environment, 'SWITCHBOARD_DRAIN_DEADLINE_MS', 30_000),
    keyCacheMs: integer(environment, 'SWITCHBOARD_KEY_CACHE_MS', 5_000),
    redisUrl: environment.REDIS_URL || undefined,
    databaseUrl: environment.DATABASE_URL || undefined,
    logLevel: environment.LOG_LEVEL ?? 'info',
    responseRetentionMs: Math.round(positiveNumber(environment, 'SWITCHBOARD_RESPONSE_RETENTION_DAYS', 30) * 86_400_000),
    responsePurgeIntervalMs: positiveNumber(environment, 'SWITCHBOARD_RESPONSE_PURGE_INTERVAL_MS', 3_600_000),
  };
}

/** SWITCHBOARD_ADMIN_TOKEN, or a token generated on first start and kept in the data folder. */
export function resolveAdminToken(config: GatewayConfig, environment: NodeJS.ProcessEnv = process.env): { token: string; generated: boolean; path?: string } {
  if (environment.SWITCHBOARD_ADMIN_TOKEN) return { token: environment.SWITCHBOARD_ADMIN_TOKEN, generated: false };
  const path = join(config.dataDir, 'admin-token');
  try {
    return { token: readFileSync(path, 'utf8').trim(), generated: false, path };
  } catch {
    mkdirSync(config.dataDir, { recursive: true });
    const token = `sb-admin-${randomBytes(24).toString('base64url')}`;
    writeFileSync(path, `${token}\n`, { mode: 0o600 });
    return { token, generated: true, path };
  }
}
