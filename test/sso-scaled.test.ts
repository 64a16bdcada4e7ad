import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminRequest } from './support/api-client.js';
import { startOidcProvider, type TestOidcProvider } from './support/oidc-provider.js';
import { haveChromium, launchChromium, openPerson, signInWithSso, type Person } from './support/oidc-provider-browser.js';
import { scaledOutAvailable, scaledOutSkipNotice, startScaledDeployment, type ScaledDeployment } from './support/scaled-harness.js';

// Single sign-on on the scaled-out deployment: two ingress processes sharing PostgreSQL and Redis.
// A session signed in through one is valid on the other, and signing out, or an admin removing
// the user, ends it on both at once (the next request is refused, nothing waits for expiry).

if (!scaledOutAvailable) console.warn(`single sign-on (scaled out): ${scaledOutSkipNotice}`);

describe.runIf(haveChromium && scaledOutAvailable)('single sign-on across two ingress processes', () => {
  let provider: TestOidcProvider;
  let deployment: ScaledDeployment;
  let browser: Browser;
  let first: string;
  let second: string;
  const people: Person[] = [];

  beforeAll(async () => {
    provider = await startOidcProvider();
    deployment = await startScaledDeployment({
      openAiUrl: 'http://127.0.0.1:9',
      ingressCount: 2,
      workerCount: 0,
      environment: provider.environment({ SWITCHBOARD_OIDC_ALLOWED_DOMAINS: 'acme.test', SWITCHBOARD_OIDC_ROLE_MAP: 'sb-admins=admin,sb-team=member' }),
    });
    [first, second] = deployment.ingresses.map((managed) => managed.url!) as [string, string];
    browser = await launchChromium();
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await deployment?.close();
    await provider?.close();
  }, 30_000);

  /** The dashboard cookie the browser holds (cookies are per host, so both ingresses on 127.0.0.1 get it). */
  async function sessionCookie(person: Person): Promise<string> {
    const cookie = (await person.context.cookies(`${first}/dashboard/`)).find((candidate) => candidate.name === 'sb_dashboard');
    expect(cookie).toBeDefined();
    return `sb_dashboard=${cookie!.value}`;
  }

  const keysWith = (base: string, cookie: string) => fetch(`${base}/dashboard/api/keys`, { headers: { cookie } });

  async function signedIn(user: keyof typeof provider.users): Promise<Person> {
    const person = await openPerson(browser);
    people.push(person);
    await signInWithSso(person.page, `${first}/dashboard/`, provider.users[user]!);
    await person.page.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();
    return person;
  }

  it('signs out on one ingress and the session is refused on the other at once', async () => {
    const admin = await signedIn('admin');
    const cookie = await sessionCookie(admin);
    expect((await keysWith(second, cookie)).status).toBe(200);
    // The same browser on the second ingress is signed in too.
    await admin.page.goto(`${second}/dashboard/`);
    await admin.page.getByText('ada@acme.test').waitFor();

    await admin.page.goto(`${first}/dashboard/`);
    await admin.page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await admin.page.getByText('You are signed out.').waitFor();
    const refused = await keysWith(second, cookie);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('session_required');
    expect((await keysWith(first, cookie)).status).toBe(401);
  }, 90_000);

  it('signs a user out everywhere: every browser, on both ingresses', async () => {
    const laptop = await signedIn('admin');
    const phone = await signedIn('admin');
    const [laptopCookie, phoneCookie] = [await sessionCookie(laptop), await sessionCookie(phone)];
    expect(laptopCookie).not.toBe(phoneCookie);
    expect((await keysWith(second, phoneCookie)).status).toBe(200);

    await laptop.page.getByRole('button', { name: 'Sign out everywhere' }).click();
    await laptop.page.getByText('You are signed out everywhere.').waitFor();
    for (const base of [first, second]) {
      expect((await keysWith(base, laptopCookie)).status).toBe(401);
      expect((await keysWith(base, phoneCookie)).status).toBe(401);
    }
    await phone.page.getByRole('link', { name: 'Projects' }).click();
    await phone.page.getByText('Your session has ended. Sign in again to continue.').waitFor();

    // A new sign-in afterwards works as usual.
    await phone.page.getByRole('link', { name: 'Sign in with single sign-on' }).click();
    await phone.page.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();
    expect((await keysWith(second, await sessionCookie(phone))).status).toBe(200);
    const entries = (await adminRequest(deployment, 'GET', '/admin/v1/audit?action=session.signed_out')).body.data as Array<{ actor: { label: string }; changes: { everywhere?: { to: boolean } } | null }>;
    expect(entries.some((entry) => entry.actor.label === 'ada@acme.test' && entry.changes?.everywhere?.to === true)).toBe(true);
  }, 90_000);

  it('removing a user ends their sessions on both ingresses, and the open page returns to sign-in', async () => {
    const member = await signedIn('member');
    const cookie = await sessionCookie(member);
    expect((await keysWith(first, cookie)).status).toBe(200);
    expect((await keysWith(second, cookie)).status).toBe(200);
    await member.page.goto(`${second}/dashboard/`);
    await member.page.getByText('max@acme.test').waitFor();

    const users = (await adminRequest(deployment, 'GET', '/admin/v1/users')).body.data as Array<{ id: string; email: string; role: string }>;
    const max = users.find((user) => user.email === 'max@acme.test')!;
    expect(max.role).toBe('member');
    const removed = await fetch(`${first}/admin/v1/users/${max.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${deployment.adminToken}` } });
    expect(removed.status).toBe(200);

    expect((await keysWith(first, cookie)).status).toBe(401);
    expect((await keysWith(second, cookie)).status).toBe(401);
    await member.page.getByRole('link', { name: 'Usage' }).click();
    await member.page.getByText('Your session has ended. Sign in again to continue.').waitFor();

    // Signing in again does not bring a removed user back (the provider still knows the browser, so no forms this time).
    await member.page.goto(`${second}/dashboard/`);
    await member.page.getByRole('link', { name: 'Sign in with single sign-on' }).click();
    await member.page.getByRole('heading', { name: 'Sign-in refused' }).waitFor();
    expect(await member.page.getByRole('alert').innerText()).toContain('max@acme.test was removed');

    const audit = (await adminRequest(deployment, 'GET', `/admin/v1/audit?target_id=${max.id}`)).body.data as Array<{ action: string; actor: { kind: string } }>;
    expect(audit.map((entry) => `${entry.action} ${entry.actor.kind}`)).toEqual(expect.arrayContaining(['user.removed root', 'session.signed_in user']));
  }, 90_000);
});
