import type { AttemptRecord } from '../job.js';
import type { BudgetAlert, BudgetPeriod, KeyPatch, KeyRecord, LedgerEntry, NewKey } from './store.js';
import { toIsoTime } from './usage-plan.js';

// What the SQLite and PostgreSQL stores share between their drivers and the Store interface: the
// column lists, the values bound to them and the records read back. Each store passes a
// ColumnEncoding for the few columns its driver stores differently (booleans, JSON, bigints).

export type Row = Record<string, unknown>;

export interface ColumnEncoding {
  /** Bound value of a nano-USD amount. */
  nanos(value: number): unknown;
  /** Bound value of a boolean column. */
  flag(value: boolean): unknown;
  readFlag(value: unknown): boolean;
  readAttempts(value: unknown): AttemptRecord[];
}

export const NEW_KEY_COLUMNS = 'id, name, public_id, secret_hash, key_hint, budget_usd, budget_period, rpm, tpm, max_concurrent, created_at, allowed_models, expires_at, project_id, alerts';

/** Placeholders for NEW_KEY_COLUMNS: `?` for SQLite, `$n` for PostgreSQL. */
export function newKeyPlaceholders(style: '?' | '$'): string {
  return Array.from({ length: NEW_KEY_COLUMNS.split(',').length }, (_, index) => (style === '?' ? '?' : `$${index + 1}`)).join(', ');
}

export const LEDGER_COLUMNS = `id, key_id, requested_model, served_model, attempts, prompt_tokens, completion_tokens,
  cost_nanos, status, latency_ms, estimated, stream, created_at, cache_read_tokens, cache_write_tokens, cache_write_1h_tokens, reasoning_tokens`;

// Only these columns may be patched; the map also keeps caller-supplied names out of the SQL.
const PATCH_COLUMNS: Record<keyof KeyPatch, string> = {
  name: 'name',
  budgetUsd: 'budget_usd',
  budgetPeriod: 'budget_period',
  rpm: 'rpm',
  tpm: 'tpm',
  maxConcurrent: 'max_concurrent',
  allowedModels: 'allowed_models',
  expiresAt: 'expires_at',
  projectId: 'project_id',
  alerts: 'alerts',
};

/** Bound value of a JSON column (null stays SQL NULL). */
export function jsonColumn(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}

export function readJsonColumn<T>(value: unknown, fallback: T): T {
  return typeof value === 'string' && value !== '' ? (JSON.parse(value) as T) : fallback;
}

/** The bound value of a patched field (JSON and time columns are stored as their text). */
function patchValue(field: keyof KeyPatch, value: unknown): unknown {
  if (value === null) return null;
  if (field === 'allowedModels' || field === 'alerts') return jsonColumn(value);
  if (field === 'expiresAt') return toIsoTime(value as string);
  return value;
}

const DEFAULT_LEDGER_LIMIT = 100;

/** Values for NEW_KEY_COLUMNS, in that order. */
export function newKeyValues(key: NewKey): unknown[] {
  return [
    key.id,
    key.name,
    key.publicId,
    key.secretHash,
    key.keyHint,
    key.budgetUsd ?? null,
    key.budgetPeriod ?? 'none',
    key.rpm ?? null,
    key.tpm ?? null,
    key.maxConcurrent ?? null,
    toIsoTime(key.createdAt),
    jsonColumn(key.allowedModels ?? null),
    key.expiresAt ? toIsoTime(key.expiresAt) : null,
    key.projectId ?? null,
    jsonColumn(key.alerts ?? []),
  ];
}

/** Values for LEDGER_COLUMNS, in that order. */
export function ledgerValues(entry: LedgerEntry, encoding: ColumnEncoding): unknown[] {
  return [
    entry.id,
    entry.keyId,
    entry.requestedModel,
    entry.servedModel,
    JSON.stringify(entry.attempts),
    entry.promptTokens,
    entry.completionTokens,
    encoding.nanos(entry.costNanos),
    entry.status,
    Math.round(entry.latencyMs),
    encoding.flag(entry.estimated),
    encoding.flag(entry.stream),
    toIsoTime(entry.createdAt),
    entry.cacheReadTokens ?? 0,
    entry.cacheWriteTokens ?? 0,
    entry.cacheWrite1hTokens ?? 0,
    entry.reasoningTokens ?? 0,
  ];
}

/** The columns a patch sets, with their values in the same order; none when it sets nothing. */
export function patchAssignments(patch: KeyPatch): { columns: string[]; values: unknown[] } {
  const fields = (Object.keys(PATCH_COLUMNS) as (keyof KeyPatch)[]).filter((field) => patch[field] !== undefined);
  return { columns: fields.map((field) => PATCH_COLUMNS[field]), values: fields.map((field) => patchValue(field, patch[field] ?? null)) };
}

export function rowToKey(row: Row): KeyRecord {
  return {
    id: row.id as string,
    name: row.name as string,
    publicId: row.public_id as string,
    secretHash: row.secret_hash as string,
    keyHint: row.key_hint as string,
    budgetUsd: row.budget_usd as number | null,
    budgetPeriod: row.budget_period as BudgetPeriod,
    rpm: row.rpm as number | null,
    tpm: row.tpm as number | null,
    maxConcurrent: row.max_concurrent as number | null,
    // Bigint columns may arrive as strings (pg) or numbers (SQLite).
    spentUsd: Number(row.spent_nanos) / 1e9,
    createdAt: timeOf(row.created_at) as string,
    revokedAt: timeOf(row.revoked_at),
    lastUsedAt: timeOf(row.last_used_at),
    allowedModels: readJsonColumn<string[] | null>(row.allowed_models, null),
    expiresAt: timeOf(row.expires_at),
    projectId: (row.project_id as string | null | undefined) ?? null,
    alerts: readJsonColumn<BudgetAlert[]>(row.alerts, []),
  };
}

export function rowToLedger(row: Row, encoding: ColumnEncoding): LedgerEntry {
  return {
    id: row.id as string,
    keyId: row.key_id as string,
    requestedModel: row.requested_model as string,
    servedModel: row.served_model as string | null,
    attempts: encoding.readAttempts(row.attempts),
    promptTokens: row.prompt_tokens as number,
    completionTokens: row.completion_tokens as number,
    costNanos: Number(row.cost_nanos),
    cacheReadTokens: Number(row.cache_read_tokens ?? 0),
    cacheWriteTokens: Number(row.cache_write_tokens ?? 0),
    cacheWrite1hTokens: Number(row.cache_write_1h_tokens ?? 0),
    reasoningTokens: Number(row.reasoning_tokens ?? 0),
    status: row.status as number,
    latencyMs: row.latency_ms as number,
    estimated: encoding.readFlag(row.estimated),
    stream: encoding.readFlag(row.stream),
    createdAt: timeOf(row.created_at) as string,
  };
}

export function ledgerLimit(limit: number | undefined): number {
  return limit !== undefined && Number.isFinite(limit) ? Math.max(0, Math.trunc(limit)) : DEFAULT_LEDGER_LIMIT;
}

export function assertNanos(nanos: number): void {
  if (!Number.isSafeInteger(nanos)) throw new RangeError(`costNanos must be a safe integer, got ${nanos}`);
}

// pg returns TIMESTAMPTZ columns as Date; SQLite keeps the ISO text the store wrote.
export function timeOf(value: unknown): string | null {
  return value instanceof Date ? value.toISOString() : value === null || value === undefined ? null : String(value);
}
