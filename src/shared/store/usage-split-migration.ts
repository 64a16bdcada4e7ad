// Migration 5 (both stores): the cache and reasoning split of each request, in the ledger and in
// the daily rollup. Each is a subset of prompt_tokens (cache reads, cache writes of every TTL, the
// 1-hour writes among them) or of completion_tokens (reasoning). Rows written before it read 0:
// their cost was computed without the split, and stays as billed.

export const USAGE_SPLIT_MIGRATION = 5;

/** The split's columns, in this order, in both tables. */
export const SPLIT_COLUMNS = ['cache_read_tokens', 'cache_write_tokens', 'cache_write_1h_tokens', 'reasoning_tokens'] as const;

function addColumns(table: string, type: string): string {
  return SPLIT_COLUMNS.map((column) => `ALTER TABLE ${table} ADD COLUMN ${column} ${type} NOT NULL DEFAULT 0;`).join('\n');
}

export const SQLITE_USAGE_SPLIT_SQL = `${addColumns('usage_ledger', 'INTEGER')}\n${addColumns('usage_daily', 'INTEGER')}`;
export const POSTGRES_USAGE_SPLIT_SQL = `${addColumns('usage_ledger', 'INTEGER')}\n${addColumns('usage_daily', 'BIGINT')}`;

/** rebuildUsageRollups() from migration 5 on: the rollup from the ledger, split included. `day` is the dialect's day of created_at. */
export function rollupFromLedgerSql(day: string): string {
  const columns = SPLIT_COLUMNS.join(', ');
  const sums = SPLIT_COLUMNS.map((column) => `SUM(${column})`).join(', ');
  return `INSERT INTO usage_daily (day, key_id, model, requests, prompt_tokens, completion_tokens, cost_nanos, ${columns})
  SELECT ${day}, key_id, COALESCE(served_model, ''), COUNT(*), SUM(prompt_tokens), SUM(completion_tokens), SUM(cost_nanos), ${sums}
  FROM usage_ledger GROUP BY 1, 2, 3`;
}

/** The rollup upsert's SET clause for the split (`prefix` names the existing row: "" in SQLite, "d." in PostgreSQL). */
export function splitRollupAssignments(prefix: string, excluded: string): string {
  return SPLIT_COLUMNS.map((column) => `${column} = ${prefix}${column} + ${excluded}.${column}`).join(',\n         ');
}
