import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedGateway, type EmbeddedGateway } from '../src/embedded-gateway.js';
import { openPostgresStore } from '../src/shared/store/postgres-store.js';
import { openSqliteStore } from '../src/shared/store/sqlite-store.js';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from './doubles/openai-provider-double.js';
import { adminRequest, chat, eventually, hello } from './support/api-client.js';
import { runCliBinary, runCliInProcess, type CliRun } from './support/cli-runner.js';
import { testEnvironment, type TestDeployment } from './support/gateway-harness.js';
import { dropSchema } from './support/scaled-harness.js';

// Governance from the `switchboard` CLI (projects, key allow-lists, expiry, alerts, refused
// counts), and `switchboard migrate` from a populated embedded store to PostgreSQL, twice.

const DATABASE_URL = process.env.DATABASE_URL;

let double: OpenAiProviderDouble;
let gateway: EmbeddedGateway;
let deployment: TestDeployment;
let dataDir: string;

function binary(args: string[], environment: Record<string, string> = {}): Promise<CliRun> {
  return runCliBinary(args, { SWITCHBOARD_URL: gateway.url, SWITCHBOARD_ADMIN_TOKEN: gateway.adminToken, ...environment });
}

function cli(args: string[]): Promise<CliRun> {
  return runCliInProcess(args, { SWITCHBOARD_URL: gateway.url, SWITCHBOARD_ADMIN_TOKEN: gateway.adminToken });
}

async function json(args: string[]): Promise<any> {
  const run = await cli([...args, '--json']);
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout);
}

beforeAll(async () => {
  double = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
  dataDir = mkdtempSync(join(tmpdir(), 'switchboard-governance-cli-'));
  gateway = await startEmbeddedGateway({ environment: testEnvironment({ openAiUrl: double.url }, dataDir) });
  deployment = { kind: 'embedded', urls: [gateway.url], adminToken: gateway.adminToken, url: () => gateway.url, close: async () => undefined };
}, 60_000);

afterAll(async () => {
  await gateway?.close();
  await double?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('switchboard CLI: governance', () => {
  it('manages projects and the governance fields of keys', async () => {
    const project = await json(['projects', 'create', '--name', 'team cli', '--budget', '5', '--period', 'monthly', '--rpm', '100', '--alert', '50=http://127.0.0.1:9/hook']);
    expect(project).toMatchObject({ name: 'team cli', budget_usd: 5, budget_period: 'monthly', rpm: 100, alerts: [{ threshold_percent: 50, webhook_url: 'http://127.0.0.1:9/hook' }] });
    const key = await json(['keys', 'create', '--name', 'cli governed', '--models', 'svc/alpha, svc/embed-*', '--expires', '2030-01-01T00:00:00Z', '--project', project.id, '--alert', '80=http://127.0.0.1:9/a', '--alert', '100=http://127.0.0.1:9/b']);
    expect(key).toMatchObject({ allowed_models: ['svc/alpha', 'svc/embed-*'], expires_at: '2030-01-01T00:00:00.000Z', project_id: project.id, alerts: [{ threshold_percent: 80 }, { threshold_percent: 100 }] });
    const shown = await cli(['keys', 'show', key.id]);
    expect(shown.stdout).toMatch(/models:\s+svc\/alpha, svc\/embed-\*/);
    expect(shown.stdout).toContain(`project:`);
    expect(shown.stdout).toContain('80% -> http://127.0.0.1:9/a');
    const cleared = await json(['keys', 'update', key.id, '--models', 'none', '--expires', 'none', '--project', 'none', '--alert', 'none']);
    expect(cleared).toMatchObject({ allowed_models: null, expires_at: null, project_id: null, alerts: [] });
    const list = await cli(['projects', 'list']);
    expect(list.stdout).toContain('team cli');
    const updated = await json(['projects', 'update', project.id, '--budget', 'none']);
    expect(updated.budget_usd).toBeNull();
    const bad = await cli(['keys', 'update', key.id, '--alert', 'eighty=http://x']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('--alert');
    const deleted = await cli(['projects', 'delete', project.id]);
    expect(deleted.stdout).toContain(`Deleted project ${project.id}`);
  });

  it('shows alert deliveries and refused requests', async () => {
    const limited = await json(['keys', 'create', '--name', 'cli refused', '--rpm', '1']);
    double.script('alpha', { kind: 'text', text: 'ok' });
    expect((await chat(deployment, limited.key, { model: 'svc/alpha', messages: hello })).status).toBe(200);
    expect((await chat(deployment, limited.key, { model: 'svc/alpha', messages: hello })).status).toBe(429);
    await eventually(async () => {
      const refused = await json(['usage', 'refused', '--key', limited.id]);
      expect(refused.data).toEqual([{ key_id: limited.id, model: 'svc/alpha', status: 429, count: 1 }]);
    }, 5000);
    const table = await cli(['usage', 'refused', '--key', limited.id]);
    expect(table.stdout).toMatch(/svc\/alpha\s+429\s+1/);
    const alerts = await cli(['alerts']);
    expect(alerts.code).toBe(0);
  });
});

describe.skipIf(!DATABASE_URL)('switchboard migrate (needs DATABASE_URL)', () => {
  const schema = `sb_test_${randomBytes(5).toString('hex')}`;
  afterAll(async () => {
    if (DATABASE_URL) await dropSchema(DATABASE_URL, schema).catch(() => undefined);
  });

  it('moves keys, projects and the ledger to PostgreSQL, with the same result when run twice', async () => {
    // Populate the embedded store through the gateway: a project, keys (one revoked), requests.
    const project = await json(['projects', 'create', '--name', 'moving team', '--budget', '10']);
    const member = await json(['keys', 'create', '--name', 'moving member', '--project', project.id, '--models', 'svc/alpha']);
    const revoked = await json(['keys', 'create', '--name', 'moving revoked']);
    double.script('alpha', { kind: 'text', text: 'before the move', usage: { prompt_tokens: 7, completion_tokens: 3 } });
    for (let i = 0; i < 3; i++) expect((await chat(deployment, member.key, { model: 'svc/alpha', messages: hello })).status).toBe(200);
    expect((await chat(deployment, revoked.key, { model: 'svc/alpha', messages: hello })).status).toBe(200);
    await adminRequest(deployment, 'DELETE', `/admin/v1/keys/${revoked.id}`);
    await eventually(async () => expect((await adminRequest(deployment, 'GET', '/admin/v1/requests?limit=1000')).body.data.length).toBeGreaterThanOrEqual(4), 5000);

    const runs: CliRun[] = [];
    for (let i = 0; i < 2; i++) runs.push(await binary(['migrate', '--from', dataDir, '--to', DATABASE_URL!, '--schema', schema, '--json']));
    for (const run of runs) expect(run.code, run.stderr).toBe(0);
    const [first, second] = runs.map((run) => JSON.parse(run.stdout));
    expect(second).toEqual({ ...first, ledgerWritten: 0 });
    expect(first.ledgerWritten).toBe(first.ledgerRecords);
    expect(first.ledgerRecords).toBeGreaterThanOrEqual(4);

    const source = await openSqliteStore(join(dataDir, 'switchboard.db'));
    const target = await openPostgresStore(DATABASE_URL!, { schema });
    try {
      expect(await target.listKeys()).toEqual(await source.listKeys());
      expect(await target.listProjects()).toEqual(await source.listProjects());
      expect(await target.listLedger({ limit: 1000 })).toEqual(await source.listLedger({ limit: 1000 }));
      expect(await target.queryUsage({ groupBy: 'key' })).toEqual(await source.queryUsage({ groupBy: 'key' }));
    } finally {
      await source.close();
      await target.close();
    }

    // A gateway on PostgreSQL keeps the keys: the member works (allow-list and project intact), the revoked one does not.
    const movedDir = mkdtempSync(join(tmpdir(), 'switchboard-moved-'));
    const moved = await startEmbeddedGateway({ environment: testEnvironment({ openAiUrl: double.url, environment: { DATABASE_URL: DATABASE_URL!, SWITCHBOARD_DATABASE_SCHEMA: schema } }, movedDir) });
    try {
      const at = { ...deployment, urls: [moved.url], url: () => moved.url };
      double.script('alpha', { kind: 'text', text: 'after the move' });
      expect((await chat(at, member.key, { model: 'svc/alpha', messages: hello })).status).toBe(200);
      expect((await chat(at, member.key, { model: 'svc/beta', messages: hello })).status).toBe(403);
      expect((await chat(at, revoked.key, { model: 'svc/alpha', messages: hello })).status).toBe(401);
      const key = await adminRequest(at, 'GET', `/admin/v1/keys/${member.id}`);
      expect(key.body).toMatchObject({ project_id: project.id, allowed_models: ['svc/alpha'] });
    } finally {
      await moved.close();
      rmSync(movedDir, { recursive: true, force: true });
    }
  }, 60_000);
});
