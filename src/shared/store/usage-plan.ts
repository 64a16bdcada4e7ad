import type { UsageFilter, UsageRow } from './store.js';
import { SPLIT_COLUMNS } from './usage-split-migration.js';

// How a usage question is answered without reading millions of ledger rows. Both stores keep a
// daily rollup (one row per UTC day, key and served model, updated in the same transaction as the
// ledger row), so whole days inside [since, until) come from the rollup and only the partial days
// at the edges are read from the ledger itself, through its (key_id | served_model, created_at)
// and (created_at) indexes. A question that never covers a whole day reads only the ledger.
// usageSql() turns a plan into one statement; the stores differ only in their SqlDialect.

export interface TimeRange {
  /** Inclusive ISO 8601 UTC start; absent for "from the beginning". */
  since?: string;
  /** Exclusive ISO 8601 UTC end; absent for "until now". */
  until?: string;
}

export interface UsagePlan {
  /** Whole UTC days to read from the rollup, as YYYY-MM-DD: fromDay inclusive, toDay exclusive. Null: none. */
  rollup: { fromDay?: string; toDay?: string } | null;
  /** Partial days to read from the ledger. */
  ledger: TimeRange[];
}

const DAY_MS = 86_400_000;

const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
const iso = (ms: number): string => new Date(ms).toISOString();

// Stored times must share one format for string comparison (SQLite) to order them; parsing in code
// gives both stores the same accept/reject behaviour.
export function toIsoTime(value: string): string {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new RangeError(`not an ISO 8601 time: ${value}`);
  return new Date(ms).toISOString();
}

export function planUsage(filter: Pick<UsageFilter, 'since' | 'until'>): UsagePlan {
  const since = filter.since === undefined ? undefined : Date.parse(toIsoTime(filter.since));
  const until = filter.until === undefined ? undefined : Date.parse(toIsoTime(filter.until));
  // The first whole day starts at the first midnight at or after `since`; whole days end at the
  // last midnight at or before `until`.
  const firstWhole = since === undefined ? undefined : Math.ceil(since / DAY_MS) * DAY_MS;
  const endWhole = until === undefined ? undefined : Math.floor(until / DAY_MS) * DAY_MS;
  if (firstWhole !== undefined && endWhole !== undefined && firstWhole >= endWhole) {
    // Less than one whole day: the ledger alone (an empty range when since >= until).
    return { rollup: null, ledger: [{ since: iso(since!), until: iso(until!) }] };
  }
  const ledger: TimeRange[] = [];
  if (since !== undefined && firstWhole !== since) ledger.push({ since: iso(since), until: iso(firstWhole!) });
  if (until !== undefined && endWhole !== until) ledger.push({ since: iso(endWhole!), until: iso(until) });
  return {
    rollup: { fromDay: firstWhole === undefined ? undefined : dayOf(firstWhole), toDay: endWhole === undefined ? undefined : dayOf(endWhole) },
    ledger,
  };
}

type UsageGroup = NonNullable<UsageFilter['groupBy']>;

/** Where the two stores' SQL differs in the usage and ledger queries. */
export interface SqlDialect {
  /** The placeholder of the parameter at this 1-based position. */
  placeholder(position: number): string;
  /** Appended to a day parameter compared with usage_daily.day. */
  dayParameterCast: string;
  /** The group value of an ungrouped part; typed where UNION ALL needs a type. */
  noGroup: string;
  /** The group value, as YYYY-MM-DD or text, of a ledger row and of a rollup row. */
  ledgerGroups: Record<UsageGroup, string>;
  rollupGroups: Record<UsageGroup, string>;
  /** Appended to a text sort key so both stores order by code point, whatever the locale. */
  codePointOrder: string;
}

const GROUP_FIELDS = { key: 'key_id', model: 'model', day: 'day' } as const;

/** The cache and reasoning split (migration 5), summed in each part of a usage question. */
const SPLIT_SUMS = SPLIT_COLUMNS.map((column) => `SUM(${column}) AS ${column}`).join(', ');

/**
 * One statement answering a usage question: the rollup's whole days plus the ledger's partial
 * days, summed per group. Ungrouped, it yields exactly one row.
 */
export function usageSql(filter: UsageFilter, dialect: SqlDialect): { sql: string; params: unknown[] } {
  const plan = planUsage(filter);
  const group = filter.groupBy;
  const parts: string[] = [];
  const params: unknown[] = [];
  if (plan.rollup) {
    const add = conditionCollector(params, dialect);
    if (filter.keyId !== undefined) add('key_id = ?', filter.keyId);
    // '' stands for "no model served" in the rollup; no ledger row has served_model = ''.
    if (filter.model !== undefined) add(`model = ? AND model <> ''`, filter.model);
    if (plan.rollup.fromDay !== undefined) add(`day >= ?${dialect.dayParameterCast}`, plan.rollup.fromDay);
    if (plan.rollup.toDay !== undefined) add(`day < ?${dialect.dayParameterCast}`, plan.rollup.toDay);
    parts.push(
      `SELECT ${group ? dialect.rollupGroups[group] : dialect.noGroup} AS g, SUM(requests) AS requests, SUM(prompt_tokens) AS prompt_tokens,
         SUM(completion_tokens) AS completion_tokens, SUM(cost_nanos) AS cost_nanos, ${SPLIT_SUMS} FROM usage_daily ${add.where()}${group ? ' GROUP BY 1' : ''}`,
    );
  }
  for (const range of plan.ledger) {
    const where = ledgerWhere(filter, range, params, dialect);
    parts.push(
      `SELECT ${group ? dialect.ledgerGroups[group] : dialect.noGroup} AS g, COUNT(*) AS requests, SUM(prompt_tokens) AS prompt_tokens,
         SUM(completion_tokens) AS completion_tokens, SUM(cost_nanos) AS cost_nanos, ${SPLIT_SUMS} FROM usage_ledger ${where}${group ? ' GROUP BY 1' : ''}`,
    );
  }
  const totals = `COALESCE(SUM(requests), 0) AS requests, COALESCE(SUM(prompt_tokens), 0) AS prompt_tokens,
    COALESCE(SUM(completion_tokens), 0) AS completion_tokens, COALESCE(SUM(cost_nanos), 0) AS cost_nanos,
    ${SPLIT_COLUMNS.map((column) => `COALESCE(SUM(${column}), 0) AS ${column}`).join(', ')}`;
  const from = `(${parts.join(' UNION ALL ')}) AS parts`;
  // "g IS NULL" first so rows without a served model sort last in both stores.
  const sql = group
    ? `SELECT g, ${totals} FROM ${from} GROUP BY g ORDER BY g IS NULL, g${dialect.codePointOrder}`
    : `SELECT ${totals} FROM ${from}`;
  return { sql, params };
}

/** The rows of usageSql() as the Store interface returns them. */
export function usageRows(filter: UsageFilter, rows: Record<string, unknown>[]): UsageRow[] {
  if (!filter.groupBy) return [toUsageRow(rows[0])];
  const field = GROUP_FIELDS[filter.groupBy];
  return rows.map((row) => withGroup(toUsageRow(row), field, row.g));
}

/** The newest ledger rows matching the filter, at most `limit` of them. */
export function ledgerPageSql(filter: UsageFilter, limit: number, dialect: SqlDialect): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const where = ledgerWhere(filter, { since: filter.since, until: filter.until }, params, dialect);
  params.push(limit);
  const order = `created_at DESC, id${dialect.codePointOrder} DESC`;
  return { sql: `SELECT * FROM usage_ledger ${where} ORDER BY ${order} LIMIT ${dialect.placeholder(params.length)}`, params };
}

/** Ledger conditions for the filter within `range`; appends its values to `params`. */
function ledgerWhere(filter: UsageFilter, range: TimeRange, params: unknown[], dialect: SqlDialect): string {
  const add = conditionCollector(params, dialect);
  if (filter.keyId !== undefined) add('key_id = ?', filter.keyId);
  if (filter.model !== undefined) add('served_model = ?', filter.model);
  if (range.since !== undefined) add('created_at >= ?', toIsoTime(range.since));
  if (range.until !== undefined) add('created_at < ?', toIsoTime(range.until));
  return add.where();
}

// Placeholders are numbered by position in the whole statement, so conditions and their values
// are appended together to the one parameter list.
function conditionCollector(params: unknown[], dialect: SqlDialect) {
  const conditions: string[] = [];
  const add = (condition: string, value: unknown): void => {
    params.push(value);
    conditions.push(condition.replace('?', dialect.placeholder(params.length)));
  };
  add.where = (): string => (conditions.length ? `WHERE ${conditions.join(' AND ')}` : '');
  return add;
}

function toUsageRow(row: Record<string, unknown>): UsageRow {
  return {
    requests: Number(row.requests),
    prompt_tokens: Number(row.prompt_tokens),
    completion_tokens: Number(row.completion_tokens),
    cost_usd: Number(row.cost_nanos) / 1e9,
    cache_read_tokens: Number(row.cache_read_tokens ?? 0),
    cache_write_tokens: Number(row.cache_write_tokens ?? 0),
    cache_write_1h_tokens: Number(row.cache_write_1h_tokens ?? 0),
    reasoning_tokens: Number(row.reasoning_tokens ?? 0),
  };
}

// A null group value (requests no model served) leaves the field out: UsageRow has no null there.
function withGroup(row: UsageRow, field: 'key_id' | 'model' | 'day', value: unknown): UsageRow {
  return value === null || value === undefined ? row : { [field]: String(value), ...row };
}
