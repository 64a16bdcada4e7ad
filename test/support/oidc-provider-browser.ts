import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { TestUser } from './oidc-provider.js';

// Chromium for the single sign-on tests: one browser, a fresh context (its own cookies, so its own
// sessions at the gateway and at the identity provider) per person, and the steps a person takes
// through the provider's sign-in and consent forms.

export const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const haveChromium = existsSync(chromiumPath);

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath, headless: true, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
}

export interface Person {
  context: BrowserContext;
  page: Page;
  /** Console errors and page errors seen so far. */
  problems: string[];
}

export async function openPerson(browser: Browser): Promise<Person> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(message.text());
  });
  page.on('pageerror', (error) => problems.push(error.message));
  return { context, page, problems };
}

/**
 * From the dashboard's sign-in page through the provider's forms and back. Ends on the dashboard
 * when the gateway accepts the person, or on its refusal page when it does not.
 */
export async function signInWithSso(page: Page, dashboardUrl: string, user: TestUser): Promise<void> {
  await page.goto(dashboardUrl);
  await page.getByRole('link', { name: 'Sign in with single sign-on' }).click();
  await page.getByRole('heading', { name: 'Sign in to the test identity provider' }).waitFor();
  await page.getByLabel('Email').fill(user.email);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Allow' }).click();
  await page.waitForURL((url) => url.pathname.startsWith('/dashboard/'));
}

/** The session's CSRF token, read the way the dashboard's own script reads it. */
export function csrfTokenOf(page: Page): Promise<string> {
  return page.evaluate(async () => ((await (await fetch('api/session')).json()) as { csrf_token: string }).csrf_token);
}

/** A call from inside the signed-in page (its cookie, its origin), as a script on the page could make it. */
export function callFromPage(page: Page, method: string, path: string, body?: unknown, csrf?: string): Promise<{ status: number; body: { error?: { code: string } } & Record<string, unknown> }> {
  return page.evaluate(async ({ method, path, body, csrf }) => {
    const headers: Record<string, string> = {};
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (csrf) headers['x-csrf-token'] = csrf;
    const response = await fetch(`api${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: response.status, body: await response.json() };
  }, { method, path, body, csrf });
}
