import pg from 'pg';
import type { AttemptRecord } from '../job.js';
import type { BudgetPeriod, KeyPatch, KeyRecord, LedgerEntry, NewKey, Store, UsageFilter, UsageRow } from './store.js';
import { planUsage, type TimeRange } from './usage-plan.js';

// The scaled-out store: PostgreSQL shared by every ingress and worker process. Same tables and
// semantics as sqlite-store.ts; both pass test/store-conformance.test.ts. Bigint and numeric
// results arrive from pg as strings (they may exceed 2^53); they are converted per column here
// rather than through pg's global type parsers, which would change other pg users in the process.

type Row = Record<string, unknown>;

export interface PostgresStoreOptions {
  /** Schema holding the tables; created if missing. Lets tests and tenants share one database. */
  schema?: string;
  /** Pool size; each process keeps its own pool, so keep it small. */
  max?: number;
}

// Fills the daily rollup from the ledger: the backfill of migration 2 and rebuildUsageRollups().
// Part of a shipped migration: change it only together with a new migration.
const ROLLUP_FROM_LEDGER = `INSERT INTO usage_daily (day, key_id, model, requests, prompt_tokens, completion_tokens, cost_nanos)
  SELECT (created_at AT TIME ZONE 'UTC')::date, key_id, COALESCE(served_model, ''), COUNT(*), SUM(prompt_tokens), SUM(completion_tokens), SUM(cost_nanos)
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
        budget_usd DOUBLE PRECISION,
        budget_period TEXT NOT NULL DEFAULT 'none' CHECK (budget_period IN ('none', 'daily', 'weekly', 'monthly')),
        rpm INTEGER,
        tpm INTEGER,
        max_concurrent INTEGER,
        spent_nanos BIGINT NOT NULL DEFAULT 0,
        created_at TIMESTAMPTZ NOT NULL,
        revoked_at TIMESTAMPTZ,
        last_used_at TIMESTAMPTZ
      );
      CREATE TABLE usage_ledger (
        id TEXT PRIMARY KEY,
        key_id TEXT NOT NULL,
        requested_model TEXT NOT NULL,
        served_model TEXT,
        attempts JSONB NOT NULL,
        prompt_tokens INTEGER NOT NULL,
        completion_tokens INTEGER NOT NULL,
        cost_nanos BIGINT NOT NULL,
        status INTEGER NOT NULL,
        latency_ms INTEGER NOT NULL,
        estimated BOOLEAN NOT NULL,
        stream BOOLEAN NOT NULL,
        created_at TIMESTAMPTZ NOT NULL
      );
      CREATE INDEX usage_ledger_key_time ON usage_ledger (key_id, created_at);
      CREATE INDEX usage_ledger_time ON usage_ledger (created_at);
      CREATE INDEX usage_ledger_model_time ON usage_ledger (served_model, created_at);
    `,
  },
  {
    // The daily rollup behind the usage API (see usage-plan.ts): one row per UTC day, key and
    // served model ('' when no model served the request), kept in the ledger's statement.
    version: 2,
    sql: `
      CREATE TABLE usage_daily (
        day DATE NOT NULL,
        key_id TEXT NOT NULL,
        model TEXT NOT NULL,
        requests BIGINT NOT NULL,
        prompt_tokens BIGINT NOT NULL,
        completion_tokens BIGINT NOT NULL,
        cost_nanos BIGINT NOT NULL,
        PRIMARY KEY (day, key_id, model)
      );
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
const LEDGER_GROUPS = { key: 'key_id', model: 'served_model', day: `to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')` } as const;
const ROLLUP_GROUPS = { key: 'key_id', model: `NULLIF(model, '')`, day: `to_char(day, 'YYYY-MM-DD')` } as const;
const GROUP_FIELDS = { key: 'key_id', model: 'model', day: 'day' } as const;

const DEFAULT_LEDGER_LIMIT = 100;

// Lower case only: search_path folds unquoted names, and a fixed alphabet keeps the name safe to
// splice into DDL and the connection options.
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export async function openPostgresStore(databaseUrl: string, options: PostgresStoreOptions = {}): Promise<Store> {
  const { schema } = options;
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
    throw new RangeError(`schema must match ${SCHEMA_NAME}, got ${JSON.stringify(schema)}`);
  }
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: options.max ?? 10,
    // Set per connection by the server at start-up, so no query ever runs on the wrong schema.
    options: schema ? `-c search_path=${schema}` : undefined,
  });
  // An idle client that loses its connection emits here; without a listener the process would
  // crash. The pool has already discarded it and the next query opens a fresh connection.
  pool.on('error', () => {});
  const store = new PostgresStore(pool, schema);
  try {
    await store.migrate();
  } catch (err) {
    await pool.end();
    throw err;
  }
  return store;
}

class PostgresStore implements Store {
  constructor(
    private readonly pool: pg.Pool,
    private readonly schema: string | undefined,
  ) {}

  async migrate(): Promise<void> {
    await this.transaction(async (client) => {
      // Serializes concurrent start-ups (per schema); released automatically at commit/rollback.
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`switchboard.migrate:${this.schema ?? ''}`]);
      if (this.schema) await client.query(`CREATE SCHEMA IF NOT EXISTS ${this.schema}`);
      await client.query(
        'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())',
      );
      const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations');
      const done = new Set(rows.map((r) => r.version));
      for (const m of MIGRATIONS) {
        if (done.has(m.version)) continue;
        await client.query(m.sql);
        await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [m.version]);
      }
    });
  }

  async createKey(key: NewKey): Promise<KeyRecord> {
    const { rows } = await this.pool.query(
      `INSERT INTO api_keys (id, name, public_id, secret_hash, key_hint, budget_usd, budget_period, rpm, tpm, max_concurrent, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING *`,
      [
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
      ],
    );
    return rowToKey(rows[0]);
  }

  async getKey(id: string): Promise<KeyRecord | null> {
    return this.oneKey('SELECT * FROM api_keys WHERE id = $1', [id]);
  }

  async getKeyByPublicId(publicId: string): Promise<KeyRecord | null> {
    return this.oneKey('SELECT * FROM api_keys WHERE public_id = $1', [publicId]);
  }

  async listKeys(): Promise<KeyRecord[]> {
    const { rows } = await this.pool.query('SELECT * FROM api_keys ORDER BY created_at, id COLLATE "C"');
    return rows.map(rowToKey);
  }

  async updateKey(id: string, patch: KeyPatch): Promise<KeyRecord | null> {
    const fields = (Object.keys(PATCH_COLUMNS) as (keyof KeyPatch)[]).filter((f) => patch[f] !== undefined);
    if (fields.length === 0) return this.getKey(id);
    const sets = fields.map((f, i) => `${PATCH_COLUMNS[f]} = $${i + 2}`).join(', ');
    return this.oneKey(`UPDATE api_keys SET ${sets} WHERE id = $1 RETURNING *`, [id, ...fields.map((f) => patch[f] ?? null)]);
  }

  async revokeKey(id: string, at: string): Promise<KeyRecord | null> {
    // COALESCE keeps the first revocation time: revoking twice must not rewrite history.
    return this.oneKey('UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1 RETURNING *', [id, toIso(at)]);
  }

  async recordUsage(entry: LedgerEntry): Promise<void> {
    if (!Number.isSafeInteger(entry.costNanos)) {
      throw new RangeError(`costNanos must be a safe integer, got ${entry.costNanos}`);
    }
    // One statement is one transaction and one round trip. The UPDATE and the rollup upsert read
    // only the row the INSERT returned, so a duplicate ledger id (a retried settlement) charges
    // nothing and counts nothing. Every record takes its two row locks (rollup row, key row) in
    // the same order, being the same plan, so concurrent records cannot deadlock.
    await this.pool.query(
      `WITH ins AS (
         INSERT INTO usage_ledger (id, key_id, requested_model, served_model, attempts, prompt_tokens, completion_tokens,
           cost_nanos, status, latency_ms, estimated, stream, created_at)
         VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9, $10, $11, $12, $13)
         ON CONFLICT (id) DO NOTHING
         RETURNING key_id, served_model, prompt_tokens, completion_tokens, cost_nanos, created_at
       ), spend AS (
         UPDATE api_keys k SET spent_nanos = k.spent_nanos + ins.cost_nanos,
           last_used_at = GREATEST(k.last_used_at, ins.created_at)
         FROM ins WHERE k.id = ins.key_id
         RETURNING k.id
       )
       INSERT INTO usage_daily AS d (day, key_id, model, requests, prompt_tokens, completion_tokens, cost_nanos)
       SELECT (created_at AT TIME ZONE 'UTC')::date, key_id, COALESCE(served_model, ''), 1, prompt_tokens, completion_tokens, cost_nanos
       FROM ins
       ON CONFLICT (day, key_id, model) DO UPDATE SET requests = d.requests + 1,
         prompt_tokens = d.prompt_tokens + EXCLUDED.prompt_tokens,
         completion_tokens = d.completion_tokens + EXCLUDED.completion_tokens,
         cost_nanos = d.cost_nanos + EXCLUDED.cost_nanos`,
      [
        entry.id,
        entry.keyId,
        entry.requestedModel,
        entry.servedModel,
        JSON.stringify(entry.attempts),
        entry.promptTokens,
        entry.completionTokens,
        entry.costNanos,
        entry.status,
        Math.round(entry.latencyMs),
        entry.estimated,
        entry.stream,
        toIso(entry.createdAt),
      ],
    );
  }

  async spentNanosSince(keyId: string, since: string): Promise<number> {
    // Budget periods start at midnight UTC, so this is normally a read of the key's rollup rows.
    const { sql, params } = usageSql({ keyId, since });
    const { rows } = await this.pool.query(sql, params);
    return Number(rows[0].cost_nanos);
  }

  async queryUsage(filter: UsageFilter): Promise<UsageRow[]> {
    const { sql, params } = usageSql(filter);
    const { rows } = await this.pool.query(sql, params);
    if (!filter.groupBy) return [toUsageRow(rows[0])];
    const field = GROUP_FIELDS[filter.groupBy];
    return rows.map((row: Row) => withGroup(toUsageRow(row), field, row.g));
  }

  async rebuildUsageRollups(): Promise<void> {
    await this.transaction(async (client) => {
      // Writers wait until the rollup matches the ledger again; readers carry on.
      await client.query('LOCK TABLE usage_ledger, usage_daily IN EXCLUSIVE MODE');
      await client.query('DELETE FROM usage_daily');
      await client.query(ROLLUP_FROM_LEDGER);
    });
  }

  async listLedger(filter: UsageFilter & { limit?: number }): Promise<LedgerEntry[]> {
    const { where, params } = whereClause(filter);
    const sql = `SELECT * FROM usage_ledger ${where} ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT $${params.length + 1}`;
    const { rows } = await this.pool.query(sql, [...params, ledgerLimit(filter.limit)]);
    return rows.map(rowToLedger);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  private async oneKey(sql: string, params: unknown[]): Promise<KeyRecord | null> {
    const { rows } = await this.pool.query(sql, params);
    return rows.length > 0 ? rowToKey(rows[0]) : null;
  }

  private async transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      client.release();
    }
  }
}

function whereClause(filter: UsageFilter): { where: string; params: unknown[] } {
  const params: unknown[] = [];
  return { where: ledgerWhere(filter, { since: filter.since, until: filter.until }, params), params };
}

/** Ledger conditions for the filter within `range`; appends its values to `params`. */
function ledgerWhere(filter: UsageFilter, range: TimeRange, params: unknown[]): string {
  const conds: string[] = [];
  const add = (cond: string, value: unknown) => {
    params.push(value);
    conds.push(cond.replace('?', `$${params.length}`));
  };
  if (filter.keyId !== undefined) add('key_id = ?', filter.keyId);
  if (filter.model !== undefined) add('served_model = ?', filter.model);
  if (range.since !== undefined) add('created_at >= ?', toIso(range.since));
  if (range.until !== undefined) add('created_at < ?', toIso(range.until));
  return conds.length ? `WHERE ${conds.join(' AND ')}` : '';
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
    const add = (cond: string, value: unknown) => {
      params.push(value);
      conds.push(cond.replace('?', `$${params.length}`));
    };
    if (filter.keyId !== undefined) add('key_id = ?', filter.keyId);
    // '' stands for "no model served" in the rollup; no ledger row has served_model = ''.
    if (filter.model !== undefined) add(`model = ? AND model <> ''`, filter.model);
    if (plan.rollup.fromDay !== undefined) add('day >= ?::date', plan.rollup.fromDay);
    if (plan.rollup.toDay !== undefined) add('day < ?::date', plan.rollup.toDay);
    const where = conds.length ? `WHERE ${conds.join(' AND ')}` : '';
    parts.push(
      `SELECT ${group ? ROLLUP_GROUPS[group] : 'NULL::text'} AS g, SUM(requests) AS requests, SUM(prompt_tokens) AS prompt_tokens,
         SUM(completion_tokens) AS completion_tokens, SUM(cost_nanos) AS cost_nanos FROM usage_daily ${where}${group ? ' GROUP BY 1' : ''}`,
    );
  }
  for (const range of plan.ledger) {
    const where = ledgerWhere(filter, range, params);
    parts.push(
      `SELECT ${group ? LEDGER_GROUPS[group] : 'NULL::text'} AS g, COUNT(*) AS requests, SUM(prompt_tokens) AS prompt_tokens,
         SUM(completion_tokens) AS completion_tokens, SUM(cost_nanos) AS cost_nanos FROM usage_ledger ${where}${group ? ' GROUP BY 1' : ''}`,
    );
  }
  const totals = `COALESCE(SUM(requests), 0) AS requests, COALESCE(SUM(prompt_tokens), 0) AS prompt_tokens,
    COALESCE(SUM(completion_tokens), 0) AS completion_tokens, COALESCE(SUM(cost_nanos), 0) AS cost_nanos`;
  const from = `(${parts.join(' UNION ALL ')}) AS parts`;
  // COLLATE "C" sorts group keys by code point, matching SQLite, whatever the database's locale.
  const sql = group ? `SELECT g, ${totals} FROM ${from} GROUP BY g ORDER BY g IS NULL, g COLLATE "C"` : `SELECT ${totals} FROM ${from}`;
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
    createdAt: isoOf(row.created_at) as string,
    revokedAt: isoOf(row.revoked_at),
    lastUsedAt: isoOf(row.last_used_at),
  };
}

function rowToLedger(row: Row): LedgerEntry {
  return {
    id: row.id as string,
    keyId: row.key_id as string,
    requestedModel: row.requested_model as string,
    servedModel: row.served_model as string | null,
    attempts: row.attempts as AttemptRecord[],
    promptTokens: row.prompt_tokens as number,
    completionTokens: row.completion_tokens as number,
    costNanos: Number(row.cost_nanos),
    status: row.status as number,
    latencyMs: row.latency_ms as number,
    estimated: row.estimated as boolean,
    stream: row.stream as boolean,
    createdAt: isoOf(row.created_at) as string,
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

function isoOf(value: unknown): string | null {
  return value instanceof Date ? value.toISOString() : value === null || value === undefined ? null : String(value);
}

// Parsing here rather than in PostgreSQL gives the same accept/reject behaviour as the SQLite store.
function toIso(value: string): string {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new RangeError(`not an ISO 8601 time: ${value}`);
  return new Date(ms).toISOString();
}
