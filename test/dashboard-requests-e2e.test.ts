import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from './doubles/openai-provider-double.js';
import { adminRequest, chat, createKey } from './support/api-client.js';
import { haveChromium, launchChromium, openPerson } from './support/chromium.js';
import { startDeployment, type TestDeployment } from './support/gateway-harness.js';

// The dashboard's request page in real Chromium: from Usage's recent requests to one request's
// attempts (deployment, outcome, latency), tokens, cost and logged bodies; the Attempts column
// counts attempts (a failed primary is not a fallback). Screenshots go to docs/screenshots.

const screenshots = fileURLToPath(new URL('../docs/screenshots/', import.meta.url));
const adminToken = 'sb-admin-test-token-5f9c2e7a1d3b';

describe.runIf(haveChromium)('dashboard request page in Chromium', () => {
  let double: OpenAiProviderDouble;
  let deployment: TestDeployment;
  let browser: Browser;
  let page: Page;
  let problems: string[];

  beforeAll(async () => {
    double = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
    deployment = await startDeployment('embedded', { openAiUrl: double.url });
    browser = await launchChromium();
    ({ page, problems } = await openPerson(browser, (text) => text.includes('404')));
    mkdirSync(screenshots, { recursive: true });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await deployment?.close();
    await double?.close();
  }, 30_000);

  it('opens a request from Usage and shows its attempts, figures and logged bodies', async () => {
    const logged = await createKey(deployment, { name: 'support bot' });
    const plain = await createKey(deployment, { name: 'batch jobs' });
    await adminRequest(deployment, 'PUT', `/admin/v1/keys/${logged.id}/payload_logging`, { enabled: true });
    double.script('alpha', { kind: 'error', status: 429, message: 'slow down' });
    double.script('beta', { kind: 'text', text: 'The capital of France is Paris.', usage: { prompt_tokens: 1200, completion_tokens: 300 } });
    const fellBack = await chat(deployment, logged.key, { model: 'svc/alpha', fallbacks: ['svc/beta'], messages: [{ role: 'user', content: 'What is the capital of France?' }] });
    expect(fellBack.status).toBe(200);
    const fellBackId = fellBack.headers.get('x-request-id')!;
    double.script('gamma', { kind: 'text', text: 'ok', usage: { prompt_tokens: 10, completion_tokens: 2 } });
    const simple = await chat(deployment, plain.key, { model: 'svc/gamma', messages: [{ role: 'user', content: 'ping' }] });
    const simpleId = simple.headers.get('x-request-id')!;

    await page.goto(`${deployment.url()}/dashboard/`);
    await page.getByLabel('Admin token').fill(adminToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();
    // One clock everywhere: the session's end is on the 24-hour clock like every other time.
    await expect(page.getByText(/^Session until \d\d:\d\d$/).count()).resolves.toBe(1);
    await page.getByRole('link', { name: 'Usage' }).click();
    await page.getByRole('heading', { name: 'Recent requests' }).waitFor();
    const header = page.getByRole('columnheader', { name: 'Attempts' });
    await header.waitFor();
    // The fallen-back request made 2 attempts; the plain one 1.
    const fellBackRow = page.getByRole('row').filter({ hasText: 'svc/beta' });
    await expect(fellBackRow.getByRole('cell').nth(4).innerText()).resolves.toMatch(/^2 \(svc\/alpha: rate limit → svc\/beta: success\)$/);
    await expect(page.getByRole('row').filter({ hasText: 'svc/gamma' }).getByRole('cell').nth(4).innerText()).resolves.toBe('1');

    await fellBackRow.getByRole('link').click();
    await page.getByRole('heading', { level: 1, name: 'Request' }).waitFor();
    expect(page.url()).toContain(`#/request?id=${fellBackId}`);
    const attempts = page.getByRole('table').filter({ has: page.getByRole('columnheader', { name: 'Deployment' }) });
    await attempts.waitFor();
    const rows = attempts.getByRole('row');
    await expect(rows.count()).resolves.toBe(3);
    await expect(rows.nth(1).innerText()).resolves.toMatch(/1\s+svc\/alpha\s+double\/alpha\s+rate limit\s+429\s+\d+ ms/);
    await expect(rows.nth(2).innerText()).resolves.toMatch(/2\s+svc\/beta\s+double\/beta\s+success\s+—\s+\d+ ms/);
    const summary = page.getByRole('region', { name: 'Request summary' });
    await expect(summary.innerText()).resolves.toContain('1 fallback');
    await expect(summary.innerText()).resolves.toContain('1,500');
    // svc/beta: $3 / $4 per million: 1200 * 3e-6 + 300 * 4e-6 = $0.0048.
    await expect(summary.innerText()).resolves.toContain('$0.0048');
    await page.getByRole('region', { name: 'Request body' }).getByText('What is the capital of France?').waitFor();
    await page.getByRole('region', { name: 'Response body' }).getByText('The capital of France is Paris.').waitFor();
    await page.screenshot({ path: join(screenshots, 'request.png'), fullPage: true });

    // A key without logging: the page says so instead of showing bodies.
    await page.goto(`${deployment.url()}/dashboard/#/request?id=${simpleId}`);
    await page.getByText('Not logged. Request logging is off for this key').waitFor();
    await expect(page.getByRole('region', { name: 'Request body' }).count()).resolves.toBe(0);
    await page.goto(`${deployment.url()}/dashboard/#/usage`);
    await page.getByRole('heading', { name: 'Recent requests' }).waitFor();
    // Chart legends away from the bars show the range ("all") and its total, not dashes.
    const legends = page.locator('.u-legend');
    await expect(legends.count()).resolves.toBe(3);
    for (const text of await legends.allInnerTexts()) {
      expect(text).not.toContain('—');
      expect(text).toMatch(/all/);
    }
    await page.screenshot({ path: join(screenshots, 'usage-attempts.png'), fullPage: true });

    // A disabled field looks disabled: Budget period without a budget is greyed out.
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('button', { name: 'Create key' }).first().click();
    const period = page.getByRole('dialog').getByLabel('Budget period');
    await expect(period.isDisabled()).resolves.toBe(true);
    const look = (element: Element) => { const style = getComputedStyle(element); return [style.backgroundColor, style.color, style.cursor]; };
    await expect(period.evaluate(look)).resolves.toEqual(['rgb(243, 244, 246)', 'rgb(156, 163, 175)', 'not-allowed']);
    await page.getByRole('dialog').getByLabel('Budget (USD)').fill('5');
    await expect(period.evaluate(look)).resolves.not.toEqual(['rgb(243, 244, 246)', 'rgb(156, 163, 175)', 'not-allowed']);
    await page.getByRole('dialog').getByLabel('Budget (USD)').fill('');
    await page.getByRole('dialog').screenshot({ path: join(screenshots, 'key-dialog-disabled-period.png') });
    expect(problems).toEqual([]);
  }, 60_000);

  it('shows latency and first-token percentiles, error rates, budget states and deployment health', async () => {
    const spender = await createKey(deployment, { name: 'spent out', budget_usd: 0.005, budget_period: 'daily' });
    const healthy = await createKey(deployment, { name: 'plenty left', budget_usd: 100 });
    // spent out: one answer of $0.0048 leaves less than the next request's reservation: exhausted once the second lands.
    double.script('delta', { kind: 'text', text: 'x', usage: { prompt_tokens: 100, completion_tokens: 500 } });
    for (let index = 0; index < 2; index++) await (await chat(deployment, spender.key, { model: 'svc/delta', max_tokens: 5, messages: [{ role: 'user', content: 'spend' }] })).text();
    // A stream for the first-token figures, and a deployment that fails every time.
    double.script('epsilon', { kind: 'text', chunks: ['a', 'b', 'c'], chunkDelayMs: 30 });
    let streamedId = '';
    for (let index = 0; index < 3; index++) {
      const streamed = await chat(deployment, healthy.key, { model: 'svc/epsilon', stream: true, messages: [{ role: 'user', content: 'go' }] });
      streamedId = streamed.headers.get('x-request-id')!;
      await streamed.text();
    }
    double.script('primary-east', { kind: 'error', status: 429, retryAfter: '60' });
    double.script('primary-west', { kind: 'error', status: 500 });
    expect((await chat(deployment, healthy.key, { model: 'svc/primary', messages: [{ role: 'user', content: 'fail' }] })).status).toBeGreaterThanOrEqual(500);

    await page.goto(`${deployment.url()}/dashboard/#/health`);
    await page.getByRole('heading', { level: 1, name: 'Health' }).waitFor();
    // (The streamed request's own page shows its attempt's time to first token.)
    const byModel = page.getByRole('table').filter({ has: page.getByRole('columnheader', { name: 'Requested model' }) });
    await byModel.waitFor();
    const epsilon = await byModel.getByRole('row').filter({ hasText: 'svc/epsilon' }).innerText();
    // 3 requests, no errors, first-token figures present (streams), in ms.
    expect(epsilon).toMatch(/svc\/epsilon\s+3\s+0\.0 %\s+\d[\d,]* ms\s+\d[\d,]* ms\s+\d[\d,]* ms\s+\d[\d,]* ms\s+\d[\d,]* ms/);
    expect(await byModel.getByRole('row').filter({ hasText: 'svc/primary' }).innerText()).toMatch(/svc\/primary\s+1\s+100\.0 %/);
    // Non-streamed requests have no first-token figure.
    expect(await byModel.getByRole('row').filter({ hasText: 'svc/delta' }).innerText()).toMatch(/—\s+—$/);
    const byKey = page.getByRole('table').filter({ has: page.getByRole('columnheader', { name: 'Error rate' }) }).filter({ hasText: 'plenty left' }).last();
    expect(await byKey.getByRole('row').filter({ hasText: 'plenty left' }).innerText()).toMatch(/plenty left\s+4\s+1\s+25\.0 %/);
    const budgets = page.getByRole('table').filter({ has: page.getByRole('columnheader', { name: 'Remaining' }) });
    expect(await budgets.getByRole('row').filter({ hasText: 'spent out' }).innerText()).toMatch(/spent out\s+\$0\.005 per day\s+\$0\.00[0-9]+\s+\$0\.00[0-9]*\s+(exhausted|near limit)/);
    expect(await budgets.getByRole('row').filter({ hasText: 'plenty left' }).innerText()).toMatch(/plenty left\s+\$100\.00 in total\s+\$0\.0[0-9]+\s+\$(99\.\d\d|100\.00)\s+ok/);
    const deployments = page.getByRole('table').filter({ has: page.getByRole('columnheader', { name: 'Last failure' }) });
    expect(await deployments.getByRole('row').filter({ hasText: 'lb-east/primary-east' }).innerText()).toMatch(/cooling down\s+1\s+1\s+rate limit, /);
    expect(await deployments.getByRole('row').filter({ hasText: 'double/epsilon' }).innerText()).toMatch(/in rotation\s+3\s+0\s+none/);
    // Chart legends and axis labels: full names, never a bare dash.
    for (const text of await page.locator('.u-legend').allInnerTexts()) expect(text).not.toContain('—');
    await page.screenshot({ path: join(screenshots, 'health.png'), fullPage: true });

    await page.goto(`${deployment.url()}/dashboard/#/request?id=${streamedId}`);
    const attempt = page.getByRole('table').filter({ has: page.getByRole('columnheader', { name: 'First token' }) }).getByRole('row').nth(1);
    // The double waits 30 ms before each chunk: the first token came after at least that.
    const [, firstToken] = /success\s+—\s+\d+ ms\s+(\d+) ms/.exec(await attempt.innerText())!;
    expect(Number(firstToken)).toBeGreaterThanOrEqual(25);
    expect(problems).toEqual([]);
  }, 60_000);
});
