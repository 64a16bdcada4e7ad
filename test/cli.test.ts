import { createServer, type AddressInfo } from 'node:net';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from './doubles/openai-provider-double.js';
import { adminRequest, chat, createKey, eventually, hello } from './support/api-client.js';
import { runCliBinary, runCliInProcess, type CliRun } from './support/cli-runner.js';
import { startEmbeddedDeployment, type TestDeployment } from './support/gateway-harness.js';

// The `switchboard` CLI, run for real (node bin/switchboard.mjs, as npm links it) against an
// embedded gateway in this process. It must never block this process's event loop, so it runs
// through the asynchronous execFile.

let double: OpenAiProviderDouble;
let deployment: TestDeployment;

function cli(args: string[], environment: Record<string, string> = {}): Promise<CliRun> {
  return runCliBinary(args, { SWITCHBOARD_URL: deployment.url(), SWITCHBOARD_ADMIN_TOKEN: deployment.adminToken, ...environment }, 20_000);
}

/** The CLI's main() in this process (same code as the binary, without the start-up cost). */
function inProcess(args: string[], environment: Record<string, string> = {}): Promise<CliRun> {
  return runCliInProcess(args, { SWITCHBOARD_URL: deployment.url(), SWITCHBOARD_ADMIN_TOKEN: deployment.adminToken, ...environment });
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function expectOk(run: CliRun): void {
  expect(run.stderr.includes('error:'), run.stderr).toBe(false);
  expect(run.code, run.stderr).toBe(0);
}

/** One line on stderr starting "error:", exit code 1, nothing on stdout. */
function expectError(run: CliRun, pattern: RegExp): void {
  expect(run.code).toBe(1);
  expect(run.stdout).toBe('');
  expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(run.stderr).toMatch(/^error: /);
  expect(run.stderr).toMatch(pattern);
}

beforeAll(async () => {
  double = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
  deployment = await startEmbeddedDeployment({ openAiUrl: double.url });
}, 60_000);

afterAll(async () => {
  await deployment?.close();
  await double?.close();
});

describe('switchboard CLI', () => {
  it('creates a key, printing it once with a warning, and the key works; list and show never print it', async () => {
    const run = await cli(['keys', 'create', '--name', 'cli app', '--budget', '12.5', '--period', 'monthly', '--rpm', '600', '--tpm', '90000']);
    expectOk(run);
    const key = /\b(sk-service-\S+)/.exec(run.stdout)?.[1];
    expect(key).toBeDefined();
    expect(run.stderr).toMatch(/^warning: this is the only time the full key is shown/);
    const id = /Created key (key_\w+)/.exec(run.stdout)![1]!;
    expect(run.stdout).toMatch(/budget:\s+\$12\.50 monthly/);
    expect(run.stdout).toMatch(/rate limit:\s+600 requests\/min/);
    double.script('alpha', { kind: 'text', text: 'hi', usage: { prompt_tokens: 10, completion_tokens: 2 } });
    expect((await chat(deployment, key!, { model: 'svc/alpha', messages: hello })).status).toBe(200);

    const list = await cli(['keys', 'list']);
    expectOk(list);
    const line = list.stdout.split('\n').find((row) => row.startsWith(id))!;
    expect(line).toMatch(/cli app\s+active\s+sk-service-\S*\s+\$12\.50 monthly\s+\$0\.000014\s+600\s+90,000\s+-/);
    const show = await cli(['keys', 'show', id]);
    expectOk(show);
    expect(show.stdout).toMatch(/spent:\s+\$0\.000014 in total/); // 10 × $1/M + 2 × $2/M
    for (const output of [list.stdout, show.stdout]) expect(output).not.toContain(key!);
    expect((await adminRequest(deployment, 'GET', `/admin/v1/keys/${id}`)).body).toMatchObject({ id, name: 'cli app', budget_usd: 12.5, budget_period: 'monthly', rpm: 600, tpm: 90000, spent_usd: 0.000014 });
  }, 30_000);

  it('updates budget and limits with immediate effect, and revokes', async () => {
    const key = await createKey(deployment, { name: 'to update', budget_usd: 5 });
    const update = await cli(['keys', 'update', key.id, '--budget', '0', '--rpm', '2', '--name', 'renamed']);
    expectOk(update);
    expect(update.stdout).toMatch(/budget:\s+\$0\.00 in total/);
    double.script('alpha', { kind: 'text', text: 'hi' });
    const refused = await chat(deployment, key.key, { model: 'svc/alpha', messages: hello });
    expect(refused.status).toBe(402);
    const cleared = await cli(['keys', 'update', key.id, '--budget', 'none', '--rpm', 'none', '--max-concurrent', '3']);
    expectOk(cleared);
    expect(cleared.stdout).toMatch(/budget:\s+none/);
    expect((await adminRequest(deployment, 'GET', `/admin/v1/keys/${key.id}`)).body).toMatchObject({ name: 'renamed', budget_usd: null, rpm: null, max_concurrent: 3 });
    expect((await chat(deployment, key.key, { model: 'svc/alpha', messages: hello })).status).toBe(200);

    const revoke = await cli(['keys', 'revoke', key.id]);
    expectOk(revoke);
    expect(revoke.stdout).toMatch(/Revoked key key_\w+ \("renamed"\)/);
    expect((await chat(deployment, key.key, { model: 'svc/alpha', messages: hello })).status).toBe(401);
    expect((await adminRequest(deployment, 'GET', `/admin/v1/keys/${key.id}`)).body.status).toBe('revoked');
  }, 30_000);

  it('prints usage as a table, and as the API answers it with --json', async () => {
    const first = await createKey(deployment, { name: 'usage a' });
    const second = await createKey(deployment, { name: 'usage b' });
    double.script('alpha', { kind: 'text', text: 'a', usage: { prompt_tokens: 1_000_000, completion_tokens: 500_000 } });
    double.script('beta', { kind: 'text', text: 'b', usage: { prompt_tokens: 1000, completion_tokens: 1 } });
    for (const [key, model] of [[first, 'alpha'], [second, 'alpha'], [second, 'beta']] as const) {
      expect((await chat(deployment, key.key, { model: `svc/${model}`, messages: hello })).status).toBe(200);
    }
    const byModel = await cli(['usage', '--key', second.id, '--group-by', 'model']);
    expectOk(byModel);
    const lines = byModel.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(`Usage from the start until now (key ${second.id}):`);
    expect(lines[2]).toMatch(/^MODEL\s+REQUESTS\s+PROMPT TOKENS\s+COMPLETION TOKENS\s+COST \(USD\)$/);
    // alpha: $1 + 0.5 × $2 = $2; beta: 1000 × $3/M + 1 × $4/M = $0.003004.
    expect(lines[3]).toMatch(/^svc\/alpha\s+1\s+1,000,000\s+500,000\s+\$2\.00$/);
    expect(lines[4]).toMatch(/^svc\/beta\s+1\s+1,000\s+1\s+\$0\.003004$/);
    expect(lines[5]).toMatch(/^TOTAL\s+2\s+1,001,000\s+500,001\s+\$2\.003004$/);

    const byKey = await cli(['usage', '--group-by', 'key', '--model', 'svc/alpha']);
    expectOk(byKey);
    expect(byKey.stdout).toMatch(new RegExp(`${first.id}\\s+usage a\\s+1\\s+1,000,000\\s+500,000\\s+\\$2\\.00`));

    const query = `key_id=${second.id}&group_by=day`;
    const json = await cli(['usage', '--key', second.id, '--group-by', 'day', '--json']);
    expectOk(json);
    expect(JSON.parse(json.stdout)).toEqual((await adminRequest(deployment, 'GET', `/admin/v1/usage?${query}`)).body);
    expect(JSON.parse(json.stdout).data).toHaveLength(1);

    const empty = await inProcess(['usage', '--key', second.id, '--until', '2001-01-01']);
    expectOk(empty);
    expect(empty.stdout).toMatch(/^REQUESTS.*\n\s+0\s+0\s+0\s+\$0\.00$/m);
  }, 30_000);

  it('lists recent requests as a table, newest first, and as the API answers them with --json', async () => {
    const key = await createKey(deployment, { name: 'requests' });
    double.script('alpha', { kind: 'text', text: 'one', usage: { prompt_tokens: 1000, completion_tokens: 10 } });
    expect((await chat(deployment, key.key, { model: 'svc/alpha', messages: hello })).status).toBe(200);
    double.script('beta', { kind: 'text', text: 'two', usage: { prompt_tokens: 5, completion_tokens: 1 } });
    expect((await chat(deployment, key.key, { model: 'svc/beta', messages: hello })).status).toBe(200);

    const listed = await eventually(async () => {
      const run = await cli(['requests', '--key', key.id]);
      expectOk(run);
      expect(run.stdout.trimEnd().split('\n')).toHaveLength(3);
      return run;
    });
    const lines = listed.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^TIME\s+KEY\s+REQUESTED\s+SERVED\s+STATUS\s+TOKENS \(IN \+ OUT\)\s+COST \(USD\)\s+LATENCY\s+FAILED ATTEMPTS$/);
    // beta: 5 × $3/M + 1 × $4/M; alpha: 1000 × $1/M + 10 × $2/M.
    expect(lines[1]).toMatch(new RegExp(`^\\d{4}-\\d\\d-\\d\\d \\S+Z\\s+${key.id}\\s+svc/beta\\s+svc/beta\\s+200\\s+5 \\+ 1\\s+\\$0\\.000019\\s+\\d+ ms\\s+-$`));
    expect(lines[2]).toMatch(new RegExp(`${key.id}\\s+svc/alpha\\s+svc/alpha\\s+200\\s+1,000 \\+ 10\\s+\\$0\\.00102\\s`));

    const newest = await inProcess(['requests', '--key', key.id, '--limit', '1', '--json']);
    expectOk(newest);
    expect(JSON.parse(newest.stdout)).toEqual((await adminRequest(deployment, 'GET', `/admin/v1/requests?limit=1&key_id=${key.id}`)).body);
    expect(JSON.parse(newest.stdout).data[0]).toMatchObject({ key_id: key.id, served_model: 'svc/beta', prompt_tokens: 5 });
    expectOk(await inProcess(['requests', '--model', 'svc/nothing-here']));
    expect((await inProcess(['requests', '--model', 'svc/nothing-here'])).stdout).toBe('No requests recorded with these filters.\n');
    expectError(await inProcess(['requests', '--limit', '0']), /invalid value for --limit: '0'; it must be a whole number from 1 to 1000/);
    expectError(await inProcess(['requests', '--until', '+010000-01-01']), /Invalid value for 'until'.*\[invalid_value, HTTP 400\]/);
  }, 30_000);

  it('says a negative or missing value is invalid, not ambiguous', async () => {
    expectError(await inProcess(['keys', 'create', '--name', 'x', '--budget', '-5']), /^error: invalid value for --budget: '-5'; it must be a number of US dollars, 0 or more, or 'none' to clear it$/m);
    expectError(await inProcess(['keys', 'update', 'key_x', '--rpm', '-1']), /invalid value for --rpm: '-1'; it must be a whole number, 1 or more/);
    expectError(await inProcess(['keys', 'update', 'key_x', '--max-concurrent=-2']), /invalid value for --max-concurrent: '-2'/);
    expectError(await inProcess(['keys', 'create', '--name']), /--name needs a value\. See 'switchboard --help'/);
    expectError(await inProcess(['keys', 'create', '--name', '--json']), /--name needs a value; to give one that starts with '-', write --name=VALUE/);
    const names = (await adminRequest(deployment, 'GET', '/admin/v1/keys')).body.data.map((key: { name: string }) => key.name);
    expect(names).not.toContain('x');
  });

  it('finds the admin token as the gateway does, and says which setting to fix when it is refused', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'sb-cli-'));
    try {
      // Pasted with spaces and a newline: the gateway would trim it the same way.
      expectOk(await inProcess(['keys', 'list'], { SWITCHBOARD_ADMIN_TOKEN: `  ${deployment.adminToken}\n` }));
      writeFileSync(join(dataDir, 'admin-token'), 'sb-admin-not-this-gateways-token-123\n');
      expectError(
        await inProcess(['keys', 'list'], { SWITCHBOARD_ADMIN_TOKEN: '', SWITCHBOARD_DATA_DIR: dataDir }),
        new RegExp(`Incorrect admin token\\. The token from ${join(dataDir, 'admin-token').replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} is not this gateway's .*set SWITCHBOARD_ADMIN_TOKEN to the gateway's admin token\\. \\[invalid_admin_token, HTTP 401\\]`),
      );
      writeFileSync(join(dataDir, 'admin-token'), '\n');
      expectError(await inProcess(['keys', 'list'], { SWITCHBOARD_ADMIN_TOKEN: '', SWITCHBOARD_DATA_DIR: dataDir }), /admin-token is empty; set SWITCHBOARD_ADMIN_TOKEN/);
      // A token file that cannot be read is not reported as missing.
      const unreadable = join(dataDir, 'unreadable');
      mkdirSync(join(unreadable, 'admin-token'), { recursive: true });
      expectError(await inProcess(['keys', 'list'], { SWITCHBOARD_ADMIN_TOKEN: '', SWITCHBOARD_DATA_DIR: unreadable }), /Cannot read the admin token file .*EISDIR.*check the file's permissions or set SWITCHBOARD_ADMIN_TOKEN/);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('reads the admin token from the data folder when the environment has none', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'sb-cli-'));
    try {
      writeFileSync(join(dataDir, 'admin-token'), `${deployment.adminToken}\n`);
      expectOk(await cli(['keys', 'list'], { SWITCHBOARD_ADMIN_TOKEN: '', SWITCHBOARD_DATA_DIR: dataDir }));
      expectError(await inProcess(['keys', 'list'], { SWITCHBOARD_ADMIN_TOKEN: '', SWITCHBOARD_DATA_DIR: join(dataDir, 'missing') }), /no admin token: set SWITCHBOARD_ADMIN_TOKEN/);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 30_000);

  it('fails clearly, on one line with exit code 1', async () => {
    const closed = await closedPort();
    const [missing, badToken, unreachable] = await Promise.all([
      cli(['keys', 'show', 'key_missing']),
      cli(['keys', 'list'], { SWITCHBOARD_ADMIN_TOKEN: 'wrong' }),
      cli(['keys', 'list'], { SWITCHBOARD_URL: `http://127.0.0.1:${closed}` }),
    ]);
    expectError(missing, /^error: No key with id 'key_missing'\. \[not_found, HTTP 404\]$/m);
    expectError(badToken, /Incorrect admin token\. The token from SWITCHBOARD_ADMIN_TOKEN is not this gateway's .*\[invalid_admin_token, HTTP 401\]/);
    expectError(unreachable, new RegExp(`cannot reach Switchboard at http://127\\.0\\.0\\.1:${closed} \\(ECONNREFUSED\\)`));
    // The same code in this process, for the cases that need no second process to show.
    expectError(await inProcess(['usage', '--since', 'last tuesday']), /Invalid value for 'since'.*\[invalid_value, HTTP 400\]/);
    expectError(await inProcess(['keys', 'update', 'key_missing', '--rpm', 'fast']), /invalid value for --rpm: 'fast'; it must be a whole number, 1 or more, or 'none'/);
    expectError(await inProcess(['keys', 'update', 'key_missing']), /nothing to update/);
    expectError(await inProcess(['keys', 'create']), /keys create needs --name/);
    expectError(await inProcess(['keys', 'list', '--bogus']), /unknown option '--bogus'/);
    expectError(await inProcess(['keys', 'show']), /keys show needs a key id/);
    expectError(await inProcess(['usage', '--group-by', 'hour']), /--group-by must be key, model or day/);
    expectError(await inProcess(['frobnicate']), /unknown command 'frobnicate'/);
    const help = await inProcess(['--help']);
    expectOk(help);
    expect(help.stdout).toMatch(/^Usage: switchboard <command>/);
  }, 30_000);
});
