import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedGateway, type EmbeddedGateway } from '../src/embedded-gateway.js';
import { randomBytes } from 'node:crypto';
import { principalOfAdminToken } from '../src/shared/access/principal-lookup.js';
import { openPostgresStore } from '../src/shared/store/postgres-store.js';
import { openSqliteStore } from '../src/shared/store/sqlite-store.js';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from './doubles/openai-provider-double.js';
import { runCliBinary, runCliInProcess, type CliRun } from './support/cli-runner.js';
import { testEnvironment } from './support/gateway-harness.js';
import { dropSchema } from './support/scaled-harness.js';

// Users, admin tokens and the audit log from the `switchboard` CLI, against the embedded gateway;
// the per-user token it creates is then used by the CLI itself (SWITCHBOARD_ADMIN_TOKEN).

let double: OpenAiProviderDouble;
let gateway: EmbeddedGateway;
let dataDir: string;
const secrets: string[] = [];

function cli(args: string[], token = gateway.adminToken): Promise<CliRun> {
  return runCliInProcess(args, { SWITCHBOARD_URL: gateway.url, SWITCHBOARD_ADMIN_TOKEN: token });
}

async function json(args: string[], token?: string): Promise<any> {
  const run = await cli([...args, '--json'], token);
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout);
}

function binary(args: string[], token: string): Promise<CliRun> {
  return runCliBinary(args, { SWITCHBOARD_URL: gateway.url, SWITCHBOARD_ADMIN_TOKEN: token });
}

beforeAll(async () => {
  double = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
  dataDir = mkdtempSync(join(tmpdir(), 'switchboard-access-cli-'));
  gateway = await startEmbeddedGateway({ environment: testEnvironment({ openAiUrl: double.url }, dataDir) });
  secrets.push(gateway.adminToken);
}, 60_000);

afterAll(async () => {
  await gateway?.close();
  await double?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('switchboard CLI: users, admin tokens and the audit log', () => {
  it('adds a user, gives them a token shown once, and the token acts with their role until they are removed', async () => {
    const added = await cli(['users', 'add', '--email', 'Dana@Example.com', '--role', 'viewer', '--name', 'Dana']);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toMatch(/Added user usr_\w+ dana@example\.com \(viewer\)/);
    const list = await cli(['users', 'list']);
    expect(list.stdout).toMatch(/usr_\w+\s+dana@example\.com\s+Dana\s+viewer\s+-\s+active/);

    const created = await cli(['admin-tokens', 'create', '--user', 'dana@example.com', '--name', 'dana laptop']);
    expect(created.code, created.stderr).toBe(0);
    const token = /(sbat_[A-Za-z0-9_-]{43})/.exec(created.stdout)![1]!;
    secrets.push(token);
    expect(created.stderr).toContain('only time the token is shown');
    const tokens = await cli(['admin-tokens', 'list', '--user', 'dana@example.com']);
    expect(tokens.stdout).toMatch(/atk_\w+\s+usr_\w+\s+dana laptop\s+sbat_\.\.\.\S{4}\s+active/);
    expect(tokens.stdout).not.toContain(token);

    // As a viewer: reads work, changes are refused with the role named.
    expect((await json(['keys', 'list'], token)).object).toBe('list');
    const refused = await cli(['keys', 'create', '--name', 'by a viewer'], token);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/Your role \(viewer\) is read-only\. \[insufficient_role, HTTP 403\]/);

    // Promoted, the same token creates keys at once.
    const promoted = await cli(['users', 'set-role', 'dana@example.com', 'admin']);
    expect(promoted.stdout).toMatch(/dana@example\.com \(admin\); in effect now/);
    const key = await json(['keys', 'create', '--name', 'by dana'], token);
    secrets.push(key.key);

    const removed = await cli(['users', 'remove', 'dana@example.com']);
    expect(removed.stdout).toMatch(/Removed user usr_\w+ \(dana@example\.com\)/);
    const after = await cli(['keys', 'list'], token);
    expect(after.code).toBe(1);
    expect(after.stderr).toMatch(/revoked, or its user was removed.*\[invalid_admin_token, HTTP 401\]/);
  });

  it('makes a member of projects, and revokes a single token', async () => {
    const project = await json(['projects', 'create', '--name', 'cli team']);
    const member = await json(['users', 'add', '--email', 'mo@example.com', '--role', 'member', '--project', project.id]);
    expect(member).toMatchObject({ role: 'member', projects: [project.id] });
    const created = await json(['admin-tokens', 'create', '--user', member.id, '--name', 'mo ci']);
    secrets.push(created.token);
    const key = await json(['keys', 'create', '--name', 'mo key', '--project', project.id], created.token);
    secrets.push(key.key);
    const outside = await cli(['keys', 'create', '--name', 'outside'], created.token);
    expect(outside.stderr).toContain('insufficient_role');
    const revoked = await cli(['admin-tokens', 'revoke', created.id]);
    expect(revoked.stdout).toContain(`Revoked admin token ${created.id}`);
    expect((await cli(['keys', 'list'], created.token)).code).toBe(1);
    const bad = await cli(['users', 'set-role', member.id, 'owner']);
    expect([bad.code, bad.stderr]).toEqual([1, expect.stringContaining("unknown role 'owner'")]);
    const missing = await cli(['users', 'remove', 'nobody@example.com']);
    expect(missing.stderr).toContain("no user with email 'nobody@example.com'");
  });

  it('shows the audit log with who did what, filtered, and never a secret', async () => {
    const byDana = await json(['audit', '--actor', 'dana@example.com']);
    expect(byDana.data.map((entry: any) => `${entry.action}:${entry.outcome}`)).toEqual(['key.created:success', 'key.created:failure']);
    const userEntries = await json(['audit', '--action', 'user.*']);
    expect(userEntries.data.map((entry: any) => entry.action)).toEqual(['user.created', 'user.removed', 'user.updated', 'user.created']);
    expect(userEntries.data.every((entry: any) => entry.actor.id === 'root')).toBe(true);
    expect(userEntries.data[2].changes).toEqual({ role: { from: 'viewer', to: 'admin' } });

    const text = await cli(['audit', '--limit', '3']);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/TIME\s+ACTOR\s+ACTION\s+TARGET\s+FROM\s+OUTCOME\s+CHANGES/);
    expect(text.stdout).toMatch(/admin token\s+admin_token\.revoked\s+atk_\w+\s+\S+\s+success\s+status: active -> revoked/);
    expect(text.stdout).toContain('Older entries: switchboard audit --before aud_');
    const bad = await cli(['audit', '--limit', '0']);
    expect([bad.code, bad.stderr]).toEqual([1, expect.stringContaining('--limit')]);

    // The real binary, the whole log: no secret made in this file appears.
    const all = await binary(['audit', '--limit', '1000', '--json'], gateway.adminToken);
    expect(all.code, all.stderr).toBe(0);
    expect(JSON.parse(all.stdout).data.length).toBeGreaterThanOrEqual(12);
    expect(secrets.length).toBe(5);
    for (const secret of secrets) expect(all.stdout).not.toContain(secret);
  });
});

describe.skipIf(!process.env.DATABASE_URL)('switchboard migrate: users, admin tokens and the audit log (needs DATABASE_URL)', () => {
  const schema = `sb_test_${randomBytes(5).toString('hex')}`;
  afterAll(async () => {
    await dropSchema(process.env.DATABASE_URL!, schema).catch(() => undefined);
  });

  it('moves them to PostgreSQL, where the tokens keep working, with the same result when run twice', async () => {
    const user = await json(['users', 'add', '--email', 'moving@example.com', '--role', 'member']);
    const token = await json(['admin-tokens', 'create', '--user', user.id, '--name', 'moving']);
    const runs: CliRun[] = [];
    for (let i = 0; i < 2; i++) runs.push(await binary(['migrate', '--from', dataDir, '--to', process.env.DATABASE_URL!, '--schema', schema, '--json'], gateway.adminToken));
    for (const run of runs) expect(run.code, run.stderr).toBe(0);
    const [first, second] = runs.map((run) => JSON.parse(run.stdout));
    expect(second).toEqual(first);
    expect(first).toMatchObject({ users: 3, adminTokens: 3 });
    const source = await openSqliteStore(join(dataDir, 'switchboard.db'));
    const target = await openPostgresStore(process.env.DATABASE_URL!, { schema });
    try {
      expect(await target.listUsers()).toEqual(await source.listUsers());
      expect(await target.listAdminTokens()).toEqual(await source.listAdminTokens());
      expect(await target.queryAudit({ limit: 1000 })).toEqual(await source.queryAudit({ limit: 1000 }));
      expect(first.auditEntries).toBe((await source.queryAudit({ limit: 1000 })).length);
      expect(await principalOfAdminToken(target, token.token)).toMatchObject({ kind: 'token', id: token.id, role: 'member', userEmail: 'moving@example.com' });
    } finally {
      await source.close();
      await target.close();
    }
  });
});
