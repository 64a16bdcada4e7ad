import { OVER_SIZE_IDS, PAYLOAD_LOG_MIGRATION, PAYLOAD_LOG_SQL, rowToPayload, type PayloadRecord } from './payload-log-records.js';
import { chmodSync, closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { KeyPatch, KeyRecord, LedgerEntry, NewKey, Store, StoredResponse, UsageFilter, UsageRow } from './store.js';
import { responseUpsertSql, responseValues, rowToStoredResponse } from './response-records.js';
import {
  LEDGER_COLUMNS, NEW_KEY_COLUMNS, assertNanos, newKeyPlaceholders, ledgerLimit, ledgerValues, newKeyValues, patchAssignments, rowToKey, rowToLedger,
  type ColumnEncoding, type Row,
} from './store-records.js';
import { ledgerPageSql, toIsoTime, usageRows, usageSql, type SqlDialect } from './usage-plan.js';
import { rollupFromLedgerSql, splitRollupAssignments, SPLIT_COLUMNS, SQLITE_USAGE_SPLIT_SQL, USAGE_SPLIT_MIGRATION } from './usage-split-migration.js';
import { ENDED_SESSIONS_MIGRATION, SQLITE_ENDED_SESSIONS_SQL } from './ended-sessions.js';
import { GOVERNANCE_MIGRATION, SQLITE_GOVERNANCE_SQL } from './governance-schema.js';
import { ACCESS_MIGRATION, SQLITE_ACCESS_SQL } from './access-schema.js';
import { accessMethods } from './access-tables.js';
import type { AccessStore } from './access-records.js';
import { governanceMethods, type GovernanceMethods, type SqlRunner } from './governance-tables.js';

// The embedded default store: one database file in the data folder. better-sqlite3 is synchronous,
// which is the fastest option for a single process; the async Store interface is kept so the same
// callers work against PostgreSQL. Times are stored as normalized ISO 8601 UTC text, which sorts
// and compares correctly as plain strings. Passes test/store-conformance.test.ts.

type Db = Database.Database;

// Fills the daily rollup from the ledger: the backfill of migration 2 (rebuildUsageRollups() uses rollupFromLedgerSql, split included).
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
  { version: ENDED_SESSIONS_MIGRATION, sql: SQLITE_ENDED_SESSIONS_SQL },
  {
    // Stored responses of the Responses API (POST /v1/responses with store), per key, until expires_at.
    version: 4,
    sql: `
      CREATE TABLE stored_responses (
        id TEXT PRIMARY KEY,
        key_id TEXT NOT NULL,
        status TEXT NOT NULL,
        background INTEGER NOT NULL,
        response TEXT NOT NULL,
        input_items TEXT NOT NULL,
        context_items TEXT NOT NULL,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL
      );
      CREATE INDEX stored_responses_expiry ON stored_responses (expires_at);
    `,
  },
  { version: USAGE_SPLIT_MIGRATION, sql: SQLITE_USAGE_SPLIT_SQL },
  { version: GOVERNANCE_MIGRATION, sql: SQLITE_GOVERNANCE_SQL },
  // Opt-in request logs, apart from the ledger (payload-log-records.ts).
  { version: PAYLOAD_LOG_MIGRATION, sql: PAYLOAD_LOG_SQL },
  // Users, per-user admin tokens and the append-only audit log (access-schema.ts).
  { version: ACCESS_MIGRATION, sql: SQLITE_ACCESS_SQL },
];

// BigInt binds as an integer, so sums of nano-USD stay in exact 64-bit integer arithmetic.
const ENCODING: ColumnEncoding = {
  nanos: (value) => BigInt(value),
  flag: (value) => (value ? 1 : 0),
  readFlag: (value) => value === 1,
  readAttempts: (value) => JSON.parse(value as string),
};

// The group value of a ledger row and of a rollup row; both parts of a query yield the same text.
// BINARY, SQLite's default collation, already orders text by code point.
const DIALECT: SqlDialect = {
  placeholder: () => '?',
  dayParameterCast: '',
  noGroup: 'NULL',
  ledgerGroups: { key: 'key_id', model: 'served_model', day: 'substr(created_at, 1, 10)' },
  rollupGroups: { key: 'key_id', model: "NULLIF(model, '')", day: 'day' },
  codePointOrder: '',
};

export async function openSqliteStore(filePath: string): Promise<Store> {
  if (!isInMemory(filePath)) {
    mkdirSync(dirname(filePath), { recursive: true });
    // The file holds every key hash and the whole ledger: owner-only, like the admin token. SQLite
    // gives the -wal and -shm files the database file's mode; older installs get theirs fixed here.
    closeSync(openSync(filePath, 'a', 0o600));
    restrictToOwner(filePath);
  }
  const db = new Database(filePath);
  try {
    // busy_timeout first: switching to WAL needs a lock another process may hold at that moment.
    db.pragma('busy_timeout = 5000');
    db.pragma('journal_mode = WAL');
    if (!isInMemory(filePath)) for (const suffix of ['-wal', '-shm']) restrictToOwner(`${filePath}${suffix}`);
    // NORMAL is durable across application crashes in WAL mode and avoids an fsync per commit.
    db.pragma('synchronous = NORMAL');
    migrate(db);
  } catch (err) {
    db.close();
    throw err;
  }
  return new SqliteStore(db);
}

function restrictToOwner(path: string): void {
  try {
    chmodSync(path, 0o600);
  } catch (error) {
    // Missing (no WAL yet) or not ours to change (a file another user created): leave it.
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'EPERM') throw error;
  }
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

interface PendingRecord {
  entry: LedgerEntry;
  resolve: () => void;
  reject: (error: unknown) => void;
}

// The governance and access methods are mixed in (governance-tables.ts, access-tables.ts), shared with the PostgreSQL store.
interface SqliteStore extends GovernanceMethods, AccessStore {}

class SqliteStore implements Store {
  private readonly statements = new Map<string, Database.Statement>();
  private readonly recordTx: (entries: LedgerEntry[]) => void;
  private pending: PendingRecord[] = [];

  constructor(private readonly db: Db) {
    const runner: SqlRunner = {
      all: async (sql, params) => this.stmt(sql).all(...params) as Row[],
      run: async (sql, params) => this.stmt(sql).run(...params).changes,
    };
    Object.assign(this, governanceMethods(runner, ENCODING), accessMethods(runner));
    this.recordTx = db.transaction((entries: LedgerEntry[]) => {
      for (const entry of entries) this.recordInTx(entry);
    }).immediate as (entries: LedgerEntry[]) => void;
  }

  async migrate(): Promise<void> {
    migrate(this.db);
  }

  async createKey(key: NewKey): Promise<KeyRecord> {
    this.stmt(`INSERT INTO api_keys (${NEW_KEY_COLUMNS}) VALUES (${newKeyPlaceholders('?')})`).run(...newKeyValues(key));
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
    const { columns, values } = patchAssignments(patch);
    if (columns.length > 0) {
      const sets = columns.map((column) => `${column} = ?`).join(', ');
      this.stmt(`UPDATE api_keys SET ${sets} WHERE id = ?`).run(...values, id);
    }
    return this.readKey(id);
  }

  async revokeKey(id: string, at: string): Promise<KeyRecord | null> {
    // COALESCE keeps the first revocation time: revoking twice must not rewrite history.
    this.stmt('UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?').run(toIsoTime(at), id);
    return this.readKey(id);
  }

  /**
   * A commit is the largest cost of a request in the embedded default, so records that arrive in
   * the same event-loop turn share one transaction; each caller's promise still resolves only once
   * its record is committed.
   */
  recordUsage(entry: LedgerEntry): Promise<void> {
    return new Promise((resolve, reject) => {
      assertNanos(entry.costNanos);
      if (this.pending.push({ entry, resolve, reject }) === 1) setImmediate(() => this.flushRecords());
    });
  }

  private flushRecords(): void {
    const batch = this.pending;
    this.pending = [];
    try {
      this.recordTx(batch.map((record) => record.entry));
      for (const record of batch) record.resolve();
    } catch {
      // One bad record must not fail its neighbours: retry each in its own transaction.
      for (const record of batch) {
        try {
          this.recordTx([record.entry]);
          record.resolve();
        } catch (error) {
          record.reject(error);
        }
      }
    }
  }

  async spentNanosSince(keyId: string, since: string): Promise<number> {
    // Budget periods start at midnight UTC, so this is normally a read of the key's rollup rows.
    const { sql, params } = usageSql({ keyId, since }, DIALECT);
    return Number((this.stmt(sql).get(...params) as Row).cost_nanos);
  }

  async queryUsage(filter: UsageFilter): Promise<UsageRow[]> {
    const { sql, params } = usageSql(filter, DIALECT);
    return usageRows(filter, this.stmt(sql).all(...params) as Row[]);
  }

  async rebuildUsageRollups(): Promise<void> {
    this.db.transaction(() => {
      this.db.exec('DELETE FROM usage_daily');
      this.db.exec(rollupFromLedgerSql('substr(created_at, 1, 10)'));
    }).immediate();
  }

  async listLedger(filter: UsageFilter & { limit?: number }): Promise<LedgerEntry[]> {
    const { sql, params } = ledgerPageSql(filter, ledgerLimit(filter.limit), DIALECT);
    return (this.stmt(sql).all(...params) as Row[]).map((row) => rowToLedger(row, ENCODING));
  }

  async endDashboardSession(id: string, expiresAt: string): Promise<void> {
    this.db.transaction(() => {
      this.stmt('DELETE FROM dashboard_sessions_ended WHERE expires_at <= ?').run(new Date().toISOString());
      this.stmt('INSERT INTO dashboard_sessions_ended (id, expires_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING').run(id, toIsoTime(expiresAt));
    }).immediate();
  }

  async isDashboardSessionEnded(id: string): Promise<boolean> {
    return this.stmt('SELECT 1 FROM dashboard_sessions_ended WHERE id = ?').get(id) !== undefined;
  }

  async saveResponse(record: StoredResponse, options: { onlyIfUnfinished?: boolean } = {}): Promise<boolean> {
    const values = responseValues(record);
    const result = this.stmt(responseUpsertSql('?', options.onlyIfUnfinished === true)).run(...values.slice(0, 3), values[3] ? 1 : 0, ...values.slice(4));
    return result.changes > 0;
  }

  async getResponse(id: string, keyId: string, now = new Date().toISOString()): Promise<StoredResponse | null> {
    const row = this.stmt('SELECT * FROM stored_responses WHERE id = ? AND key_id = ? AND expires_at > ?').get(id, keyId, toIsoTime(now)) as Row | undefined;
    return row ? rowToStoredResponse(row) : null;
  }

  async deleteResponse(id: string, keyId: string): Promise<boolean> {
    return this.stmt('DELETE FROM stored_responses WHERE id = ? AND key_id = ?').run(id, keyId).changes > 0;
  }

  async purgeResponses(now: string): Promise<number> {
    return this.stmt('DELETE FROM stored_responses WHERE expires_at <= ?').run(toIsoTime(now)).changes;
  }

  async setPayloadLogging(keyId: string, enabled: boolean | null): Promise<void> {
    if (enabled === null) this.stmt('DELETE FROM payload_log_keys WHERE key_id = ?').run(keyId);
    else this.stmt('INSERT INTO payload_log_keys (key_id, enabled) VALUES (?, ?) ON CONFLICT (key_id) DO UPDATE SET enabled = excluded.enabled').run(keyId, enabled ? 1 : 0);
  }

  async payloadLogging(keyId: string): Promise<boolean | null> {
    const row = this.stmt('SELECT enabled FROM payload_log_keys WHERE key_id = ?').get(keyId) as { enabled: number } | undefined;
    return row ? row.enabled === 1 : null;
  }

  async savePayload(record: PayloadRecord): Promise<void> {
    this.stmt('INSERT OR REPLACE INTO payload_logs (id, key_id, created_at, request, response, bytes) VALUES (?, ?, ?, ?, ?, ?)')
      .run(record.id, record.keyId, toIsoTime(record.createdAt), record.request, record.response, record.bytes);
  }

  async getPayload(id: string): Promise<PayloadRecord | null> {
    const row = this.stmt('SELECT * FROM payload_logs WHERE id = ?').get(id) as Record<string, unknown> | undefined;
    return row ? rowToPayload(row) : null;
  }

  async purgePayloads(before: string, maxTotalBytes: number): Promise<number> {
    const old = this.stmt('DELETE FROM payload_logs WHERE created_at < ?').run(toIsoTime(before)).changes;
    return old + this.stmt(`DELETE FROM payload_logs WHERE id IN (${OVER_SIZE_IDS} ?)`).run(maxTotalBytes).changes;
  }

  async close(): Promise<void> {
    // Records waiting for their shared transaction are written before the file closes.
    if (this.pending.length > 0 && this.db.open) this.flushRecords();
    if (this.db.open) this.db.close();
  }

  private recordInTx(entry: LedgerEntry): void {
    const inserted = this.stmt(
      `INSERT INTO usage_ledger (${LEDGER_COLUMNS})
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
    ).run(...ledgerValues(entry, ENCODING));
    // A retried settlement re-sends the same ledger id; charging only on insert keeps spend exact.
    if (inserted.changes === 0) return;
    const at = toIsoTime(entry.createdAt);
    this.stmt(
      `UPDATE api_keys SET spent_nanos = spent_nanos + ?,
         last_used_at = CASE WHEN last_used_at IS NULL OR last_used_at < ? THEN ? ELSE last_used_at END
       WHERE id = ?`,
    ).run(BigInt(entry.costNanos), at, at, entry.keyId);
    this.stmt(
      `INSERT INTO usage_daily (day, key_id, model, requests, prompt_tokens, completion_tokens, cost_nanos, ${SPLIT_COLUMNS.join(', ')})
       VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (day, key_id, model) DO UPDATE SET requests = requests + 1,
         prompt_tokens = prompt_tokens + excluded.prompt_tokens,
         completion_tokens = completion_tokens + excluded.completion_tokens,
         cost_nanos = cost_nanos + excluded.cost_nanos,
         ${splitRollupAssignments('', 'excluded')}`,
    ).run(at.slice(0, 10), entry.keyId, entry.servedModel ?? '', entry.promptTokens, entry.completionTokens, BigInt(entry.costNanos),
      entry.cacheReadTokens ?? 0, entry.cacheWriteTokens ?? 0, entry.cacheWrite1hTokens ?? 0, entry.reasoningTokens ?? 0);
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
