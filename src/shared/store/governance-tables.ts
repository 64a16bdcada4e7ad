import type { AlertDelivery, BudgetAlert, BudgetPeriod, KeyRecord, LedgerEntry, NewProject, ProjectPatch, ProjectRecord, RefusedCount, Store } from './store.js';
import { jsonColumn, LEDGER_COLUMNS, ledgerValues, readJsonColumn, timeOf, type ColumnEncoding, type Row } from './store-records.js';
import { toIsoTime } from './usage-plan.js';

// The governance tables of migration 6 (governance-schema.ts), written once for both stores: SQL
// is written with `?` placeholders and the PostgreSQL runner numbers them. Both stores pass
// test/store-conformance.test.ts through these methods.

export interface SqlRunner {
  all(sql: string, params: unknown[]): Promise<Row[]>;
  /** Runs a statement; the number of rows it changed. */
  run(sql: string, params: unknown[]): Promise<number>;
}

export type GovernanceMethods = Pick<Store,
  | 'createProject' | 'getProject' | 'listProjects' | 'updateProject' | 'deleteProject' | 'projectSpentNanosSince'
  | 'claimAlertDelivery' | 'updateAlertDelivery' | 'listAlertDeliveries' | 'addRefusedCounts' | 'queryRefusedCounts'
  | 'importKey' | 'importProject' | 'importLedger'>;

/** `?` placeholders as PostgreSQL's `$1, $2, ...`. */
export function numberPlaceholders(sql: string): string {
  let index = 0;
  return sql.replace(/\?/g, () => `$${++index}`);
}

const PROJECT_PATCH: Record<keyof ProjectPatch, string> = {
  name: 'name', budgetUsd: 'budget_usd', budgetPeriod: 'budget_period', rpm: 'rpm', tpm: 'tpm', alerts: 'alerts',
};

const KEY_IMPORT_COLUMNS = [
  'id', 'name', 'public_id', 'secret_hash', 'key_hint', 'budget_usd', 'budget_period', 'rpm', 'tpm', 'max_concurrent', 'spent_nanos',
  'created_at', 'revoked_at', 'last_used_at', 'allowed_models', 'expires_at', 'project_id', 'alerts',
];

function rowToProject(row: Row): ProjectRecord {
  return {
    id: row.id as string,
    name: row.name as string,
    budgetUsd: row.budget_usd === null ? null : Number(row.budget_usd),
    budgetPeriod: row.budget_period as BudgetPeriod,
    rpm: row.rpm as number | null,
    tpm: row.tpm as number | null,
    alerts: readJsonColumn<BudgetAlert[]>(row.alerts, []),
    createdAt: timeOf(row.created_at) as string,
  };
}

function rowToDelivery(row: Row): AlertDelivery {
  return {
    id: row.id as string,
    subjectKind: row.subject_kind as 'key' | 'project',
    subjectId: row.subject_id as string,
    thresholdPercent: Number(row.threshold_percent),
    webhookUrl: row.webhook_url as string,
    periodStart: timeOf(row.period_start) as string,
    status: row.status as string,
    attempts: Number(row.attempts),
    lastStatus: row.last_status === null ? null : Number(row.last_status),
    lastError: (row.last_error as string | null) ?? null,
    createdAt: timeOf(row.created_at) as string,
    deliveredAt: timeOf(row.delivered_at),
  };
}

const upsertAll = (columns: string[]) => columns.filter((column) => column !== 'id').map((column) => `${column} = excluded.${column}`).join(', ');
const marks = (count: number) => Array.from({ length: count }, () => '?').join(', ');

export function governanceMethods(sql: SqlRunner, encoding: ColumnEncoding): GovernanceMethods {
  const getProject = async (id: string) => {
    const [row] = await sql.all('SELECT * FROM projects WHERE id = ?', [id]);
    return row ? rowToProject(row) : null;
  };
  const ledgerColumns = LEDGER_COLUMNS.split(',').map((column) => column.trim());
  return {
    async createProject(project: NewProject) {
      await sql.run('INSERT INTO projects (id, name, budget_usd, budget_period, rpm, tpm, alerts, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)', [
        project.id, project.name, project.budgetUsd, project.budgetPeriod, project.rpm, project.tpm, jsonColumn(project.alerts), toIsoTime(project.createdAt),
      ]);
      return (await getProject(project.id))!;
    },
    getProject,
    async listProjects() {
      return (await sql.all('SELECT * FROM projects ORDER BY created_at, id', [])).map(rowToProject);
    },
    async updateProject(id, patch) {
      const fields = (Object.keys(PROJECT_PATCH) as (keyof ProjectPatch)[]).filter((field) => patch[field] !== undefined);
      if (fields.length > 0) {
        const values = fields.map((field) => (field === 'alerts' ? jsonColumn(patch.alerts) : patch[field]));
        await sql.run(`UPDATE projects SET ${fields.map((field) => `${PROJECT_PATCH[field]} = ?`).join(', ')} WHERE id = ?`, [...values, id]);
      }
      return getProject(id);
    },
    async deleteProject(id) {
      await sql.run('UPDATE api_keys SET project_id = NULL WHERE project_id = ?', [id]);
      return (await sql.run('DELETE FROM projects WHERE id = ?', [id])) > 0;
    },
    async projectSpentNanosSince(projectId, since) {
      const [row] = await sql.all(
        'SELECT COALESCE(SUM(l.cost_nanos), 0) AS n FROM usage_ledger l JOIN api_keys k ON k.id = l.key_id WHERE k.project_id = ? AND l.created_at >= ?',
        [projectId, toIsoTime(since)],
      );
      return Number(row?.n ?? 0);
    },
    async claimAlertDelivery(d) {
      const changed = await sql.run(
        `INSERT INTO alert_deliveries (id, subject_kind, subject_id, threshold_percent, webhook_url, period_start, status, attempts, last_status, last_error, created_at, delivered_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (subject_id, threshold_percent, webhook_url, period_start) DO NOTHING`,
        [d.id, d.subjectKind, d.subjectId, d.thresholdPercent, d.webhookUrl, toIsoTime(d.periodStart), d.status, d.attempts, d.lastStatus, d.lastError, toIsoTime(d.createdAt), d.deliveredAt ? toIsoTime(d.deliveredAt) : null],
      );
      return changed === 1;
    },
    async updateAlertDelivery(id, f) {
      await sql.run('UPDATE alert_deliveries SET status = ?, attempts = ?, last_status = ?, last_error = ?, delivered_at = ? WHERE id = ?', [
        f.status, f.attempts, f.lastStatus, f.lastError, f.deliveredAt ? toIsoTime(f.deliveredAt) : null, id,
      ]);
    },
    async listAlertDeliveries(filter) {
      const limit = Math.max(0, Math.min(1000, Math.trunc(filter.limit ?? 100)));
      const rows = filter.subjectId === undefined
        ? await sql.all(`SELECT * FROM alert_deliveries ORDER BY created_at DESC, id LIMIT ${limit}`, [])
        : await sql.all(`SELECT * FROM alert_deliveries WHERE subject_id = ? ORDER BY created_at DESC, id LIMIT ${limit}`, [filter.subjectId]);
      return rows.map(rowToDelivery);
    },
    async addRefusedCounts(rows: RefusedCount[]) {
      for (const r of rows) {
        await sql.run(
          `INSERT INTO refused_requests (day, key_id, model, status, count) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (day, key_id, model, status) DO UPDATE SET count = refused_requests.count + excluded.count`,
          [r.day, r.keyId, r.model, r.status, r.count],
        );
      }
    },
    async queryRefusedCounts(filter) {
      const where: string[] = [];
      const params: unknown[] = [];
      if (filter.keyId !== undefined) { where.push('key_id = ?'); params.push(filter.keyId); }
      if (filter.since !== undefined) { where.push('day >= ?'); params.push(toIsoTime(filter.since).slice(0, 10)); }
      if (filter.until !== undefined) { where.push('day <= ?'); params.push(toIsoTime(filter.until).slice(0, 10)); }
      const rows = await sql.all(
        `SELECT key_id, model, status, SUM(count) AS count FROM refused_requests ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
         GROUP BY key_id, model, status ORDER BY key_id, model, status`,
        params,
      );
      return rows.map((row) => ({ keyId: row.key_id as string, model: row.model as string, status: Number(row.status), count: Number(row.count) }));
    },
    async importKey(k: KeyRecord) {
      const values = [
        k.id, k.name, k.publicId, k.secretHash, k.keyHint, k.budgetUsd, k.budgetPeriod, k.rpm, k.tpm, k.maxConcurrent, encoding.nanos(Math.round(k.spentUsd * 1e9)),
        toIsoTime(k.createdAt), k.revokedAt ? toIsoTime(k.revokedAt) : null, k.lastUsedAt ? toIsoTime(k.lastUsedAt) : null,
        jsonColumn(k.allowedModels), k.expiresAt ? toIsoTime(k.expiresAt) : null, k.projectId, jsonColumn(k.alerts),
      ];
      await sql.run(
        `INSERT INTO api_keys (${KEY_IMPORT_COLUMNS.join(', ')}) VALUES (${marks(KEY_IMPORT_COLUMNS.length)}) ON CONFLICT (id) DO UPDATE SET ${upsertAll(KEY_IMPORT_COLUMNS)}`,
        values,
      );
    },
    async importProject(p: ProjectRecord) {
      const columns = ['id', 'name', 'budget_usd', 'budget_period', 'rpm', 'tpm', 'alerts', 'created_at'];
      await sql.run(`INSERT INTO projects (${columns.join(', ')}) VALUES (${marks(columns.length)}) ON CONFLICT (id) DO UPDATE SET ${upsertAll(columns)}`, [
        p.id, p.name, p.budgetUsd, p.budgetPeriod, p.rpm, p.tpm, jsonColumn(p.alerts), toIsoTime(p.createdAt),
      ]);
    },
    async importLedger(entries: LedgerEntry[]) {
      let written = 0;
      for (const entry of entries) {
        written += await sql.run(`INSERT INTO usage_ledger (${ledgerColumns.join(', ')}) VALUES (${marks(ledgerColumns.length)}) ON CONFLICT (id) DO NOTHING`, ledgerValues(entry, encoding));
      }
      return written;
    },
  };
}
