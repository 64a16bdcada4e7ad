// Migration 8 of both stores: users, per-user admin tokens and the audit log. Times are ISO 8601
// UTC text in both stores (they sort and compare as text), JSON columns are text. An email and a
// sign-in subject belong to at most one user that is not removed; a removed user keeps its row,
// so the audit log can still name it. The audit log is append-only down to the database: a
// trigger refuses every UPDATE and DELETE of it.

export const ACCESS_MIGRATION = 8;

const tables = `
  CREATE TABLE users (
    id TEXT PRIMARY KEY,
    email TEXT NOT NULL,
    name TEXT,
    role TEXT NOT NULL CHECK (role IN ('admin', 'member', 'viewer')),
    projects TEXT NOT NULL,
    subject TEXT,
    created_at TEXT NOT NULL,
    removed_at TEXT,
    sessions_valid_after TEXT
  );
  CREATE UNIQUE INDEX users_active_email ON users (email) WHERE removed_at IS NULL;
  CREATE UNIQUE INDEX users_active_subject ON users (subject) WHERE removed_at IS NULL;
  CREATE INDEX users_subject ON users (subject);
  CREATE TABLE admin_tokens (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    name TEXT NOT NULL,
    secret_hash TEXT NOT NULL UNIQUE,
    hint TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT
  );
  CREATE INDEX admin_tokens_user ON admin_tokens (user_id);
  CREATE TABLE audit_log (
    id TEXT PRIMARY KEY,
    at TEXT NOT NULL,
    actor_kind TEXT NOT NULL,
    actor_id TEXT NOT NULL,
    actor_label TEXT NOT NULL,
    action TEXT NOT NULL,
    target_type TEXT,
    target_id TEXT,
    client TEXT NOT NULL,
    changes TEXT,
    outcome TEXT NOT NULL
  );
  CREATE INDEX audit_log_at ON audit_log (at, id);
  CREATE INDEX audit_log_actor ON audit_log (actor_id, at);
  CREATE INDEX audit_log_target ON audit_log (target_id, at);
`;

export const SQLITE_ACCESS_SQL = `${tables}
  CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
  CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
`;

export const POSTGRES_ACCESS_SQL = `${tables}
  CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'the audit log is append-only'; END
  $$;
  CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
  CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
`;
