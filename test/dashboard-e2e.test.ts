import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from './doubles/openai-provider-double.js';
import { adminRequest, chat, hello } from './support/api-client.js';
import { chromiumPath, haveChromium, launchChromium, openPerson } from './support/chromium.js';
import { startDeployment, type TestDeployment } from './support/gateway-harness.js';
import { testPrices } from './support/test-catalog.js';

// The dashboard driven in real Chromium (Debian's `chromium` package) against the embedded
// gateway and the provider double. It saves a screenshot of each page to docs/screenshots.

const screenshots = fileURLToPath(new URL('../docs/screenshots/', import.meta.url));
const adminToken = 'sb-admin-test-token-5f9c2e7a1d3b';

if (!haveChromium && !process.env.CI) {
  console.warn(`\n[dashboard-e2e] SKIPPED: no Chromium at ${chromiumPath}. Install it with: apt-get install -y chromium\n`);
}

describe.skipIf(haveChromium || !process.env.CI)('dashboard in Chromium (CI)', () => {
  it('needs Chromium installed', () => {
    throw new Error(`No Chromium at ${chromiumPath}: CI must install Debian's chromium package (apt-get install -y chromium).`);
  });
});

/** Dollars as the dashboard shows them. */
function shownUsd(value: number): string {
  const digits = Math.abs(value) >= 1 || value === 0 ? 2 : 6;
  return new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: digits }).format(value);
}

/** The hint the gateway shows for a full key: sk-service-<public id>-...<last 4>. */
function hintOf(key: string): string {
  const [, publicId, secret] = /^sk-service-([A-Za-z0-9]{12})-([A-Za-z0-9]{32})$/.exec(key)!;
  return `sk-service-${publicId}-...${secret!.slice(-4)}`;
}

describe.runIf(haveChromium)('dashboard in Chromium', () => {
  let double: OpenAiProviderDouble;
  let deployment: TestDeployment;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let problems: string[];

  beforeAll(async () => {
    double = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
    deployment = await startDeployment('embedded', { openAiUrl: double.url });
    browser = await launchChromium();
    ({ context, page, problems } = await openPerson(browser));
    mkdirSync(screenshots, { recursive: true });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await deployment?.close();
    await double?.close();
  }, 30_000);

  const shoot = (name: string) => page.screenshot({ path: join(screenshots, name), fullPage: true });
  const heading = (name: string) => page.getByRole('heading', { level: 1, name }).waitFor();
  const dialog = () => page.getByRole('dialog');
  const row = (text: string) => page.getByRole('row').filter({ hasText: text });

  it('signs in, manages a key through its life, shows usage and cost, and signs out', async () => {
    const dashboard = `${deployment.url()}/dashboard/`;
    await page.goto(dashboard);
    await heading('Sign in to the dashboard');
    await shoot('sign-in.png');

    // A wrong token is refused without detail.
    await page.getByLabel('Admin token').fill('not-the-admin-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'Sign-in failed' }).waitFor();

    await page.getByLabel('Admin token').fill(adminToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await heading('API keys');
    await page.getByRole('heading', { name: 'No keys yet' }).waitFor();
    expect(page.url()).not.toContain(adminToken);
    const [cookie] = await context.cookies(dashboard);
    expect(cookie).toMatchObject({ name: 'sb_dashboard', httpOnly: true, sameSite: 'Strict', path: '/dashboard' });
    expect(cookie!.value).not.toContain(adminToken);
    expect(await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + document.cookie)).not.toContain(adminToken);

    // Create a key with a budget and limits; the full key shows exactly once.
    await page.getByRole('button', { name: 'Create key' }).first().click();
    await dialog().getByLabel('Name').fill('checkout service');
    await dialog().getByLabel('Budget (USD)').fill('5');
    await dialog().getByLabel('Requests per minute').fill('60');
    await dialog().getByLabel('Tokens per minute').fill('100000');
    await dialog().getByLabel('Allowed models').fill('svc/alpha, svc/b*');
    await dialog().getByLabel('Budget alerts').fill('80=http://127.0.0.1:9/budget\n100=http://127.0.0.1:9/budget');
    await dialog().getByRole('button', { name: 'Create key' }).click();
    const secretField = dialog().getByLabel('Secret key');
    await secretField.waitFor();
    const secret = await secretField.inputValue();
    expect(secret).toMatch(/^sk-service-/);
    await dialog().getByText('This is the only time the full key is shown').waitFor();
    await shoot('key-created.png');
    await dialog().getByRole('button', { name: 'I have stored the key' }).click();
    await row('checkout service').waitFor();
    expect(await page.content()).not.toContain(secret);
    const governed = (await adminRequest(deployment, 'GET', '/admin/v1/keys')).body.data.find((key: { name: string }) => key.name === 'checkout service');
    expect(governed).toMatchObject({ allowed_models: ['svc/alpha', 'svc/b*'], alerts: [{ threshold_percent: 80, webhook_url: 'http://127.0.0.1:9/budget' }, { threshold_percent: 100, webhook_url: 'http://127.0.0.1:9/budget' }] });

    // Use it through the API, against the provider double.
    const response = await chat(deployment, secret, { model: 'svc/alpha', messages: hello });
    expect(response.status).toBe(200);
    const { usage } = (await response.json()) as { usage: { prompt_tokens: number; completion_tokens: number } };
    const [promptPrice, completionPrice] = testPrices.alpha!;
    const cost = (usage.prompt_tokens * promptPrice + usage.completion_tokens * completionPrice) / 1e6;
    // And once through a fallback: svc/beta is rate limited upstream, svc/alpha answers and is billed.
    double.script('beta', { kind: 'error', status: 429 });
    // Its usage has a cache and reasoning split; svc/alpha has no cache price, so reads bill at the input price.
    double.script('alpha', { kind: 'text', text: 'fallback answer', usage: { prompt_tokens: 100, completion_tokens: 50, cached_tokens: 40, reasoning_tokens: 10 } });
    const viaFallback = await chat(deployment, secret, { model: 'svc/beta', fallbacks: ['svc/alpha'], messages: hello });
    expect(viaFallback.status).toBe(200);
    const fallbackCost = (100 * promptPrice + 50 * completionPrice) / 1e6;

    // The request, its cost and the key's spend appear in the dashboard.
    await page.getByRole('link', { name: 'Usage' }).click();
    await heading('Usage');
    const request = row('svc/alpha').filter({ hasText: 'checkout service' }).filter({ hasText: `${usage.prompt_tokens} + ${usage.completion_tokens}` });
    await request.waitFor();
    const requestText = await request.innerText();
    expect(requestText).toContain(shownUsd(cost));
    expect(requestText).toContain('200');
    const fallbackRow = await row('svc/beta').innerText();
    // Two attempts (the failed primary is an attempt, not a fallback), in order.
    expect(fallbackRow).toMatch(/svc\/beta[\s\S]*svc\/alpha[\s\S]*2 \(svc\/beta: rate limit → svc\/alpha: success\)[\s\S]*100 \+ 50/);
    expect(fallbackRow).toContain(shownUsd(fallbackCost));
    expect(fallbackRow).toContain('40 cache read · 10 reasoning');
    await page.getByRole('region', { name: 'Totals for the range' }).getByText(shownUsd(cost + fallbackCost)).waitFor();
    await page.getByRole('region', { name: 'Totals for the range' }).getByText('40 cache read · 10 reasoning').waitFor();
    await page.locator('.uplot canvas').first().waitFor();
    await shoot('usage.png');

    await page.getByRole('link', { name: 'API keys' }).click();
    await heading('API keys');
    expect(await row('checkout service').innerText()).toContain(shownUsd(cost + fallbackCost));

    // Rotate: a twin with the same settings; both keys work until the old one is revoked.
    const oldHint = hintOf(secret);
    await page.getByRole('button', { name: `Rotate checkout service (${oldHint})` }).click();
    await dialog().getByText('still works').waitFor();
    const twin = await dialog().getByLabel('Secret key').inputValue();
    expect(twin).not.toBe(secret);
    await dialog().getByRole('button', { name: 'I have stored the key' }).click();
    expect((await chat(deployment, twin, { model: 'svc/alpha', messages: hello })).status).toBe(200);
    expect((await chat(deployment, secret, { model: 'svc/alpha', messages: hello })).status).toBe(200);
    const twinRow = row(hintOf(twin));
    await twinRow.waitFor();
    expect(await twinRow.innerText()).toContain('$5.00');
    expect(await twinRow.innerText()).toContain('60 rpm');

    // Change the budget to 0: the next request is refused with 402.
    await page.getByRole('button', { name: `Edit checkout service (${oldHint})` }).click();
    await dialog().getByLabel('Name').fill('checkout service (old)');
    await dialog().getByLabel('Budget (USD)').fill('0');
    await dialog().getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved key' }).waitFor();
    await row('checkout service (old)').filter({ hasText: '$0.00' }).waitFor();
    const refused = await chat(deployment, secret, { model: 'svc/alpha', messages: hello });
    expect(refused.status).toBe(402);
    expect((await refused.json()).error.code).toBe('budget_exceeded');

    // Revoke it (with a confirmation): the API answers 401 at once; the twin keeps working.
    await page.getByRole('button', { name: `Revoke checkout service (old) (${oldHint})` }).click();
    await dialog().getByText('This cannot be undone').waitFor();
    await dialog().getByRole('button', { name: 'Revoke key' }).click();
    await page.getByRole('status').filter({ hasText: 'Revoked key' }).waitFor();
    const revoked = await chat(deployment, secret, { model: 'svc/alpha', messages: hello });
    expect(revoked.status).toBe(401);
    expect((await revoked.json()).error.code).toBe('invalid_api_key');
    expect((await chat(deployment, twin, { model: 'svc/alpha', messages: hello })).status).toBe(200);
    await page.getByLabel('Status').selectOption('all');
    await row('checkout service (old)').filter({ hasText: 'Revoked' }).waitFor();
    await shoot('keys.png');

    // Search filters the table.
    await page.getByLabel('Search keys').fill('no such key');
    await page.getByRole('heading', { name: 'No keys match' }).waitFor();
    await page.getByLabel('Search keys').fill('');

    // Models: the catalog with prices and whether each provider is configured.
    await page.getByRole('link', { name: 'Models' }).click();
    await heading('Models');
    expect(await row('svc/alpha').innerText()).toMatch(/double[\s\S]*32,768[\s\S]*\$1\.00[\s\S]*\$2\.00[\s\S]*Yes/);
    expect(await row('svc/nokey').innerText()).toContain('No');
    await shoot('models.png');

    // Projects: a shared budget, limits and alerts for several keys.
    await page.getByRole('link', { name: 'Projects' }).click();
    await heading('Projects');
    await page.getByRole('button', { name: 'Create project' }).first().click();
    await dialog().getByLabel('Project name').fill('checkout team');
    await dialog().getByLabel('Project budget (USD)').fill('20');
    await dialog().getByLabel('Project requests per minute').fill('600');
    await dialog().getByLabel('Project budget alerts').fill('50=http://127.0.0.1:9/team');
    await dialog().getByRole('button', { name: 'Create project' }).click();
    await row('checkout team').waitFor();
    expect(await row('checkout team').innerText()).toMatch(/\$20\.00 monthly[\s\S]*600[\s\S]*50%/);
    const projects = (await adminRequest(deployment, 'GET', '/admin/v1/projects')).body.data;
    expect(projects).toEqual([expect.objectContaining({ name: 'checkout team', budget_usd: 20, budget_period: 'monthly', rpm: 600, alerts: [{ threshold_percent: 50, webhook_url: 'http://127.0.0.1:9/team' }] })]);

    // A narrow screen: the navigation wraps and tables scroll sideways inside their region.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByRole('link', { name: 'API keys' }).click();
    await row(hintOf(twin)).waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await shoot('keys-narrow.png');
    await page.getByRole('link', { name: 'Usage' }).click();
    await heading('Usage');
    await page.locator('.uplot canvas').first().waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await shoot('usage-narrow.png');
    await page.setViewportSize({ width: 1280, height: 800 });

    // A state-changing call from the page without the CSRF token is refused.
    const forged = await page.evaluate(async () => {
      const response = await fetch('api/keys', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'forged' }) });
      return { status: response.status, body: await response.json() };
    });
    expect(forged).toMatchObject({ status: 403, body: { error: { code: 'csrf_token_invalid' } } });

    // Sign out: back to sign-in, and the old cookie no longer opens a session.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await heading('Sign in to the dashboard');
    await page.getByText('You are signed out.').waitFor();
    const afterSignOut = await fetch(`${deployment.url()}/dashboard/api/keys`, { headers: { cookie: `sb_dashboard=${cookie!.value}` } });
    expect(afterSignOut.status).toBe(401);
    expect(await context.cookies(dashboard)).toEqual([]);

    expect((await adminRequest(deployment, 'GET', '/admin/v1/keys')).body.data.map((key: { name: string }) => key.name)).not.toContain('forged');
    expect(problems.filter((text) => !text.includes('401') && !text.includes('403'))).toEqual([]);
  }, 60_000);

  it('refuses a cross-site form post, even one a signed-in operator is tricked into sending', async () => {
    await context.clearCookies();
    await page.goto(`${deployment.url()}/dashboard/`);
    await page.getByLabel('Admin token').fill(adminToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await heading('API keys');
    // A foreign page (opaque origin) auto-submits a form that smuggles JSON in a text/plain body.
    const attack = `<form method="post" enctype="text/plain" action="${deployment.url()}/dashboard/api/keys"><input name='{"name":"csrf","x":"' value='"}'></form>`;
    const navigation = page.waitForNavigation();
    await page.goto(`data:text/html,${encodeURIComponent(attack)}`);
    await page.evaluate(() => (document.forms[0] as HTMLFormElement).submit());
    await navigation;
    const body = JSON.parse(await page.locator('body').innerText()) as { error: { code: string } };
    expect(['session_required', 'cross_site_request']).toContain(body.error.code);
    const names = (await adminRequest(deployment, 'GET', '/admin/v1/keys')).body.data.map((key: { name: string }) => key.name);
    expect(names).not.toContain('csrf');
  }, 30_000);
});
