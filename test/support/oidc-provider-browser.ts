import type { Page } from 'playwright-core';
import type { TestUser } from './oidc-provider.js';

// The steps a person takes in Chromium through the identity provider's sign-in and consent forms,
// for the single sign-on tests (the browser itself: chromium.ts).

export { chromiumPath, haveChromium, launchChromium, openPerson, type Person } from './chromium.js';

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
