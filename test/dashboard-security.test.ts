import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedGateway, type EmbeddedGateway } from '../src/embedded-gateway.js';
import { SessionSigner } from '../src/ingress/dashboard/session.js';
import { SignInThrottle } from '../src/ingress/dashboard/sign-in-throttle.js';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from './doubles/openai-provider-double.js';
import { adminRequest, createKey } from './support/api-client.js';
import { startDeployment, testAdminToken, testEnvironment, type TestDeployment } from './support/gateway-harness.js';
import { scaledOutAvailable, scaledOutSkipNotice, startScaledDeployment, type ScaledDeployment } from './support/scaled-harness.js';

// The dashboard's HTTP surface without a browser: headers, cookie flags, sessions, CSRF and
// origin checks, sign-in backoff, and the dashboard's own port.

interface Session {
  cookie: string;
  csrf: string;
  setCookie: string;
}

function origin(base: string): string {
  return new URL(base).origin;
}

async function signIn(base: string, token = testAdminToken, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${base}/dashboard/api/session`, {
    method: 'POST',
    headers: { origin: origin(base), 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ token }),
  });
}

async function session(base: string, headers: Record<string, string> = {}): Promise<Session> {
  const response = await signIn(base, testAdminToken, headers);
  expect(response.status).toBe(200);
  const setCookie = response.headers.get('set-cookie')!;
  const body = (await response.json()) as { csrf_token: string };
  return { cookie: setCookie.split(';')[0]!, csrf: body.csrf_token, setCookie };
}

function call(base: string, method: string, path: string, options: { session?: Session; csrf?: string | null; origin?: string | null; body?: unknown; contentType?: string } = {}) {
  const headers: Record<string, string> = {};
  if (options.session) headers.cookie = options.session.cookie;
  const csrf = options.csrf === undefined ? options.session?.csrf : options.csrf;
  if (csrf) headers['x-csrf-token'] = csrf;
  const sentOrigin = options.origin === undefined ? origin(base) : options.origin;
  if (sentOrigin) headers.origin = sentOrigin;
  if (options.body !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
  return fetch(`${base}/dashboard/api${path}`, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
}

async function errorCode(response: Response): Promise<string> {
  return ((await response.json()) as { error: { code: string } }).error.code;
}

describe('dashboard security over HTTP', () => {
  let double: OpenAiProviderDouble;
  let deployment: TestDeployment;
  let base: string;

  beforeAll(async () => {
    double = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
    deployment = await startDeployment('embedded', { openAiUrl: double.url });
    base = deployment.url();
  }, 60_000);
  afterAll(async () => {
    await deployment?.close();
    await double?.close();
  }, 30_000);

  it('serves the page with a strict Content-Security-Policy and no inline script or style', async () => {
    const redirect = await fetch(`${base}/dashboard`, { redirect: 'manual' });
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get('location')).toBe('/dashboard/');

    const page = await fetch(`${base}/dashboard/`);
    expect(page.status).toBe(200);
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe');
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    const html = await page.text();
    const scripts = html.match(/<script\b[^>]*>/g) ?? [];
    expect(scripts.length).toBeGreaterThan(0);
    for (const tag of scripts) expect(tag).toMatch(/\bsrc="[^"]+"/);
    expect(html).not.toMatch(/<style\b|\sstyle=|\son[a-z]+=/i);
  });

  it('serves its modules from node_modules, compressed and cacheable, with the bare import rewritten', async () => {
    const hooks = await fetch(`${base}/dashboard/vendor/hooks.js`, { headers: { 'accept-encoding': 'identity' } });
    expect(hooks.headers.get('content-type')).toMatch(/^text\/javascript/);
    const source = await hooks.text();
    expect(source).toContain('from"./preact.js"');
    expect(source).not.toMatch(/from\s*["']preact["']/);
    const etag = hooks.headers.get('etag')!;
    expect((await fetch(`${base}/dashboard/vendor/hooks.js`, { headers: { 'if-none-match': etag } })).status).toBe(304);

    const { request } = await import('undici');
    const zipped = await request(`${base}/dashboard/vendor/uplot.js`, { headers: { 'accept-encoding': 'gzip' } });
    expect(zipped.headers['content-encoding']).toBe('gzip');
    const compressed = Buffer.from(await zipped.body.arrayBuffer());
    expect(gunzipSync(compressed).toString()).toContain('export { uPlot as default }');
    expect(compressed.length).toBeLessThan(60_000);
    expect((await fetch(`${base}/dashboard/assets/app.js`)).status).toBe(200);
    expect((await fetch(`${base}/dashboard/assets/..%2f..%2fpackage.json`)).status).toBe(404);
    expect((await fetch(`${base}/dashboard/vendor/../../package.json`)).status).not.toBe(200);
  });

  it('refuses wrong tokens without detail and sets no cookie', async () => {
    for (const token of ['wrong', '', `${testAdminToken}x`]) {
      await session(base); // a success clears the backoff, which has its own test below
      const response = await signIn(base, token);
      expect(response.status).toBe(401);
      expect(response.headers.get('set-cookie')).toBeNull();
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect(body.error).toMatchObject({ code: 'sign_in_failed', message: 'Sign-in failed.' });
    }
  });

  it('issues an HttpOnly, SameSite=Strict session cookie that expires, Secure behind HTTPS, never holding the token', async () => {
    const plain = await session(base);
    expect(plain.setCookie).toMatch(/^sb_dashboard=[^;]+; Path=\/dashboard; HttpOnly; SameSite=Strict; Max-Age=28800$/);
    expect(plain.setCookie).not.toContain(testAdminToken);
    const secure = await session(base, { 'x-forwarded-proto': 'https', origin: `https://${new URL(base).host}` });
    expect(secure.setCookie).toMatch(/; Secure$/);

    const info = await call(base, 'GET', '/session', { session: plain });
    expect(info.status).toBe(200);
    expect(info.headers.get('cache-control')).toBe('no-store');
    const body = (await info.json()) as { csrf_token: string; expires_at: string };
    expect(body.csrf_token).toBe(plain.csrf);
    expect(Date.parse(body.expires_at) - Date.now()).toBeGreaterThan(7.9 * 3600_000);
  });

  it('needs a valid session for every API call', async () => {
    expect(await errorCode(await call(base, 'GET', '/keys'))).toBe('session_required');
    const probe = await call(base, 'GET', '/session');
    expect(probe.status).toBe(200);
    expect(await probe.json()).toEqual({ signed_in: false });
    expect((await call(base, 'GET', '/models')).status).toBe(401);
    const valid = await session(base);
    const [value] = valid.cookie.split('=').slice(1);
    const [id, who, issued, expiry, signature] = value!.split('.');
    const forgedCookies = [
      `sb_dashboard=${id}.${who}.${issued}.${Number(expiry) + 3600}.${signature}`,
      `sb_dashboard=${id}.${Buffer.from('usr_someone_else').toString('base64url')}.${issued}.${expiry}.${signature}`,
      `sb_dashboard=${id}.${who}.${issued}.${expiry}.${signature!.slice(0, -2)}AA`,
      `sb_dashboard=${new SessionSigner('some-other-admin-token').issue().cookieValue}`,
      'sb_dashboard=garbage',
    ];
    for (const cookie of forgedCookies) {
      const response = await call(base, 'GET', '/keys', { session: { ...valid, cookie } });
      expect(response.status).toBe(401);
      expect(await (await call(base, 'GET', '/session', { session: { ...valid, cookie } })).json()).toEqual({ signed_in: false });
    }
    expect((await call(base, 'GET', '/keys', { session: valid })).status).toBe(200);
  });

  it('serves the admin API actions: the same keys, usage and catalog', async () => {
    const operator = await session(base);
    const made = await createKey(deployment, { name: 'made by the admin API', budget_usd: 3, budget_period: 'daily', rpm: 7 });
    const listed = (await (await call(base, 'GET', '/keys', { session: operator })).json()) as { data: Array<Record<string, unknown>> };
    const fromAdmin = (await adminRequest(deployment, 'GET', '/admin/v1/keys')).body.data;
    expect(listed.data).toEqual(fromAdmin);
    expect(listed.data.find((key) => key.id === made.id)).toMatchObject({ budget_usd: 3, budget_period: 'daily', rpm: 7 });

    const rotated = await call(base, 'POST', `/keys/${made.id}/rotate`, { session: operator });
    expect(rotated.status).toBe(201);
    const twin = (await rotated.json()) as Record<string, unknown>;
    expect(twin).toMatchObject({ name: 'made by the admin API', budget_usd: 3, budget_period: 'daily', rpm: 7, status: 'active' });
    expect(twin.key).toMatch(/^sk-service-/);
    expect((await adminRequest(deployment, 'GET', `/admin/v1/keys/${made.id}`)).body.status).toBe('active');

    const models = (await (await call(base, 'GET', '/models', { session: operator })).json()) as { data: Array<{ id: string; provider_configured: boolean }> };
    expect(models.data.find((model) => model.id === 'svc/nokey')?.provider_configured).toBe(false);
    expect((await call(base, 'GET', '/usage?group_by=model', { session: operator })).status).toBe(200);
    expect(await errorCode(await call(base, 'GET', '/usage?group_by=planet', { session: operator }))).toBe('invalid_value');
  });

  it('refuses state changes without the session CSRF token, from a foreign origin, or not as JSON', async () => {
    const operator = await session(base);
    const other = await session(base);
    const key = await createKey(deployment, { name: 'csrf target' });
    const cases: Array<[string, Parameters<typeof call>[3], number, string]> = [
      ['no CSRF token', { session: operator, csrf: null }, 403, 'csrf_token_invalid'],
      ["another session's CSRF token", { session: operator, csrf: other.csrf }, 403, 'csrf_token_invalid'],
      ['a foreign Origin', { session: operator, origin: 'https://evil.example' }, 403, 'cross_site_request'],
      ['no Origin', { session: operator, origin: null }, 403, 'cross_site_request'],
      ['no session', { csrf: operator.csrf }, 401, 'session_required'],
    ];
    for (const [label, options, status, code] of cases) {
      const creating = await call(base, 'POST', '/keys', { ...options, body: { name: `forged: ${label}` } });
      expect({ label, status: creating.status, code: await errorCode(creating) }).toEqual({ label, status, code });
      const renaming = await call(base, 'PATCH', `/keys/${key.id}`, { ...options, body: { name: 'renamed by a forgery' } });
      expect({ label, status: renaming.status }).toEqual({ label, status });
      expect((await call(base, 'DELETE', `/keys/${key.id}`, options)).status).toBe(status);
    }
    const textPlain = await call(base, 'POST', '/keys', { session: operator, body: { name: 'text plain' }, contentType: 'text/plain' });
    expect(textPlain.status).toBe(415);
    expect((await call(base, 'POST', '/session', { origin: 'https://evil.example', body: { token: testAdminToken } })).status).toBe(403);

    const names = (await adminRequest(deployment, 'GET', '/admin/v1/keys')).body.data.map((entry: { name: string }) => entry.name);
    expect(names.filter((name: string) => name.startsWith('forged') || name === 'text plain' || name === 'renamed by a forgery')).toEqual([]);
    expect((await adminRequest(deployment, 'GET', `/admin/v1/keys/${key.id}`)).body.status).toBe('active');

    const created = await call(base, 'POST', '/keys', { session: operator, body: { name: 'made in the dashboard', budget_usd: 1 } });
    expect(created.status).toBe(201);
    expect((await call(base, 'DELETE', `/keys/${key.id}`, { session: operator })).status).toBe(200);
  });

  it('signs out: the cookie is cleared and the session no longer works', async () => {
    const operator = await session(base);
    const out = await call(base, 'DELETE', '/session', { session: operator });
    expect(out.status).toBe(200);
    expect(out.headers.get('set-cookie')).toBe('sb_dashboard=; Path=/dashboard; HttpOnly; SameSite=Strict; Max-Age=0');
    expect((await call(base, 'GET', '/keys', { session: operator })).status).toBe(401);
    expect(await (await call(base, 'GET', '/session', { session: operator })).json()).toEqual({ signed_in: false });
  });
});

describe('dashboard on its own port, with sign-in backoff', () => {
  let double: OpenAiProviderDouble;
  let gateway: EmbeddedGateway;
  let dataDir: string;

  beforeAll(async () => {
    double = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
    dataDir = mkdtempSync(join(tmpdir(), 'switchboard-dashboard-'));
    gateway = await startEmbeddedGateway({ environment: testEnvironment({ openAiUrl: double.url, environment: { SWITCHBOARD_DASHBOARD_PORT: '0' } }, dataDir) });
  }, 60_000);
  afterAll(async () => {
    await gateway?.close();
    await double?.close();
    rmSync(dataDir, { recursive: true, force: true });
  }, 30_000);

  it('serves the dashboard on SWITCHBOARD_DASHBOARD_PORT as well as on the ingress, and nothing else there', async () => {
    const own = new URL(gateway.dashboardUrl);
    expect(own.port).not.toBe(String(gateway.port));
    const dashboardBase = own.origin;
    expect((await fetch(`${dashboardBase}/`, { redirect: 'manual' })).headers.get('location')).toBe('/dashboard/');
    expect((await fetch(`${dashboardBase}/dashboard/`)).status).toBe(200);
    expect((await fetch(`${dashboardBase}/v1/models`)).status).toBe(404);
    expect((await fetch(`${gateway.url}/dashboard/`)).status).toBe(200);
    const operator = await session(dashboardBase);
    expect((await call(dashboardBase, 'GET', '/keys', { session: operator })).status).toBe(200);
  });

  it('slows repeated failures down per client, refusing even the right token while it waits', async () => {
    const dashboardBase = new URL(gateway.dashboardUrl).origin;
    for (let attempt = 1; attempt <= 3; attempt += 1) expect((await signIn(dashboardBase, 'guess')).status).toBe(401);
    const blocked = await signIn(gateway.url, testAdminToken);
    expect(blocked.status).toBe(429);
    expect(blocked.headers.get('retry-after')).toBe('1');
    expect(await errorCode(blocked)).toBe('too_many_attempts');
    await new Promise((resolve) => setTimeout(resolve, 1050));
    expect((await signIn(dashboardBase, testAdminToken)).status).toBe(200);
    expect((await signIn(dashboardBase, 'guess')).status).toBe(401);
  });
});

if (!scaledOutAvailable) console.warn(`dashboard (scaled out): ${scaledOutSkipNotice}`);

describe.runIf(scaledOutAvailable)('dashboard on the scaled-out deployment', () => {
  let double: OpenAiProviderDouble;
  let deployment: ScaledDeployment;

  beforeAll(async () => {
    double = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
    deployment = await startScaledDeployment({ openAiUrl: double.url, ingressCount: 2, workerCount: 0 });
  }, 60_000);
  afterAll(async () => {
    await deployment?.close();
    await double?.close();
  }, 30_000);

  it('accepts a session signed in on one ingress on every other (stateless signed cookies)', async () => {
    const [first, second] = deployment.ingresses.map((managed) => managed.url!);
    expect((await fetch(`${second}/dashboard/`)).status).toBe(200);
    const operator = await session(first!);
    expect((await call(second!, 'GET', '/keys', { session: operator })).status).toBe(200);
    const created = await call(second!, 'POST', '/keys', { session: operator, body: { name: 'made through the second ingress' } });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    expect((await call(first!, 'DELETE', `/keys/${id}`, { session: operator })).status).toBe(200);
    expect((await adminRequest(deployment, 'GET', `/admin/v1/keys/${id}`)).body.status).toBe('revoked');
    expect((await call(second!, 'POST', '/keys', { session: operator, csrf: null, body: { name: 'forged' } })).status).toBe(403);
  });
});

describe('session and backoff rules', () => {
  it('expires sessions and binds CSRF tokens to one session', () => {
    let now = 1_000_000_000_000;
    const signer = new SessionSigner('token', 60_000, () => now);
    const issued = signer.issue();
    expect(signer.verify(issued.cookieValue)?.id).toBe(issued.id);
    expect(signer.csrfMatches(issued, issued.csrfToken)).toBe(true);
    expect(signer.csrfMatches(issued, signer.issue().csrfToken)).toBe(false);
    expect(signer.csrfMatches(issued, '')).toBe(false);
    now += 59_000;
    expect(signer.verify(issued.cookieValue)).toBeDefined();
    now += 1_000;
    expect(signer.verify(issued.cookieValue)).toBeUndefined();
    expect(new SessionSigner('token', 60_000, () => now).verify(signer.issue().cookieValue)).toBeDefined();
  });

  it('doubles the wait after each failure past the second, up to five minutes, and forgets quiet clients', () => {
    let now = 0;
    const throttle = new SignInThrottle(() => now);
    const waits: number[] = [];
    for (let failure = 1; failure <= 12; failure += 1) {
      throttle.failed('a');
      waits.push(throttle.waitMs('a'));
    }
    expect(waits).toEqual([0, 0, 1000, 2000, 4000, 8000, 16000, 32000, 64000, 128000, 256000, 300000]);
    expect(throttle.waitMs('b')).toBe(0);
    now += 16 * 60_000;
    throttle.failed('a');
    expect(throttle.waitMs('a')).toBe(0);
    throttle.succeeded('a');
    expect(throttle.waitMs('a')).toBe(0);
  });
});
