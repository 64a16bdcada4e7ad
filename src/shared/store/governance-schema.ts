// Migration 6 of both stores: key governance (allow-lists, expiry, projects, alerts), alert
// deliveries (one row per subject, threshold, webhook and period: the unique index is what makes
// an alert fire once even when several processes cross the threshold together) and refused-request
// counts (aggregated per day, key, model and status, so refusals never write a ledger row each).
// JSON columns (allowed_models, alerts) are text in both stores.

export const GOVERNANCE_MIGRATION = 6;

function governanceSql(time: string, bigint: string, real: string): string {
  return `
    ALTER TABLE api_keys ADD COLUMN allowed_models TEXT;
    ALTER TABLE api_keys ADD COLUMN expires_at ${time};
    ALTER TABLE api_keys ADD COLUMN project_id TEXT;
    ALTER TABLE api_keys ADD COLUMN alerts TEXT;
    CREATE INDEX api_keys_project ON api_keys (project_id);
    CREATE TABLE projects (
      id TEXT PRIMARY KEY,
      name TEXT NOT NULL,
      budget_usd ${real},
      budget_period TEXT NOT NULL DEFAULT 'none' CHECK (budget_period IN ('none', 'daily', 'weekly', 'monthly')),
      rpm INTEGER,
      tpm INTEGER,
      alerts TEXT,
      created_at ${time} NOT NULL
    );
    CREATE TABLE alert_deliveries (
      id TEXT PRIMARY KEY,
      subject_kind TEXT NOT NULL,
      subject_id TEXT NOT NULL,
      threshold_percent INTEGER NOT NULL,
      webhook_url TEXT NOT NULL,
      period_start ${time} NOT NULL,
      status TEXT NOT NULL,
      attempts INTEGER NOT NULL,
      last_status INTEGER,
      last_error TEXT,
      created_at ${time} NOT NULL,
      delivered_at ${time}
    );
    CREATE UNIQUE INDEX alert_deliveries_once ON alert_deliveries (subject_id, threshold_percent, webhook_url, period_start);
    CREATE TABLE refused_requests (
      day TEXT NOT NULL,
      key_id TEXT NOT NULL,
      model TEXT NOT NULL,
      status INTEGER NOT NULL,
      count ${bigint} NOT NULL,
      PRIMARY KEY (day, key_id, model, status)
    );
  `;
}

export const SQLITE_GOVERNANCE_SQL = governanceSql('TEXT', 'INTEGER', 'REAL');
export const POSTGRES_GOVERNANCE_SQL = governanceSql('TIMESTAMPTZ', 'BIGINT', 'DOUBLE PRECISION');
