import { mkdirSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { isRole, type Role } from './access/principal.js';
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

/** OpenID Connect sign-in for the dashboard (SWITCHBOARD_OIDC_*). */
export interface OidcSettings {
  issuer: URL;
  clientId: string;
  clientSecret?: string;
  /** Where the provider sends the browser back; unset: derived from the address the browser used. */
  redirectUrl?: URL;
  scopes: string;
  /** Lower-case email domains allowed to sign in; empty: any. */
  allowedDomains: string[];
  /** Groups of which a user must be in at least one; empty: no group is required. */
  allowedGroups: string[];
  groupsClaim: string;
  /** Group name to role, from SWITCHBOARD_OIDC_ROLE_MAP ("sb-admins=admin,sb-team=member"). */
  roleMap: Array<{ group: string; role: Role }>;
  /** The text of the sign-in button. */
  label: string;
}

export interface DashboardSignInSettings {
  /** The admin-token sign-in (on unless SWITCHBOARD_DASHBOARD_TOKEN_SIGN_IN=off). */
  tokenSignIn: boolean;
  oidc?: OidcSettings;
}

function list(raw: string | undefined): string[] {
  return (raw ?? '').split(',').map((item) => item.trim()).filter((item) => item !== '');
}

function url(name: string, raw: string): URL {
  try {
    const parsed = new URL(raw);
    if (parsed.protocol === 'https:' || parsed.protocol === 'http:') return parsed;
  } catch {
    // reported below
  }
  throw new Error(`${name} must be an http(s) URL, got '${raw}'.`);
}

function roleMap(raw: string | undefined): OidcSettings['roleMap'] {
  return list(raw).map((entry) => {
    const separator = entry.lastIndexOf('=');
    const group = entry.slice(0, separator).trim();
    const role = entry.slice(separator + 1).trim();
    if (separator <= 0 || group === '' || !isRole(role)) {
      throw new Error(`SWITCHBOARD_OIDC_ROLE_MAP entries are group=role with role admin, member or viewer; got '${entry}'.`);
    }
    return { group, role };
  });
}

export function readDashboardSignIn(environment: NodeJS.ProcessEnv = process.env): DashboardSignInSettings {
  const tokenRaw = (environment.SWITCHBOARD_DASHBOARD_TOKEN_SIGN_IN ?? '').trim().toLowerCase();
  if (!['', 'on', 'off'].includes(tokenRaw)) throw new Error(`SWITCHBOARD_DASHBOARD_TOKEN_SIGN_IN must be on or off, got '${environment.SWITCHBOARD_DASHBOARD_TOKEN_SIGN_IN}'.`);
  const tokenSignIn = tokenRaw !== 'off';
  const issuer = environment.SWITCHBOARD_OIDC_ISSUER?.trim();
  if (!issuer) {
    if (!tokenSignIn) throw new Error('SWITCHBOARD_DASHBOARD_TOKEN_SIGN_IN=off needs SWITCHBOARD_OIDC_ISSUER: otherwise nobody could sign in to the dashboard.');
    return { tokenSignIn };
  }
  const clientId = environment.SWITCHBOARD_OIDC_CLIENT_ID?.trim();
  if (!clientId) throw new Error('SWITCHBOARD_OIDC_ISSUER is set but SWITCHBOARD_OIDC_CLIENT_ID is not.');
  const redirect = environment.SWITCHBOARD_OIDC_REDIRECT_URL?.trim();
  const groupsClaim = environment.SWITCHBOARD_OIDC_GROUPS_CLAIM?.trim() || 'groups';
  return {
    tokenSignIn,
    oidc: {
      issuer: url('SWITCHBOARD_OIDC_ISSUER', issuer),
      clientId,
      clientSecret: environment.SWITCHBOARD_OIDC_CLIENT_SECRET || undefined,
      redirectUrl: redirect ? url('SWITCHBOARD_OIDC_REDIRECT_URL', redirect) : undefined,
      scopes: environment.SWITCHBOARD_OIDC_SCOPES?.trim() || 'openid email profile',
      allowedDomains: list(environment.SWITCHBOARD_OIDC_ALLOWED_DOMAINS).map((domain) => domain.toLowerCase().replace(/^@/, '')),
      allowedGroups: list(environment.SWITCHBOARD_OIDC_ALLOWED_GROUPS),
      groupsClaim,
      roleMap: roleMap(environment.SWITCHBOARD_OIDC_ROLE_MAP),
      label: environment.SWITCHBOARD_OIDC_LABEL?.trim() || 'Sign in with single sign-on',
    },
  };
}

/** How the start-up line names the dashboard's sign-ins. */
export function signInDescription(settings: DashboardSignInSettings): string {
  if (!settings.oidc) return 'the admin token';
  return settings.tokenSignIn ? 'single sign-on or the admin token' : 'single sign-on';
}
