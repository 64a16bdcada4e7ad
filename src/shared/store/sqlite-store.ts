import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { AttemptRecord } from '../job.js';
import type { BudgetPeriod, KeyPatch, KeyRecord, LedgerEntry, NewKey, Store, UsageFilter, UsageRow } from './store.js';
import { planUsage, type TimeRange } from './usage-plan.js';

// The embedded default store: one database file in the data folder. better-sqlite3 is synchronous,
// which is the fastest option for a single process; the async Store interface is kept so the same
// callers work against PostgreSQL. Times are stored as normalized ISO 8601 UTC text, which sorts
// and compares correctly as plain strings. Passes test/store-conformance.test.ts.

type Db = Database.Database;
type Row = Record<string, unknown>;

// Fills the daily rollup from the ledger: the backfill of migration 2 and rebuildUsageRollups().
// Part of a shipped migration: change it only together with a new migration.
const ROLLUP_FROM_LEDGER = `INSERT INTO usage_daily (day, key_id, model, requests, prompt_tokens, completion_tokens, cost_nanos)
  SELECT substr(created_at, 1, 10), key_id, COALESCE(served_model, ''), COUNT(*), SUM(prompt_tokens), SUM(completion_tokens), SUM(cost_nanos)
  FROM usage_ledger GROUP BY 1, 2, 3`;

// Each entry is applied once, in order, and recorded in schema_migrations; never edit a shipped one.
const MIGRATIONS: { version: number; sql: string }[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        public_id TEXT NOT NULL UNIQUE,
        secret_hash TEXT NOT NULL,
        key_hint TEXT NOT NULL,
        budget_usd REAL,
        budget_period TEXT NOT NULL DEFAULT 'none' CHECK (budget_period IN ('none', 'daily', 'weekly', 'monthly')),
        rpm INTEGER,
        tpm INTEGER,
        max_concurrent INTEGER,
        spent_nanos INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        revoked_at TEXT,
        last_used_at TEXT
      );
      CREATE TABLE usage_ledger (
        id TEXT PRIMARY KEY,
        key_id TEXT NOT NULL,
        requested_model TEXT NOT NULL,
        served_model TEXT,
        attempts TEXT NOT NULL,
        prompt_tokens INTEGER NOT NULL,
        completion_tokens INTEGER NOT NULL,
        cost_nanos INTEGER NOT NULL,
        status INTEGER NOT NULL,
        latency_ms INTEGER NOT NULL,
        estimated INTEGER NOT NULL,
        stream INTEGER NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE INDEX usage_ledger_key_time ON usage_ledger (key_id, created_at);
      CREATE INDEX usage_ledger_time ON usage_ledger (created_at);
      CREATE INDEX usage_ledger_model_time ON usage_ledger (served_model, created_at);
    `,
  },
  {
    // The daily rollup behind the usage API (see usage-plan.ts): one row per UTC day, key and
    // served model ('' when no model served the request), kept in the ledger's transaction.
    version: 2,
    sql: `
      CREATE TABLE usage_daily (
        day TEXT NOT NULL,
        key_id TEXT NOT NULL,
        model TEXT NOT NULL,
        requests INTEGER NOT NULL,
        prompt_tokens INTEGER NOT NULL,
        completion_tokens INTEGER NOT NULL,
        cost_nanos INTEGER NOT NULL,
        PRIMARY KEY (day, key_id, model)
      ) WITHOUT ROWID;
      CREATE INDEX usage_daily_key ON usage_daily (key_id, day);
      CREATE INDEX usage_daily_model ON usage_daily (model, day);
      ${ROLLUP_FROM_LEDGER};
    `,
  },
];

// Only these columns may be patched; the map also keeps caller-supplied names out of the SQL.
const PATCH_COLUMNS: Record<keyof KeyPatch, string> = {
  name: 'name',
  budgetUsd: 'budget_usd',
  budgetPeriod: 'budget_period',
  rpm: 'rpm',
  tpm: 'tpm',
  maxConcurrent: 'max_concurrent',
};

// The group value of a ledger row and of a rollup row; both parts of a query yield the same text.
const LEDGER_GROUPS = { key: 'key_id', model: 'served_model', day: 'substr(created_at, 1, 10)' } as const;
const ROLLUP_GROUPS = { key: 'key_id', model: "NULLIF(model, '')", day: 'day' } as const;
const GROUP_FIELDS = { key: 'key_id', model: 'model', day: 'day' } as const;

const DEFAULT_LEDGER_LIMIT = 100;

export async function openSqliteStore(filePath: string): Promise<Store> {
  if (!isInMemory(filePath)) mkdirSync(dirname(filePath), { recursive: true });
  const db = new Database(filePath);
  try {
    // busy_timeout first: switching to WAL needs a lock another process may hold at that moment.
    db.pragma('busy_timeout = 5000');
    db.pragma('journal_mode = WAL');
    // NORMAL is durable across application crashes in WAL mode and avoids an fsync per commit.
    db.pragma('synchronous = NORMAL');
    migrate(db);
  } catch (err) {
    db.close();
    throw err;
  }
  return new SqliteStore(db);
}

function isInMemory(filePath: string): boolean {
  return filePath === ':memory:' || filePath === '' || filePath.startsWith('file:');
}

function migrate(db: Db): void {
  // IMMEDIATE takes the write lock up front, so a second process starting at the same moment
  // waits (busy_timeout) and then sees the versions the first one recorded.
  const run = db.transaction(() => {
    db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)');
    const done = new Set(db.prepare('SELECT version FROM schema_migrations').pluck().all() as number[]);
    for (const m of MIGRATIONS) {
      if (done.has(m.version)) continue;
      db.exec(m.sql);
      db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(m.version, new Date().toISOString());
    }
  });
  run.immediate();
}

class SqliteStore implements Store {
  private readonly statements = new Map<string, Database.Statement>();
  private readonly recordTx: (entry: LedgerEntry) => void;

  constructor(private readonly db: Db) {
    this.recordTx = db.transaction((entry: LedgerEntry) => this.recordInTx(entry)).immediate as (entry: LedgerEntry) => void;
  }

  async migrate(): Promise<void> {
    migrate(this.db);
  }

  async createKey(key: NewKey): Promise<KeyRecord> {
    this.stmt(
      `INSERT INTO api_keys (id, name, public_id, secret_hash, key_hint, budget_usd, budget_period, rpm, tpm, max_concurrent, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
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
      toIso(key.createdAt),
    );
    return this.mustGet(key.id);
  }

  async getKey(id: string): Promise<KeyRecord | null> {
    return this.readKey(id);
  }

  async getKeyByPublicId(publicId: string): Promise<KeyRecord | null> {
    const row = this.stmt('SELECT * FROM api_keys WHERE public_id = ?').get(publicId) as Row | undefined;
    return row ? rowToKey(row) : null;
  }

  async listKeys(): Promise<KeyRecord[]> {
    const rows = this.stmt('SELECT * FROM api_keys ORDER BY created_at, id').all() as Row[];
    return rows.map(rowToKey);
  }

  async updateKey(id: string, patch: KeyPatch): Promise<KeyRecord | null> {
    const fields = (Object.keys(PATCH_COLUMNS) as (keyof KeyPatch)[]).filter((f) => patch[f] !== undefined);
    if (fields.length > 0) {
      const sets = fields.map((f) => `${PATCH_COLUMNS[f]} = ?`).join(', ');
      this.stmt(`UPDATE api_keys SET ${sets} WHERE id = ?`).run(...fields.map((f) => patch[f] ?? null), id);
    }
    return this.readKey(id);
  }

  async revokeKey(id: string, at: string): Promise<KeyRecord | null> {
    // COALESCE keeps the first revocation time: revoking twice must not rewrite history.
    this.stmt('UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?').run(toIso(at), id);
    return this.readKey(id);
  }

  async recordUsage(entry: LedgerEntry): Promise<void> {
    assertNanos(entry.costNanos);
    this.recordTx(entry);
  }

  async spentNanosSince(keyId: string, since: string): Promise<number> {
    // Budget periods start at midnight UTC, so this is normally a read of the key's rollup rows.
    const { sql, params } = usageSql({ keyId, since });
    return Number((this.stmt(sql).get(...params) as Row).cost_nanos);
  }

  async queryUsage(filter: UsageFilter): Promise<UsageRow[]> {
    const { sql, params } = usageSql(filter);
    if (!filter.groupBy) return [toUsageRow(this.stmt(sql).get(...params) as Row)];
    const field = GROUP_FIELDS[filter.groupBy];
    return (this.stmt(sql).all(...params) as Row[]).map((row) => withGroup(toUsageRow(row), field, row.g));
  }

  async rebuildUsageRollups(): Promise<void> {
    this.db.transaction(() => {
      this.db.exec('DELETE FROM usage_daily');
      this.db.exec(ROLLUP_FROM_LEDGER);
    }).immediate();
  }

  async listLedger(filter: UsageFilter & { limit?: number }): Promise<LedgerEntry[]> {
    const { where, params } = whereClause(filter);
    const sql = `SELECT * FROM usage_ledger ${where} ORDER BY created_at DESC, id DESC LIMIT ?`;
    const rows = this.stmt(sql).all(...params, ledgerLimit(filter.limit)) as Row[];
    return rows.map(rowToLedger);
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }

  private recordInTx(entry: LedgerEntry): void {
    const inserted = this.stmt(
      `INSERT INTO usage_ledger (id, key_id, requested_model, served_model, attempts, prompt_tokens, completion_tokens,
         cost_nanos, status, latency_ms, estimated, stream, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
    ).run(
      entry.id,
      entry.keyId,
      entry.requestedModel,
      entry.servedModel,
      JSON.stringify(entry.attempts),
      entry.promptTokens,
      entry.completionTokens,
      BigInt(entry.costNanos),
      entry.status,
      Math.round(entry.latencyMs),
      entry.estimated ? 1 : 0,
      entry.stream ? 1 : 0,
      toIso(entry.createdAt),
    );
    // A retried settlement re-sends the same ledger id; charging only on insert keeps spend exact.
    if (inserted.changes === 0) return;
    const at = toIso(entry.createdAt);
    // BigInt binds as an integer, so the addition stays in exact 64-bit integer arithmetic.
    this.stmt(
      `UPDATE api_keys SET spent_nanos = spent_nanos + ?,
         last_used_at = CASE WHEN last_used_at IS NULL OR last_used_at < ? THEN ? ELSE last_used_at END
       WHERE id = ?`,
    ).run(BigInt(entry.costNanos), at, at, entry.keyId);
    this.stmt(
      `INSERT INTO usage_daily (day, key_id, model, requests, prompt_tokens, completion_tokens, cost_nanos)
       VALUES (?, ?, ?, 1, ?, ?, ?)
       ON CONFLICT (day, key_id, model) DO UPDATE SET requests = requests + 1,
         prompt_tokens = prompt_tokens + excluded.prompt_tokens,
         completion_tokens = completion_tokens + excluded.completion_tokens,
         cost_nanos = cost_nanos + excluded.cost_nanos`,
    ).run(at.slice(0, 10), entry.keyId, entry.servedModel ?? '', entry.promptTokens, entry.completionTokens, BigInt(entry.costNanos));
  }

  private readKey(id: string): KeyRecord | null {
    const row = this.stmt('SELECT * FROM api_keys WHERE id = ?').get(id) as Row | undefined;
    return row ? rowToKey(row) : null;
  }

  private mustGet(id: string): KeyRecord {
    const key = this.readKey(id);
    if (!key) throw new Error(`key ${id} vanished right after insert`);
    return key;
  }

  // Preparing is a large share of a small query's cost; the SQL set is small and fixed by code.
  private stmt(sql: string): Database.Statement {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }
}

function whereClause(filter: UsageFilter): { where: string; params: unknown[] } {
  return ledgerWhere(filter, { since: filter.since, until: filter.until });
}

function ledgerWhere(filter: UsageFilter, range: TimeRange): { where: string; params: unknown[] } {
  const conds: string[] = [];
  const params: unknown[] = [];
  if (filter.keyId !== undefined) {
    conds.push('key_id = ?');
    params.push(filter.keyId);
  }
  if (filter.model !== undefined) {
    conds.push('served_model = ?');
    params.push(filter.model);
  }
  if (range.since !== undefined) {
    conds.push('created_at >= ?');
    params.push(toIso(range.since));
  }
  if (range.until !== undefined) {
    conds.push('created_at < ?');
    params.push(toIso(range.until));
  }
  return { where: conds.length ? `WHERE ${conds.join(' AND ')}` : '', params };
}

/**
 * One statement answering a usage question: the rollup's whole days plus the ledger's partial
 * days (usage-plan.ts), summed per group. Ungrouped, it yields exactly one row.
 */
function usageSql(filter: UsageFilter): { sql: string; params: unknown[] } {
  const plan = planUsage(filter);
  const group = filter.groupBy;
  const parts: string[] = [];
  const params: unknown[] = [];
  if (plan.rollup) {
    const conds: string[] = [];
    if (filter.keyId !== undefined) {
      conds.push('key_id = ?');
      params.push(filter.keyId);
    }
    if (filter.model !== undefined) {
      // '' stands for "no model served" in the rollup; no ledger row has served_model = ''.
      conds.push("model = ? AND model <> ''");
      params.push(filter.model);
    }
    if (plan.rollup.fromDay !== undefined) {
      conds.push('day >= ?');
      params.push(plan.rollup.fromDay);
    }
    if (plan.rollup.toDay !== undefined) {
      conds.push('day < ?');
      params.push(plan.rollup.toDay);
    }
    const where = conds.length ? `WHERE ${conds.join(' AND ')}` : '';
    parts.push(
      `SELECT ${group ? ROLLUP_GROUPS[group] : 'NULL'} AS g, SUM(requests) AS requests, SUM(prompt_tokens) AS prompt_tokens,
         SUM(completion_tokens) AS completion_tokens, SUM(cost_nanos) AS cost_nanos FROM usage_daily ${where}${group ? ' GROUP BY 1' : ''}`,
    );
  }
  for (const range of plan.ledger) {
    const { where, params: p } = ledgerWhere(filter, range);
    params.push(...p);
    parts.push(
      `SELECT ${group ? LEDGER_GROUPS[group] : 'NULL'} AS g, COUNT(*) AS requests, SUM(prompt_tokens) AS prompt_tokens,
         SUM(completion_tokens) AS completion_tokens, SUM(cost_nanos) AS cost_nanos FROM usage_ledger ${where}${group ? ' GROUP BY 1' : ''}`,
    );
  }
  const totals = `COALESCE(SUM(requests), 0) AS requests, COALESCE(SUM(prompt_tokens), 0) AS prompt_tokens,
    COALESCE(SUM(completion_tokens), 0) AS completion_tokens, COALESCE(SUM(cost_nanos), 0) AS cost_nanos`;
  const from = `(${parts.join(' UNION ALL ')})`;
  // "g IS NULL" first so rows without a served model sort last, as they do in PostgreSQL.
  const sql = group ? `SELECT g, ${totals} FROM ${from} GROUP BY g ORDER BY g IS NULL, g` : `SELECT ${totals} FROM ${from}`;
  return { sql, params };
}

function rowToKey(row: Row): KeyRecord {
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
    spentUsd: Number(row.spent_nanos) / 1e9,
    createdAt: row.created_at as string,
    revokedAt: row.revoked_at as string | null,
    lastUsedAt: row.last_used_at as string | null,
  };
}

function rowToLedger(row: Row): LedgerEntry {
  return {
    id: row.id as string,
    keyId: row.key_id as string,
    requestedModel: row.requested_model as string,
    servedModel: row.served_model as string | null,
    attempts: JSON.parse(row.attempts as string) as AttemptRecord[],
    promptTokens: row.prompt_tokens as number,
    completionTokens: row.completion_tokens as number,
    costNanos: Number(row.cost_nanos),
    status: row.status as number,
    latencyMs: row.latency_ms as number,
    estimated: row.estimated === 1,
    stream: row.stream === 1,
    createdAt: row.created_at as string,
  };
}

function toUsageRow(row: Row): UsageRow {
  return {
    requests: Number(row.requests),
    prompt_tokens: Number(row.prompt_tokens),
    completion_tokens: Number(row.completion_tokens),
    cost_usd: Number(row.cost_nanos) / 1e9,
  };
}

// A null group value (requests no model served) leaves the field out: UsageRow has no null there.
function withGroup(row: UsageRow, field: 'key_id' | 'model' | 'day', value: unknown): UsageRow {
  return value === null || value === undefined ? row : { [field]: String(value), ...row };
}

function ledgerLimit(limit: number | undefined): number {
  return limit !== undefined && Number.isFinite(limit) ? Math.max(0, Math.trunc(limit)) : DEFAULT_LEDGER_LIMIT;
}

// Stored times must share one format for string comparison to order them correctly.
function toIso(value: string): string {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new RangeError(`not an ISO 8601 time: ${value}`);
  return new Date(ms).toISOString();
}

function assertNanos(nanos: number): void {
  if (!Number.isSafeInteger(nanos)) throw new RangeError(`costNanos must be a safe integer, got ${nanos}`);
}
