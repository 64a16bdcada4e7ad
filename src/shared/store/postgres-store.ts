import { OVER_SIZE_IDS, PAYLOAD_LOG_MIGRATION, PAYLOAD_LOG_SQL, rowToPayload, type PayloadRecord } from './payload-log-records.js';
import pg from 'pg';
import type { AttemptRecord } from '../job.js';
import type { KeyPatch, KeyRecord, LedgerEntry, NewKey, Store, StoredResponse, UsageFilter, UsageRow } from './store.js';
import { responseUpsertSql, responseValues, rowToStoredResponse } from './response-records.js';
import {
  LEDGER_COLUMNS, NEW_KEY_COLUMNS, assertNanos, newKeyPlaceholders, ledgerLimit, ledgerValues, newKeyValues, patchAssignments, rowToKey, rowToLedger,
  type ColumnEncoding, type Row,
} from './store-records.js';
import { ledgerPageSql, toIsoTime, usageRows, usageSql, type SqlDialect } from './usage-plan.js';
import { batchedLedgerSql, LedgerWriteBatcher } from './postgres-ledger-batch.js';
import { POSTGRES_USAGE_SPLIT_SQL, rollupFromLedgerSql, splitRollupAssignments, SPLIT_COLUMNS, USAGE_SPLIT_MIGRATION } from './usage-split-migration.js';
import { ENDED_SESSIONS_MIGRATION, POSTGRES_ENDED_SESSIONS_SQL } from './ended-sessions.js';
import { GOVERNANCE_MIGRATION, POSTGRES_GOVERNANCE_SQL } from './governance-schema.js';
import { ACCESS_MIGRATION, POSTGRES_ACCESS_SQL } from './access-schema.js';
import { accessMethods } from './access-tables.js';
import type { AccessStore } from './access-records.js';
import { governanceMethods, numberPlaceholders, type GovernanceMethods, type SqlRunner } from './governance-tables.js';

// The scaled-out store: PostgreSQL shared by every ingress and worker process. Same tables and
// semantics as sqlite-store.ts; both pass test/store-conformance.test.ts. Bigint and numeric
// results arrive from pg as strings (they may exceed 2^53); they are converted per column here
// rather than through pg's global type parsers, which would change other pg users in the process.
// Times are parsed in code rather than by PostgreSQL, for the SQLite store's accept/reject behaviour.

export interface PostgresStoreOptions {
  /** Schema holding the tables; created if missing. Lets tests and tenants share one database. */
  schema?: string;
  /** Pool size; each process keeps its own pool, so keep it small. */
  max?: number;
}

// Fills the daily rollup from the ledger: the backfill of migration 2 (rebuildUsageRollups() uses rollupFromLedgerSql, split included).
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
  { version: ENDED_SESSIONS_MIGRATION, sql: POSTGRES_ENDED_SESSIONS_SQL },
  {
    // Stored responses of the Responses API (POST /v1/responses with store), per key, until expires_at.
    version: 4,
    sql: `
      CREATE TABLE stored_responses (
        id TEXT PRIMARY KEY,
        key_id TEXT NOT NULL,
        status TEXT NOT NULL,
        background BOOLEAN NOT NULL,
        response JSONB NOT NULL,
        input_items JSONB NOT NULL,
        context_items JSONB NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        expires_at TIMESTAMPTZ NOT NULL
      );
      CREATE INDEX stored_responses_expiry ON stored_responses (expires_at);
    `,
  },
  { version: USAGE_SPLIT_MIGRATION, sql: POSTGRES_USAGE_SPLIT_SQL },
  { version: GOVERNANCE_MIGRATION, sql: POSTGRES_GOVERNANCE_SQL },
  // Opt-in request logs, apart from the ledger (payload-log-records.ts).
  { version: PAYLOAD_LOG_MIGRATION, sql: PAYLOAD_LOG_SQL },
  // Users, per-user admin tokens and the append-only audit log (access-schema.ts).
  { version: ACCESS_MIGRATION, sql: POSTGRES_ACCESS_SQL },
];

// JSONB and BOOLEAN columns travel as their JavaScript values; nano-USD fit in a safe integer.
export const POSTGRES_ENCODING: ColumnEncoding = {
  nanos: (value) => value,
  flag: (value) => value,
  readFlag: (value) => value as boolean,
  readAttempts: (value) => value as AttemptRecord[],
};

// The group value of a ledger row and of a rollup row; both parts of a query yield the same text.
const DIALECT: SqlDialect = {
  placeholder: (position) => `$${position}`,
  dayParameterCast: '::date',
  noGroup: 'NULL::text',
  ledgerGroups: { key: 'key_id', model: 'served_model', day: `to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')` },
  rollupGroups: { key: 'key_id', model: `NULLIF(model, '')`, day: `to_char(day, 'YYYY-MM-DD')` },
  // Sorts group keys and ids by code point, matching SQLite, whatever the database's locale.
  codePointOrder: ' COLLATE "C"',
};

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
    // An unreachable database fails requests within seconds (503) instead of holding them.
    connectionTimeoutMillis: 3000,
    keepAlive: true,
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

// The governance and access methods are mixed in (governance-tables.ts, access-tables.ts), shared with the SQLite store.
interface PostgresStore extends GovernanceMethods, AccessStore {}

class PostgresStore implements Store {
  private readonly ledgerWrites = new LedgerWriteBatcher((entries) => this.recordMany(entries), (entry) => this.recordOne(entry));

  constructor(
    private readonly pool: pg.Pool,
    private readonly schema: string | undefined,
  ) {
    const runner: SqlRunner = {
      all: async (sql, params) => (await this.pool.query(numberPlaceholders(sql), params)).rows as Row[],
      run: async (sql, params) => (await this.pool.query(numberPlaceholders(sql), params)).rowCount ?? 0,
    };
    Object.assign(this, governanceMethods(runner, POSTGRES_ENCODING), accessMethods(runner));
  }

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
      `INSERT INTO api_keys (${NEW_KEY_COLUMNS}) VALUES (${newKeyPlaceholders('$')}) RETURNING *`,
      newKeyValues(key),
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
    const { columns, values } = patchAssignments(patch);
    if (columns.length === 0) return this.getKey(id);
    const sets = columns.map((column, index) => `${column} = $${index + 2}`).join(', ');
    return this.oneKey(`UPDATE api_keys SET ${sets} WHERE id = $1 RETURNING *`, [id, ...values]);
  }

  async revokeKey(id: string, at: string): Promise<KeyRecord | null> {
    // COALESCE keeps the first revocation time: revoking twice must not rewrite history.
    return this.oneKey('UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1 RETURNING *', [id, toIsoTime(at)]);
  }

  /** Records of one event-loop turn share one statement (postgres-ledger-batch.ts). */
  async recordUsage(entry: LedgerEntry): Promise<void> {
    assertNanos(entry.costNanos);
    return this.ledgerWrites.add(entry);
  }

  private async recordMany(entries: LedgerEntry[]): Promise<void> {
    await this.pool.query(batchedLedgerSql(entries.length), entries.flatMap((entry) => ledgerValues(entry, POSTGRES_ENCODING)));
  }

  private async recordOne(entry: LedgerEntry): Promise<void> {
    // One statement is one transaction and one round trip. The UPDATE and the rollup upsert read
    // only the row the INSERT returned, so a duplicate ledger id (a retried settlement) charges
    // nothing and counts nothing. Every record takes its two row locks (rollup row, key row) in
    // the same order, being the same plan, so concurrent records cannot deadlock.
    await this.pool.query(
      `WITH ins AS (
         INSERT INTO usage_ledger (${LEDGER_COLUMNS})
         VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
         ON CONFLICT (id) DO NOTHING
         RETURNING key_id, served_model, prompt_tokens, completion_tokens, cost_nanos, created_at, ${SPLIT_COLUMNS.join(', ')}
       ), spend AS (
         UPDATE api_keys k SET spent_nanos = k.spent_nanos + ins.cost_nanos,
           last_used_at = GREATEST(k.last_used_at, ins.created_at)
         FROM ins WHERE k.id = ins.key_id
         RETURNING k.id
       )
       INSERT INTO usage_daily AS d (day, key_id, model, requests, prompt_tokens, completion_tokens, cost_nanos, ${SPLIT_COLUMNS.join(', ')})
       SELECT (created_at AT TIME ZONE 'UTC')::date, key_id, COALESCE(served_model, ''), 1, prompt_tokens, completion_tokens, cost_nanos, ${SPLIT_COLUMNS.join(', ')}
       FROM ins
       ON CONFLICT (day, key_id, model) DO UPDATE SET requests = d.requests + 1,
         prompt_tokens = d.prompt_tokens + EXCLUDED.prompt_tokens,
         completion_tokens = d.completion_tokens + EXCLUDED.completion_tokens,
         cost_nanos = d.cost_nanos + EXCLUDED.cost_nanos,
         ${splitRollupAssignments('d.', 'EXCLUDED')}`,
      ledgerValues(entry, POSTGRES_ENCODING),
    );
  }

  async spentNanosSince(keyId: string, since: string): Promise<number> {
    // Budget periods start at midnight UTC, so this is normally a read of the key's rollup rows.
    const { sql, params } = usageSql({ keyId, since }, DIALECT);
    const { rows } = await this.pool.query(sql, params);
    return Number(rows[0].cost_nanos);
  }

  async queryUsage(filter: UsageFilter): Promise<UsageRow[]> {
    const { sql, params } = usageSql(filter, DIALECT);
    const { rows } = await this.pool.query(sql, params);
    return usageRows(filter, rows);
  }

  async rebuildUsageRollups(): Promise<void> {
    await this.transaction(async (client) => {
      // Writers wait until the rollup matches the ledger again; readers carry on.
      await client.query('LOCK TABLE usage_ledger, usage_daily IN EXCLUSIVE MODE');
      await client.query('DELETE FROM usage_daily');
      await client.query(rollupFromLedgerSql("(created_at AT TIME ZONE 'UTC')::date"));
    });
  }

  async listLedger(filter: UsageFilter & { limit?: number }): Promise<LedgerEntry[]> {
    const { sql, params } = ledgerPageSql(filter, ledgerLimit(filter.limit), DIALECT);
    const { rows } = await this.pool.query(sql, params);
    return rows.map((row: Row) => rowToLedger(row, POSTGRES_ENCODING));
  }

  async endDashboardSession(id: string, expiresAt: string): Promise<void> {
    // One statement: sweep the rows past their expiry and record this sign-out.
    await this.pool.query(
      `WITH swept AS (DELETE FROM dashboard_sessions_ended WHERE expires_at <= now())
       INSERT INTO dashboard_sessions_ended (id, expires_at) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING`,
      [id, toIsoTime(expiresAt)],
    );
  }

  async isDashboardSessionEnded(id: string): Promise<boolean> {
    const { rows } = await this.pool.query('SELECT 1 FROM dashboard_sessions_ended WHERE id = $1', [id]);
    return rows.length > 0;
  }

  async saveResponse(record: StoredResponse, options: { onlyIfUnfinished?: boolean } = {}): Promise<boolean> {
    const { rowCount } = await this.pool.query(responseUpsertSql('$', options.onlyIfUnfinished === true), responseValues(record));
    return (rowCount ?? 0) > 0;
  }

  async getResponse(id: string, keyId: string, now = new Date().toISOString()): Promise<StoredResponse | null> {
    const { rows } = await this.pool.query('SELECT * FROM stored_responses WHERE id = $1 AND key_id = $2 AND expires_at > $3', [id, keyId, toIsoTime(now)]);
    return rows.length > 0 ? rowToStoredResponse(rows[0]) : null;
  }

  async deleteResponse(id: string, keyId: string): Promise<boolean> {
    const { rowCount } = await this.pool.query('DELETE FROM stored_responses WHERE id = $1 AND key_id = $2', [id, keyId]);
    return (rowCount ?? 0) > 0;
  }

  async purgeResponses(now: string): Promise<number> {
    const { rowCount } = await this.pool.query('DELETE FROM stored_responses WHERE expires_at <= $1', [toIsoTime(now)]);
    return rowCount ?? 0;
  }

  async setPayloadLogging(keyId: string, enabled: boolean | null): Promise<void> {
    if (enabled === null) await this.pool.query('DELETE FROM payload_log_keys WHERE key_id = $1', [keyId]);
    else await this.pool.query('INSERT INTO payload_log_keys (key_id, enabled) VALUES ($1, $2) ON CONFLICT (key_id) DO UPDATE SET enabled = excluded.enabled', [keyId, enabled ? 1 : 0]);
  }

  async payloadLogging(keyId: string): Promise<boolean | null> {
    const { rows } = await this.pool.query<{ enabled: number }>('SELECT enabled FROM payload_log_keys WHERE key_id = $1', [keyId]);
    return rows[0] ? rows[0].enabled === 1 : null;
  }

  async savePayload(record: PayloadRecord): Promise<void> {
    await this.pool.query(
      'INSERT INTO payload_logs (id, key_id, created_at, request, response, bytes) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO UPDATE SET request = excluded.request, response = excluded.response, bytes = excluded.bytes',
      [record.id, record.keyId, toIsoTime(record.createdAt), record.request, record.response, record.bytes],
    );
  }

  async getPayload(id: string): Promise<PayloadRecord | null> {
    const { rows } = await this.pool.query('SELECT * FROM payload_logs WHERE id = $1', [id]);
    return rows[0] ? rowToPayload(rows[0]) : null;
  }

  async purgePayloads(before: string, maxTotalBytes: number): Promise<number> {
    const old = await this.pool.query('DELETE FROM payload_logs WHERE created_at < $1', [toIsoTime(before)]);
    const over = await this.pool.query(`DELETE FROM payload_logs WHERE id IN (${OVER_SIZE_IDS} $1)`, [maxTotalBytes]);
    return (old.rowCount ?? 0) + (over.rowCount ?? 0);
  }

  async close(): Promise<void> {
    await this.ledgerWrites.drain();
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
