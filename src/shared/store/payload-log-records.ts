// Request logs (opt-in payload logging): the bodies of a request and its answer, kept apart from the
// ledger in their own table with their own retention (age and total size), joined to the ledger by
// the request id. Per-key settings live in their own table too: null follows the global default.

export interface PayloadRecord {
  /** The request id, as in the ledger. */
  id: string;
  keyId: string;
  createdAt: string;
  /** JSON text, redacted and possibly truncated. */
  request: string;
  response: string;
  /** Size of both bodies, for the total-size bound. */
  bytes: number;
}

export const PAYLOAD_LOG_MIGRATION = 7;

/** The same SQL for both stores (TEXT and INTEGER columns, ISO 8601 times that sort as text). */
export const PAYLOAD_LOG_SQL = `
  CREATE TABLE payload_logs (
    id TEXT PRIMARY KEY,
    key_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    request TEXT NOT NULL,
    response TEXT NOT NULL,
    bytes INTEGER NOT NULL
  );
  CREATE INDEX payload_logs_created ON payload_logs (created_at);
  CREATE TABLE payload_log_keys (
    key_id TEXT PRIMARY KEY,
    enabled INTEGER NOT NULL
  );
`;

/** Rows beyond the newest `maxTotalBytes` of bodies ($2 / ? is the bound). */
export const OVER_SIZE_IDS = `SELECT id FROM (SELECT id, SUM(bytes) OVER (ORDER BY created_at DESC, id DESC) AS running FROM payload_logs) AS newest WHERE running > `;

export function rowToPayload(row: Record<string, unknown>): PayloadRecord {
  return {
    id: String(row.id),
    keyId: String(row.key_id),
    createdAt: String(row.created_at),
    request: String(row.request),
    response: String(row.response),
    bytes: Number(row.bytes),
  };
}
