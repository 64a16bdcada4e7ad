import { mkdirSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { adminTokenPath, assertStrongAdminToken, dataDirectory, findAdminToken } from './admin-token.js';

export interface GatewayConfig {
  port: number;
  /** The address the ingress binds: 127.0.0.1 unless HOST says otherwise (containers and Procfile platforms set 0.0.0.0). */
  host: string;
  dataDir: string;
  maxBodyBytes: number;
  /** Bytes of request bodies one ingress process holds while they arrive; beyond, uploads get 503. */
  maxInflightBodyBytes: number;
  /** Nesting depth of arrays and objects a JSON body may have. */
  maxJsonDepth: number;
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
  /** Output tokens below which a budget refuses a request (402) instead of lowering its max tokens (SWITCHBOARD_MIN_OUTPUT_TOKENS). */
  minOutputTokens: number;
}

/** A positive number from the environment (fractions allowed), or the fallback when unset or empty. */
export function positiveNumber(environment: NodeJS.ProcessEnv, name: string, fallback: number): number {
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
    host: environment.HOST || '127.0.0.1',
    dataDir: dataDirectory(environment),
    maxBodyBytes: integer(environment, 'SWITCHBOARD_MAX_BODY_BYTES', 4 * 1024 * 1024),
    maxInflightBodyBytes: integer(environment, 'SWITCHBOARD_MAX_INFLIGHT_BODY_BYTES', 64 * 1024 * 1024),
    maxJsonDepth: integer(environment, 'SWITCHBOARD_MAX_JSON_DEPTH', 64),
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
    minOutputTokens: Math.max(1, integer(environment, 'SWITCHBOARD_MIN_OUTPUT_TOKENS', 16)),
  };
}

/**
 * SWITCHBOARD_ADMIN_TOKEN, or a token generated on first start and kept in the data folder (the
 * CLI finds it by the same rules, see admin-token.ts). A weak token stops the start: it guards
 * every key and the whole ledger.
 */
export function resolveAdminToken(config: GatewayConfig, environment: NodeJS.ProcessEnv = process.env): { token: string; generated: boolean; path?: string } {
  const found = findAdminToken(environment, config.dataDir);
  if (found) {
    assertStrongAdminToken(found);
    return { token: found.token, generated: false, path: found.path };
  }
  const path = adminTokenPath(config.dataDir);
  mkdirSync(config.dataDir, { recursive: true });
  const token = `sb-admin-${randomBytes(24).toString('base64url')}`;
  writeFileSync(path, `${token}\n`, { mode: 0o600 });
  return { token, generated: true, path };
}
