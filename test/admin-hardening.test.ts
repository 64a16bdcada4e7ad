import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedGateway } from '../src/embedded-gateway.js';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from './doubles/openai-provider-double.js';
import { adminRequest, chat, createKey, eventually, hello } from './support/api-client.js';
import { startDeployment, testAdminToken, testEnvironment, type DeploymentKind, type TestDeployment } from './support/gateway-harness.js';
import { scaledOutAvailable, scaledOutSkipNotice, startScaledDeployment } from './support/scaled-harness.js';

// The admin plane under hostile or careless use: guessing the admin token, weak admin tokens,
// signed-out dashboard cookies replayed after a restart or on another ingress, usage filters the
// stores cannot compare, the database file's permissions, and one naming convention in answers.

const repoRoot = fileURLToPath(new URL('../', import.meta.url));
const kinds: DeploymentKind[] = scaledOutAvailable ? ['embedded', 'scaled'] : ['embedded'];
if (!scaledOutAvailable) console.warn(`admin hardening (scaled out): ${scaledOutSkipNotice}`);

/** Requests that leave from another loopback address, as a second client machine would. */
function clientAt(address: string): Agent {
  return new Agent({ localAddress: address });
}

async function adminGet(base: string, path: string, token: string, dispatcher?: Agent) {
  const response = await request(`${base}${path}`, { headers: { authorization: `Bearer ${token}` }, dispatcher });
  const text = await response.body.text();
  return { status: response.statusCode, retryAfter: response.headers['retry-after'], body: JSON.parse(text) as { error?: { code: string; param: string | null; message: string }; data?: unknown[] } };
}

interface DashboardSession {
  cookie: string;
  csrf: string;
}

async function signIn(base: string, token = testAdminToken, dispatcher?: Agent): Promise<{ status: number; session?: DashboardSession }> {
  const response = await request(`${base}/dashboard/api/session`, {
    method: 'POST',
    headers: { origin: new URL(base).origin, 'content-type': 'application/json' },
    body: JSON.stringify({ token }),
    dispatcher,
  });
  const body = (await response.body.json()) as { csrf_token?: string };
  const setCookie = response.headers['set-cookie'];
  if (response.statusCode !== 200 || typeof setCookie !== 'string') return { status: response.statusCode };
  return { status: 200, session: { cookie: setCookie.split(';')[0]!, csrf: body.csrf_token! } };
}

function dashboardCall(base: string, method: string, path: string, session: DashboardSession): Promise<Response> {
  return fetch(`${base}/dashboard/api${path}`, { method, headers: { cookie: session.cookie, 'x-csrf-token': session.csrf, origin: new URL(base).origin } });
}

/** Every property name in a JSON value, nested ones included. */
function fieldNames(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(fieldNames);
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([name, inner]) => [name, ...fieldNames(inner)]);
}

describe.each(kinds)('admin plane (%s deployment)', (kind) => {
  let double: OpenAiProviderDouble;
  let deployment: TestDeployment;

  beforeAll(async () => {
    double = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
    deployment = kind === 'scaled'
      ? await startScaledDeployment({ openAiUrl: double.url, ingressCount: 2, workerCount: 1 })
      : await startDeployment(kind, { openAiUrl: double.url });
  }, 90_000);
  afterAll(async () => {
    await deployment?.close();
    await double?.close();
  }, 30_000);

  it('answers /admin/v1/requests in snake_case like every admin answer, and the dashboard the same', async () => {
    const key = await createKey(deployment, { name: 'naming' });
    double.script('alpha', { kind: 'text', text: 'hi', usage: { prompt_tokens: 10, completion_tokens: 2 } });
    expect((await chat(deployment, key.key, { model: 'svc/alpha', messages: hello })).status).toBe(200);
    const { body } = await eventually(async () => {
      const answer = await adminRequest(deployment, 'GET', `/admin/v1/requests?key_id=${key.id}`);
      expect(answer.body.data).toHaveLength(1);
      return answer;
    });
    const [record] = body.data;
    expect(record).toMatchObject({
      object: 'request', key_id: key.id, requested_model: 'svc/alpha', served_model: 'svc/alpha', status: 200,
      prompt_tokens: 10, completion_tokens: 2, cost_usd: 0.000014, estimated: false, stream: false,
    });
    expect(record.attempts[0]).toMatchObject({ model: 'svc/alpha', outcome: 'success' });
    expect(typeof record.latency_ms).toBe('number');
    expect(Date.parse(record.created_at)).not.toBeNaN();
    for (const path of ['/keys', '/usage?group_by=model', `/requests?key_id=${key.id}`]) {
      const names = fieldNames((await adminRequest(deployment, 'GET', `/admin/v1${path}`)).body);
      expect(names.filter((name) => !/^[a-z0-9]+(?:_[a-z0-9]+)*$/.test(name)), path).toEqual([]);
    }
    const { session } = await signIn(deployment.urls[0]!);
    const twin = await dashboardCall(deployment.urls[0]!, 'GET', `/requests?key_id=${key.id}`, session!);
    expect(await twin.json()).toEqual(body);
  });

  it('answers 400 to usage and request filters the stores cannot compare, on both stores', async () => {
    const refusals: Array<[string, string]> = [
      ['until=%2B010000-01-01', 'until'],
      ['since=%2B010000-01-01T00:00:00Z', 'since'],
      ['until=9999-12-31T23:00:00-05:00', 'until'],
      ['since=0000-01-01', 'since'],
      ['since=Nov%201%202026', 'since'],
      ['key_id=%00', 'key_id'],
      ['model=svc%2Falpha%00', 'model'],
      [`key_id=${'k'.repeat(201)}`, 'key_id'],
    ];
    for (const [query, param] of refusals) {
      for (const path of ['/usage', '/requests']) {
        const answer = await adminRequest(deployment, 'GET', `/admin/v1${path}?${query}`);
        expect({ path, query, status: answer.status, code: answer.body.error?.code, param: answer.body.error?.param }).toEqual({ path, query, status: 400, code: 'invalid_value', param });
      }
    }
    expect((await adminRequest(deployment, 'GET', '/admin/v1/usage?group_by=day&limit=5')).body.error).toMatchObject({ code: 'unknown_parameter', param: 'limit' });
    expect((await adminRequest(deployment, 'GET', '/admin/v1/keys/%00')).status).toBe(404);
    // The edges of the accepted range still answer.
    const edges = await adminRequest(deployment, 'GET', '/admin/v1/usage?since=0001-01-01&until=9999-12-31T23:59:59Z');
    expect(edges.status).toBe(200);
    expect(edges.body.data).toHaveLength(1);
    expect((await adminRequest(deployment, 'GET', '/admin/v1/requests?since=0001-01-01&until=9999-12-31&limit=1')).status).toBe(200);
  });

  it('backs off wrong admin tokens per client address, without slowing the right token from other addresses', async () => {
    const base = deployment.urls[0]!;
    const guesser = clientAt('127.0.0.5');
    try {
      const started = Date.now();
      const guesses = await Promise.all(Array.from({ length: 300 }, (_, i) => adminGet(base, '/admin/v1/keys', `sb-admin-guess-${i}-padding-padding`, guesser)));
      // Two free failures, the third starts the wait: everything after it is refused unjudged.
      const judged = guesses.filter((answer) => answer.status === 401);
      const throttled = guesses.filter((answer) => answer.status === 429);
      expect(judged.length).toBeLessThanOrEqual(3);
      expect(judged.length + throttled.length).toBe(300);
      expect(throttled[0]!.body.error).toMatchObject({ code: 'too_many_attempts' });
      expect(Number(throttled[0]!.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(Date.now() - started).toBeLessThan(10_000);

      // While it waits, even the right token from that address is refused (or the answer would tell a guess apart).
      expect((await adminGet(base, '/admin/v1/keys', testAdminToken, guesser)).status).toBe(429);
      // The dashboard's sign-in guards the same token: the same address waits there too.
      expect((await signIn(base, testAdminToken, guesser)).status).toBe(429);
      // Another address is not slowed.
      const otherStarted = Date.now();
      const other = await adminGet(base, '/admin/v1/keys', testAdminToken);
      expect(other.status).toBe(200);
      expect(Date.now() - otherStarted).toBeLessThan(1000);
      expect((await adminGet(base, '/admin/v1/keys', 'a-wrong-token-from-another-address')).status).toBe(401);
      expect((await adminGet(base, '/admin/v1/keys', testAdminToken)).status).toBe(200);
    } finally {
      await guesser.close();
    }
  });

  it('keeps a signed-out dashboard session dead on every ingress sharing the store', async () => {
    const [first, second = first] = deployment.urls as [string, string?];
    const { session } = await signIn(first);
    expect((await dashboardCall(second!, 'GET', '/keys', session!)).status).toBe(200);
    expect((await dashboardCall(first, 'DELETE', '/session', session!)).status).toBe(200);
    for (const base of [first, second!]) {
      expect((await dashboardCall(base, 'GET', '/keys', session!)).status).toBe(401);
      expect(await (await dashboardCall(base, 'GET', '/session', session!)).json()).toEqual({ signed_in: false });
    }
  });
});

describe('embedded gateway: restarts, files and the admin token rule', () => {
  let double: OpenAiProviderDouble;
  const folders: string[] = [];
  const folder = () => {
    const path = mkdtempSync(join(tmpdir(), 'sb-admin-hardening-'));
    folders.push(path);
    return path;
  };

  beforeAll(async () => {
    double = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
  });
  afterAll(async () => {
    await double?.close();
    for (const path of folders) rmSync(path, { recursive: true, force: true });
  });

  it('keeps a signed-out dashboard session dead after a restart, while one still signed in survives it', async () => {
    const dataDir = folder();
    const environment = testEnvironment({ openAiUrl: double.url }, dataDir);
    let gateway = await startEmbeddedGateway({ environment });
    const { session: ended } = await signIn(gateway.url);
    const { session: kept } = await signIn(gateway.url);
    expect((await dashboardCall(gateway.url, 'DELETE', '/session', ended!)).status).toBe(200);
    await gateway.close();

    gateway = await startEmbeddedGateway({ environment });
    try {
      expect((await dashboardCall(gateway.url, 'GET', '/keys', ended!)).status).toBe(401);
      expect((await dashboardCall(gateway.url, 'GET', '/keys', kept!)).status).toBe(200);
    } finally {
      await gateway.close();
    }
  }, 60_000);

  it('keeps the database file and its -wal and -shm owner-only (0600), fixing an older world-readable file', async () => {
    const dataDir = folder();
    const environment = testEnvironment({ openAiUrl: double.url }, dataDir);
    const database = join(dataDir, 'switchboard.db');
    const modes = () => ['', '-wal', '-shm'].map((suffix) => statSync(`${database}${suffix}`).mode & 0o777);
    let gateway = await startEmbeddedGateway({ environment });
    const created = await fetch(`${gateway.url}/admin/v1/keys`, { method: 'POST', headers: { authorization: `Bearer ${testAdminToken}` }, body: JSON.stringify({ name: 'written' }) });
    expect(created.status).toBe(201);
    expect(modes()).toEqual([0o600, 0o600, 0o600]);
    await gateway.close();

    // A file made by an earlier version (or by hand) with the usual umask; a clean close removed -wal and -shm.
    chmodSync(database, 0o644);
    gateway = await startEmbeddedGateway({ environment });
    try {
      expect(modes()).toEqual([0o600, 0o600, 0o600]);
      expect(statSync(join(dataDir, 'admin-token'), { throwIfNoEntry: false })).toBeUndefined(); // the token came from the environment
    } finally {
      await gateway.close();
    }
  }, 60_000);

  it('refuses to start with a weak SWITCHBOARD_ADMIN_TOKEN, saying why without printing it', async () => {
    const dataDir = folder();
    const environment = { ...testEnvironment({ openAiUrl: double.url }, dataDir), SWITCHBOARD_ADMIN_TOKEN: 'hunter2' };
    const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: repoRoot, env: environment, timeout: 30_000 }, (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
      });
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/SWITCHBOARD_ADMIN_TOKEN is too weak: it has 7 characters; at least 24 are needed/);
    expect(run.stdout + run.stderr).not.toContain('hunter2');

    await expect(startEmbeddedGateway({ environment: { ...environment, SWITCHBOARD_ADMIN_TOKEN: 'a'.repeat(40) } })).rejects.toThrow(/only 1 different characters; at least 10/);
    await expect(startEmbeddedGateway({ environment: { ...environment, SWITCHBOARD_ADMIN_TOKEN: `${testAdminToken} with spaces` } })).rejects.toThrow(/whitespace/);
  }, 60_000);

  it('applies the same rule to a token in the data folder, and trims surrounding whitespace like the CLI', async () => {
    const dataDir = folder();
    const withoutToken: Record<string, string> = testEnvironment({ openAiUrl: double.url }, dataDir);
    delete withoutToken.SWITCHBOARD_ADMIN_TOKEN;
    writeFileSync(join(dataDir, 'admin-token'), 'too-short\n');
    await expect(startEmbeddedGateway({ environment: withoutToken })).rejects.toThrow(/The admin token in .*admin-token is too weak: it has 9 characters/);

    // A token pasted with a trailing newline or spaces is the token without them, as the CLI reads it.
    const gateway = await startEmbeddedGateway({ environment: { ...withoutToken, SWITCHBOARD_ADMIN_TOKEN: `  ${testAdminToken}\n` } });
    try {
      expect((await adminGet(gateway.url, '/admin/v1/keys', testAdminToken)).status).toBe(200);
    } finally {
      await gateway.close();
    }
  }, 60_000);
});
