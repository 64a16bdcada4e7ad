import type { StoredResponse } from './store.js';
import type { Row } from './store-records.js';
import { toIsoTime } from './usage-plan.js';

// Stored responses as rows, shared by the SQLite and PostgreSQL stores. JSON columns are written as
// text (PostgreSQL casts them to jsonb) and read back from either text or parsed values.

const COLUMNS = 'id, key_id, status, background, response, input_items, context_items, created_at, expires_at';

/**
 * Insert, or replace the same key's row. Another key's row with the same id is left alone (ids are
 * random, so that means a forged id). `unfinishedOnly` keeps a finished (e.g. cancelled) row.
 */
export function responseUpsertSql(placeholder: '?' | '$', unfinishedOnly: boolean): string {
  const p = (n: number, cast = '') => (placeholder === '?' ? '?' : `$${n}${cast}`);
  const values = [p(1), p(2), p(3), p(4), p(5, '::jsonb'), p(6, '::jsonb'), p(7, '::jsonb'), p(8), p(9)].join(', ');
  const guard = unfinishedOnly ? " AND stored_responses.status IN ('queued', 'in_progress')" : '';
  return `INSERT INTO stored_responses (${COLUMNS}) VALUES (${values})
    ON CONFLICT (id) DO UPDATE SET status = excluded.status, response = excluded.response, input_items = excluded.input_items,
      context_items = excluded.context_items, expires_at = excluded.expires_at
    WHERE stored_responses.key_id = excluded.key_id${guard}`;
}

export function responseValues(record: StoredResponse): [string, string, string, boolean, string, string, string, string, string] {
  return [
    record.id,
    record.keyId,
    record.status,
    record.background,
    JSON.stringify(record.response),
    JSON.stringify(record.inputItems),
    JSON.stringify(record.contextItems),
    toIsoTime(record.createdAt),
    toIsoTime(record.expiresAt),
  ];
}

function json<T>(value: unknown): T {
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}

function time(value: unknown): string {
  return value instanceof Date ? value.toISOString() : toIsoTime(String(value));
}

export function rowToStoredResponse(row: Row): StoredResponse {
  return {
    id: String(row.id),
    keyId: String(row.key_id),
    status: String(row.status),
    background: row.background === true || row.background === 1,
    response: json(row.response),
    inputItems: json(row.input_items),
    contextItems: json(row.context_items),
    createdAt: time(row.created_at),
    expiresAt: time(row.expires_at),
  };
}
