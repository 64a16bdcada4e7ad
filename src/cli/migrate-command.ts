import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { openPostgresStore } from '../shared/store/postgres-store.js';
import { openSqliteStore } from '../shared/store/sqlite-store.js';
import type { AuditEntry } from '../shared/store/access-records.js';
import type { LedgerEntry, Store } from '../shared/store/store.js';
import { CliError } from './admin-client.js';
import { parseCommandLine } from './arguments.js';

// `switchboard migrate --from <data dir> --to <DATABASE_URL>`: moves keys (secret hashes, limits,
// spend, revocations), projects and the whole usage ledger from the embedded store to PostgreSQL,
// so a deployment that outgrows one process keeps its keys. Idempotent: keys and projects are
// written by id (replacing an earlier copy), ledger records only when their id is not there yet,
// and the daily rollups are rebuilt from the ledger; running it twice gives the same result.
// Users, admin tokens (their hashes) and the audit log move too, audit entries only when new.
// Alert deliveries, refused-request counts, stored responses and dashboard sign-outs stay behind.

export const migrateHelp = `Moving to PostgreSQL
  migrate --from DATA_DIR --to DATABASE_URL [--schema NAME]
                        Copy keys, projects, the usage ledger, users, admin tokens and the
                        audit log from the embedded store
                        (DATA_DIR/switchboard.db) to PostgreSQL. Safe to run again. Schema:
                        --schema, else SWITCHBOARD_DATABASE_SCHEMA, else the default.`;

const PAGE = 5000;

/** Every ledger record of the store, oldest pages last; records sharing a millisecond are never skipped. */
async function* ledgerOf(store: Store): AsyncGenerator<LedgerEntry[]> {
  const seen = new Set<string>();
  let until: string | undefined;
  let limit = PAGE;
  for (;;) {
    const page = await store.listLedger({ ...(until ? { until } : {}), limit });
    const fresh = page.filter((entry) => !seen.has(entry.id));
    if (fresh.length > 0) yield fresh;
    if (page.length < limit) return;
    if (fresh.length === 0) {
      // A whole page in one millisecond: widen the page rather than loop.
      limit *= 2;
      continue;
    }
    for (const entry of fresh) seen.add(entry.id);
    // Inclusive of the oldest millisecond seen (until is exclusive), so its other records come too.
    until = new Date(Date.parse(page[page.length - 1]!.createdAt) + 1).toISOString();
  }
}

export interface MigrationReport {
  keys: number;
  projects: number;
  ledgerRecords: number;
  ledgerWritten: number;
  users: number;
  adminTokens: number;
  auditEntries: number;
}

/** Every audit entry, a page at a time (newest first). */
async function* auditOf(store: Store): AsyncGenerator<AuditEntry[]> {
  let before: string | undefined;
  for (;;) {
    const page = await store.queryAudit({ before, limit: 1000 });
    if (page.length > 0) yield page;
    if (page.length < 1000) return;
    before = page[page.length - 1]!.id;
  }
}

export async function migrateStore(source: Store, target: Store): Promise<MigrationReport> {
  const projects = await source.listProjects();
  for (const project of projects) await target.importProject(project);
  const keys = await source.listKeys();
  for (const key of keys) await target.importKey(key);
  let ledgerRecords = 0;
  let ledgerWritten = 0;
  for await (const page of ledgerOf(source)) {
    ledgerRecords += page.length;
    ledgerWritten += await target.importLedger(page);
  }
  await target.rebuildUsageRollups();
  const users = await source.listUsers();
  for (const user of users) await target.importUser(user);
  const tokens = await source.exportAdminTokens();
  for (const token of tokens) await target.importAdminToken(token);
  let auditEntries = 0;
  for await (const page of auditOf(source)) {
    auditEntries += page.length;
    await target.importAudit(page);
  }
  return { keys: keys.length, projects: projects.length, ledgerRecords, ledgerWritten, users: users.length, adminTokens: tokens.length, auditEntries };
}

export async function migrateCommand(args: string[], environment: NodeJS.ProcessEnv, io: { out: (text: string) => void }, help: string): Promise<void> {
  const { values } = parseCommandLine(args, { from: { type: 'string' }, to: { type: 'string' }, schema: { type: 'string' } }, 0);
  if (values.help) return io.out(help);
  if (!values.from || !values.to) throw new CliError('migrate needs --from DATA_DIR and --to DATABASE_URL, e.g. switchboard migrate --from ./data --to postgres://user@host/db');
  const file = join(values.from, 'switchboard.db');
  if (!existsSync(file)) throw new CliError(`no embedded store at ${file}; --from is the gateway's data folder (SWITCHBOARD_DATA_DIR)`);
  const source = await openSqliteStore(file);
  let target: Store | undefined;
  try {
    target = await openPostgresStore(values.to, { schema: values.schema || environment.SWITCHBOARD_DATABASE_SCHEMA || undefined, max: 2 }).catch((error: Error) => {
      throw new CliError(`could not open PostgreSQL at the --to address: ${error.message}`);
    });
    const report = await migrateStore(source, target);
    if (values.json) return io.out(JSON.stringify(report, null, 2));
    io.out(`Migrated ${report.keys} keys, ${report.projects} projects, ${report.ledgerRecords} ledger records (${report.ledgerWritten} new), ${report.users} users, ${report.adminTokens} admin tokens and ${report.auditEntries} audit entries to PostgreSQL.\nStart the gateway with DATABASE_URL set to use it; running migrate again is safe.`);
  } finally {
    await source.close();
    await target?.close();
  }
}
