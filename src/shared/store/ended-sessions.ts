// Dashboard sessions are stateless signed cookies; only sign-outs need storing, so that a
// signed-out cookie stays dead after a restart and on every ingress sharing the store. A row lives
// until the session would have expired anyway; rows past that are swept at each sign-out.
// Migration 3 of both stores (numbered apart from ledger migrations: renumber if one clashes).

export const ENDED_SESSIONS_MIGRATION = 3;

export const SQLITE_ENDED_SESSIONS_SQL = `
  CREATE TABLE dashboard_sessions_ended (
    id TEXT PRIMARY KEY,
    expires_at TEXT NOT NULL
  ) WITHOUT ROWID;
  CREATE INDEX dashboard_sessions_ended_expiry ON dashboard_sessions_ended (expires_at);
`;

export const POSTGRES_ENDED_SESSIONS_SQL = `
  CREATE TABLE dashboard_sessions_ended (
    id TEXT PRIMARY KEY,
    expires_at TIMESTAMPTZ NOT NULL
  );
  CREATE INDEX dashboard_sessions_ended_expiry ON dashboard_sessions_ended (expires_at);
`;
