import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from './doubles/openai-provider-double.js';
import { adminRequest, createKey } from './support/api-client.js';
import { startDeployment, testAdminToken, type TestDeployment } from './support/gateway-harness.js';
import { startOidcProvider, type TestOidcProvider } from './support/oidc-provider.js';
import { callFromPage, csrfTokenOf, haveChromium, launchChromium, openPerson, signInWithSso, type Person } from './support/oidc-provider-browser.js';

// Single sign-on to the dashboard through a real OpenID Connect provider (oidc-provider), in
// Chromium, against the embedded gateway: roles from the provider's groups, enforced in the page
// and in the API behind it; the email domain restriction; sign-in and sign-out in the audit log.
// Saves screenshots of the Users and Audit log pages to docs/screenshots.

const screenshots = fileURLToPath(new URL('../docs/screenshots/', import.meta.url));

describe.skipIf(haveChromium || !process.env.CI)('single sign-on in Chromium (CI)', () => {
  it('needs Chromium installed', () => {
    throw new Error('No Chromium: CI must install Debian\'s chromium package (apt-get install -y chromium).');
  });
});

describe.runIf(haveChromium)('single sign-on to the dashboard in Chromium', () => {
  let double: OpenAiProviderDouble;
  let provider: TestOidcProvider;
  let deployment: TestDeployment;
  let browser: Browser;
  let dashboard: string;
  const people: Person[] = [];

  beforeAll(async () => {
    double = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
    provider = await startOidcProvider();
    deployment = await startDeployment('embedded', {
      openAiUrl: double.url,
      environment: provider.environment({ SWITCHBOARD_OIDC_ALLOWED_DOMAINS: 'acme.test', SWITCHBOARD_OIDC_ROLE_MAP: 'sb-admins=admin,sb-team=member' }),
    });
    dashboard = `${deployment.url()}/dashboard/`;
    browser = await launchChromium();
    mkdirSync(screenshots, { recursive: true });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await deployment?.close();
    await provider?.close();
    await double?.close();
  }, 30_000);

  async function person(): Promise<Person> {
    const opened = await openPerson(browser);
    people.push(opened);
    return opened;
  }

  it('signs an admin in through the provider; the admin creates a key and signs out', async () => {
    const { page, problems } = await person();
    await page.goto(dashboard);
    await page.getByRole('link', { name: 'Sign in with single sign-on' }).waitFor();
    // Both ways in: single sign-on first, the admin token for break-glass use.
    await page.getByLabel('Admin token').waitFor();
    await page.screenshot({ path: join(screenshots, 'sign-in-sso.png') });
    await signInWithSso(page, dashboard, provider.users.admin!);
    await page.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();
    await page.getByText('ada@acme.test').waitFor();
    await page.locator('.badge.role.admin').waitFor();
    expect(page.url()).not.toContain('code=');

    await page.getByRole('button', { name: 'Create key' }).first().click();
    await page.getByRole('dialog').getByLabel('Name').fill('made through single sign-on');
    await page.getByRole('dialog').getByRole('button', { name: 'Create key' }).click();
    expect(await page.getByRole('dialog').getByLabel('Secret key').inputValue()).toMatch(/^sk-service-/);
    await page.getByRole('dialog').getByRole('button', { name: 'I have stored the key' }).click();
    await page.getByRole('row').filter({ hasText: 'made through single sign-on' }).waitFor();

    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page.getByText('You are signed out.').waitFor();
    expect(problems.filter((text) => !/\b40[13]\b/.test(text))).toEqual([]);
  }, 60_000);

  it('shows a viewer no create, edit or revoke controls, and refuses its session with 403 when it calls the API directly', async () => {
    const { page } = await person();
    await signInWithSso(page, dashboard, provider.users.viewer!);
    await page.getByRole('row').filter({ hasText: 'made through single sign-on' }).waitFor();
    await page.locator('.badge.role.viewer').waitFor();
    expect(await page.getByRole('button', { name: 'Create key' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: /^(Edit|Rotate|Revoke) / }).count()).toBe(0);
    await page.getByText('Read only: your role is viewer.').waitFor();
    // Users and the audit log are readable, not changeable.
    await page.getByRole('link', { name: 'Users' }).click();
    await page.getByRole('row').filter({ hasText: 'ada@acme.test' }).waitFor();
    expect(await page.getByRole('button', { name: /^(Add user|Edit|Remove)/ }).count()).toBe(0);

    const csrf = await csrfTokenOf(page);
    const created = await callFromPage(page, 'POST', '/keys', { name: 'made by a viewer' }, csrf);
    expect(created.status).toBe(403);
    expect(created.body.error?.code).toBe('insufficient_role');
    const keys = (await adminRequest(deployment, 'GET', '/admin/v1/keys')).body.data.map((key: { name: string }) => key.name);
    expect(keys).not.toContain('made by a viewer');
    // Reading is allowed.
    expect((await callFromPage(page, 'GET', '/keys')).status).toBe(200);
  }, 60_000);

  it('refuses a person whose email domain is not allowed, with a page that says why', async () => {
    const { page } = await person();
    await signInWithSso(page, dashboard, provider.users.outsider!);
    await page.getByRole('heading', { name: 'Sign-in refused' }).waitFor();
    const message = await page.getByRole('alert').innerText();
    expect(message).toContain('olga@other.test may not sign in');
    expect(message).toContain('@acme.test');
    await page.screenshot({ path: join(screenshots, 'sign-in-refused.png') });
    const session = await page.evaluate(async () => (await fetch('/dashboard/api/session')).json());
    expect(session).toEqual({ signed_in: false });
    const users = (await adminRequest(deployment, 'GET', '/admin/v1/users')).body.data.map((user: { email: string }) => user.email);
    expect(users).not.toContain('olga@other.test');
  }, 60_000);

  it('refuses an email address the provider has not verified', async () => {
    const { page } = await person();
    await signInWithSso(page, dashboard, provider.users.unverified!);
    await page.getByRole('heading', { name: 'Sign-in refused' }).waitFor();
    expect(await page.getByRole('alert').innerText()).toContain('uma@acme.test is not verified');
  }, 60_000);

  it('keeps the admin-token sign-in beside single sign-on, as root, whose sessions end only one by one', async () => {
    const base = deployment.url();
    const signedIn = await fetch(`${base}/dashboard/api/session`, { method: 'POST', headers: { origin: base, 'content-type': 'application/json' }, body: JSON.stringify({ token: testAdminToken }) });
    expect(signedIn.status).toBe(200);
    const body = (await signedIn.json()) as { csrf_token: string; principal: { kind: string; role: string } };
    expect(body.principal).toMatchObject({ kind: 'root', role: 'admin' });
    const cookie = signedIn.headers.get('set-cookie')!.split(';')[0]!;
    const everywhere = await fetch(`${base}/dashboard/api/sessions`, { method: 'DELETE', headers: { origin: base, cookie, 'x-csrf-token': body.csrf_token } });
    expect(everywhere.status).toBe(400);
    expect(((await everywhere.json()) as { error: { code: string } }).error.code).toBe('not_a_user');
    const signedOut = await fetch(`${base}/dashboard/api/session`, { method: 'DELETE', headers: { origin: base, cookie, 'x-csrf-token': body.csrf_token } });
    expect(signedOut.status).toBe(200);
    const entries = (await adminRequest(deployment, 'GET', '/admin/v1/audit?actor=root&action=session')).body.data as Array<{ action: string; changes: Record<string, { to: unknown }> | null }>;
    expect(entries.map((entry) => entry.action)).toEqual(['session.signed_out', 'session.signed_in']);
    expect(entries[1]!.changes).toEqual({ method: { to: 'admin_token' } });
  });

  it('records sign-ins, failed sign-ins and sign-outs in the audit log with the right actor and address', async () => {
    const { body } = await adminRequest(deployment, 'GET', '/admin/v1/audit?action=session&limit=100');
    const entries = body.data as Array<{ action: string; actor: { kind: string; label: string; id: string }; client: string; outcome: string }>;
    const summary = entries.map((entry) => `${entry.action} ${entry.actor.label} ${entry.outcome}`);
    expect(summary).toEqual(expect.arrayContaining([
      'session.signed_in ada@acme.test success',
      'session.signed_out ada@acme.test success',
      'session.signed_in vera@acme.test success',
      'session.sign_in_failed olga@other.test failure',
      'session.sign_in_failed uma@acme.test failure',
    ]));
    const signIn = entries.find((entry) => entry.action === 'session.signed_in' && entry.actor.label === 'ada@acme.test')!;
    expect(signIn).toMatchObject({ actor: { kind: 'user' }, client: '127.0.0.1' });
    expect(signIn.actor.id).toMatch(/^usr_/);
    // The key the admin created is attributed to the admin; the viewer's attempt is recorded as refused.
    const created = (await adminRequest(deployment, 'GET', '/admin/v1/audit?action=key.created')).body.data;
    expect(created.map((entry: { actor: { id: string; label: string }; outcome: string }) => `${entry.actor.label} ${entry.outcome}`)).toEqual(['vera@acme.test failure', 'ada@acme.test success']);
    expect(created[1].actor.id).toBe(signIn.actor.id);
    expect(JSON.stringify(entries)).not.toMatch(/sk-service-|password|code=/);
  });

  it('shows a member only the keys of their projects, and lets them create keys only there', async () => {
    const mine = (await adminRequest(deployment, 'POST', '/admin/v1/projects', { name: 'team max' })).body as { id: string };
    const theirs = (await adminRequest(deployment, 'POST', '/admin/v1/projects', { name: 'someone else' })).body as { id: string };
    await createKey(deployment, { name: 'team key', project_id: mine.id });
    await createKey(deployment, { name: 'foreign key', project_id: theirs.id });
    // The first sign-in makes Max a member (group sb-team); an admin then gives him his project.
    const { page, problems } = await person();
    await signInWithSso(page, dashboard, provider.users.member!);
    await page.locator('.badge.role.member').waitFor();
    const max = (await adminRequest(deployment, 'GET', '/admin/v1/users')).body.data.find((user: { email: string }) => user.email === 'max@acme.test');
    expect((await adminRequest(deployment, 'PATCH', `/admin/v1/users/${max.id}`, { projects: [mine.id] })).status).toBe(200);

    await page.reload();
    const row = (text: string) => page.getByRole('row').filter({ hasText: text });
    await row('team key').waitFor();
    expect(await row('foreign key').count()).toBe(0);
    expect(await row('made through single sign-on').count()).toBe(0);
    expect(await page.getByRole('link', { name: 'Users' }).count()).toBe(0);

    await page.getByRole('button', { name: 'Create key' }).first().click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Name').fill('made by max');
    expect(await dialog.getByLabel('Project id').locator('option').allTextContents()).toEqual([mine.id]);
    await dialog.getByRole('button', { name: 'Create key' }).click();
    await dialog.getByRole('button', { name: 'I have stored the key' }).click();
    await row('made by max').waitFor();
    const made = (await adminRequest(deployment, 'GET', '/admin/v1/keys')).body.data.find((key: { name: string }) => key.name === 'made by max');
    expect(made.project_id).toBe(mine.id);

    // Every page of the navigation works for a member: nothing it asks for is refused.
    for (const name of ['Projects', 'Models', 'Usage', 'Health']) {
      await page.getByRole('link', { name }).click();
      await page.getByRole('heading', { level: 1, name }).waitFor();
      await page.waitForLoadState('networkidle');
    }
    expect(problems).toEqual([]);

    const outside = await callFromPage(page, 'POST', '/keys', { name: 'outside my projects', project_id: theirs.id }, await csrfTokenOf(page));
    expect(outside.status).toBe(403);
  }, 60_000);

  it('lets an admin change a role on the Users page and read the Audit log page', async () => {
    const { page } = await person();
    await signInWithSso(page, dashboard, provider.users.admin!);
    await page.getByRole('link', { name: 'Users' }).click();
    await page.getByRole('heading', { level: 1, name: 'Users' }).waitFor();
    const vera = page.getByRole('row').filter({ hasText: 'vera@acme.test' });
    await vera.locator('.badge.role.viewer').waitFor();
    await page.getByRole('button', { name: 'Edit vera@acme.test' }).click();
    await page.getByRole('dialog').getByLabel('Role').selectOption('member');
    await page.getByRole('dialog').getByRole('checkbox', { name: /team max/ }).check();
    await page.getByRole('dialog').getByRole('button', { name: 'Save changes' }).click();
    await vera.locator('.badge.role.member').waitFor();
    await vera.getByText('team max').waitFor();
    const stored = (await adminRequest(deployment, 'GET', '/admin/v1/users')).body.data.find((user: { email: string }) => user.email === 'vera@acme.test');
    expect(stored).toMatchObject({ role: 'member', projects: [expect.stringMatching(/./)] });
    await page.screenshot({ path: join(screenshots, 'users.png'), fullPage: true });

    // An admin token for Vera: the admin API with her role, until it is revoked.
    await page.getByRole('button', { name: 'Admin tokens of vera@acme.test' }).click();
    const tokens = page.getByRole('dialog');
    await tokens.getByLabel('New token name').fill('ci deploys');
    await tokens.getByRole('button', { name: 'Create token' }).click();
    const token = await tokens.getByLabel('Admin token “ci deploys”').inputValue();
    expect(token).toMatch(/^sbat_/);
    await page.screenshot({ path: join(screenshots, 'admin-token.png') });
    const me = (secret: string) => fetch(`${deployment.url()}/admin/v1/me`, { headers: { authorization: `Bearer ${secret}` } });
    expect(await (await me(token)).json()).toMatchObject({ kind: 'token', role: 'member', label: 'ci deploys' });
    await tokens.getByRole('button', { name: 'Revoke admin token ci deploys' }).click();
    await tokens.getByText('No active tokens.').waitFor();
    expect((await me(token)).status).toBe(401);
    await tokens.getByRole('button', { name: 'Done' }).click();

    await page.getByRole('link', { name: 'Audit log' }).click();
    await page.getByRole('heading', { level: 1, name: 'Audit log' }).waitFor();
    await page.getByRole('row').filter({ hasText: 'user.updated' }).filter({ hasText: 'viewer' }).filter({ hasText: 'member' }).waitFor();
    await page.getByRole('row').filter({ hasText: 'session.sign_in_failed' }).first().waitFor();
    await page.screenshot({ path: join(screenshots, 'audit.png'), fullPage: true });

    // On a phone the log becomes one card per entry, with nothing wider than the screen.
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await page.setViewportSize({ width: 1280, height: 800 });

    // The filters go to the server: only failures of sign-in remain.
    await page.getByLabel('Who').fill('olga@other.test');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByRole('row').filter({ hasText: 'session.sign_in_failed' }).waitFor();
    expect(await page.getByRole('row').filter({ hasText: 'session.signed_in' }).count()).toBe(0);
  }, 60_000);
});

describe.runIf(haveChromium)('single sign-on limited to groups', () => {
  let provider: TestOidcProvider;
  let deployment: TestDeployment;
  let browser: Browser;

  beforeAll(async () => {
    provider = await startOidcProvider();
    deployment = await startDeployment('embedded', { openAiUrl: 'http://127.0.0.1:9', environment: provider.environment({ SWITCHBOARD_OIDC_ALLOWED_GROUPS: 'staff' }) });
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await deployment?.close();
    await provider?.close();
  }, 30_000);

  it('lets members of an allowed group in, with the stored role when no group is mapped, and refuses the others', async () => {
    const member = await openPerson(browser);
    await signInWithSso(member.page, `${deployment.url()}/dashboard/`, provider.users.member!);
    await member.page.getByRole('heading', { name: 'Sign-in refused' }).waitFor();
    expect(await member.page.getByRole('alert').innerText()).toContain('membership of one of these groups is required: staff');

    const staff = await openPerson(browser);
    await signInWithSso(staff.page, `${deployment.url()}/dashboard/`, provider.users.viewer!);
    await staff.page.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();
    await staff.page.locator('.badge.role.viewer').waitFor();
    await member.context.close();
    await staff.context.close();
  }, 60_000);
});

describe('single sign-on settings', () => {
  it('refuses to start on a wrong setting, saying which', async () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ SWITCHBOARD_OIDC_ISSUER: 'https://login.example.com' }, /SWITCHBOARD_OIDC_CLIENT_ID/],
      [{ SWITCHBOARD_OIDC_ISSUER: 'login.example.com', SWITCHBOARD_OIDC_CLIENT_ID: 'c' }, /SWITCHBOARD_OIDC_ISSUER must be an http\(s\) URL/],
      [{ SWITCHBOARD_OIDC_ISSUER: 'https://login.example.com', SWITCHBOARD_OIDC_CLIENT_ID: 'c', SWITCHBOARD_OIDC_ROLE_MAP: 'sb-admins=root' }, /SWITCHBOARD_OIDC_ROLE_MAP/],
      [{ SWITCHBOARD_DASHBOARD_TOKEN_SIGN_IN: 'off' }, /nobody could sign in/],
      [{ SWITCHBOARD_DASHBOARD_TOKEN_SIGN_IN: 'maybe' }, /must be on or off/],
    ];
    for (const [environment, message] of cases) {
      await expect(startDeployment('embedded', { openAiUrl: 'http://127.0.0.1:9', environment })).rejects.toThrow(message);
    }
  });

  it('answers a clear page when the identity provider does not answer, and starts anyway', async () => {
    const deployment = await startDeployment('embedded', { openAiUrl: 'http://127.0.0.1:9', environment: { SWITCHBOARD_OIDC_ISSUER: 'http://127.0.0.1:9/realms/down', SWITCHBOARD_OIDC_CLIENT_ID: 'switchboard' } });
    try {
      const start = await fetch(`${deployment.url()}/dashboard/auth/oidc/start`, { redirect: 'manual' });
      expect(start.status).toBe(502);
      expect(start.headers.get('content-type')).toMatch(/^text\/html/);
      expect(start.headers.get('content-security-policy')).toContain("default-src 'none'");
      expect(await start.text()).toContain('The identity provider did not answer');
    } finally {
      await deployment.close();
    }
  });
});

describe('admin-token sign-in turned off', () => {
  let provider: TestOidcProvider;
  let deployment: TestDeployment;

  beforeAll(async () => {
    provider = await startOidcProvider();
    deployment = await startDeployment('embedded', { openAiUrl: 'http://127.0.0.1:9', environment: provider.environment({ SWITCHBOARD_DASHBOARD_TOKEN_SIGN_IN: 'off' }) });
  }, 60_000);
  afterAll(async () => {
    await deployment?.close();
    await provider?.close();
  });

  it('offers only single sign-on and refuses the admin token at the dashboard, while the bearer admin API keeps working', async () => {
    const base = deployment.url();
    expect(await (await fetch(`${base}/dashboard/api/sign-in-methods`)).json()).toEqual({ token: false, oidc: { label: 'Sign in with single sign-on', start: '/dashboard/auth/oidc/start' } });
    const refused = await fetch(`${base}/dashboard/api/session`, { method: 'POST', headers: { origin: base, 'content-type': 'application/json' }, body: JSON.stringify({ token: testAdminToken }) });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('token_sign_in_disabled');
    expect(refused.headers.get('set-cookie')).toBeNull();
    expect((await adminRequest(deployment, 'GET', '/admin/v1/keys')).status).toBe(200);

    const start = await fetch(`${base}/dashboard/auth/oidc/start`, { redirect: 'manual' });
    expect(start.status).toBe(302);
    const location = new URL(start.headers.get('location')!);
    expect(location.origin).toBe(provider.issuer);
    expect(location.searchParams.get('code_challenge_method')).toBe('S256');
    expect(location.searchParams.get('redirect_uri')).toBe(`${base}/dashboard/auth/oidc/callback`);
    expect(start.headers.get('set-cookie')).toMatch(/^sb_oidc=[^;]+; Path=\/dashboard\/auth\/oidc; HttpOnly; SameSite=Lax; Max-Age=600$/);

    // A callback without the flow cookie (another browser, or a forged link) signs nobody in.
    const forged = await fetch(`${base}/dashboard/auth/oidc/callback?code=abc&state=${location.searchParams.get('state')}`, { redirect: 'manual' });
    expect(forged.status).toBe(403);
    expect(forged.headers.get('set-cookie') ?? '').not.toContain('sb_dashboard=');
    expect(await forged.text()).toContain('Start it again');

    // With this browser's flow cookie: a made-up code, or the state of another flow, signs nobody in either.
    const flowCookie = start.headers.get('set-cookie')!.split(';')[0]!;
    const state = location.searchParams.get('state')!;
    for (const query of [`code=made-up&state=${state}&iss=${encodeURIComponent(provider.issuer)}`, `code=made-up&state=not-${state}&iss=${encodeURIComponent(provider.issuer)}`]) {
      const refused = await fetch(`${base}/dashboard/auth/oidc/callback?${query}`, { redirect: 'manual', headers: { cookie: flowCookie } });
      expect(refused.status).toBe(403);
      expect(refused.headers.get('set-cookie') ?? '').not.toContain('sb_dashboard=');
      expect(await refused.text()).toContain('could not be verified');
    }
    const failures = async () => ((await adminRequest(deployment, 'GET', '/admin/v1/audit?action=session.sign_in_failed')).body.data as Array<{ changes: { reason?: { to: string } } }>).map((entry) => entry.changes.reason?.to);
    expect(await failures()).toEqual(['provider_response_invalid', 'provider_response_invalid']);

    // Replaying made-up codes backs off (two failures are free, then the wait doubles), and a
    // refusal for waiting writes nothing to the audit log.
    let waited: Response | undefined;
    let refusedAgain = 0;
    for (let attempt = 0; attempt < 6 && !waited; attempt += 1) {
      const response = await fetch(`${base}/dashboard/auth/oidc/callback?code=made-up-${attempt}&state=${state}`, { redirect: 'manual', headers: { cookie: flowCookie } });
      if (response.status === 429) waited = response;
      else {
        expect(response.status).toBe(403);
        refusedAgain += 1;
      }
    }
    expect(waited).toBeDefined();
    expect(await waited!.text()).toMatch(/Too many failed sign-ins from this address; try again in \d+ s\./);
    expect(await failures()).toEqual(Array(2 + refusedAgain).fill('provider_response_invalid'));
  });
});
