/** Driving the dashboard in tests: sign in through its form, and post its forms from outside the browser. */
import assert from 'node:assert/strict';
import type { Browser, BrowserContext, BrowserContextOptions, Page } from 'playwright-core';

/** Signs `who` in through the dashboard's sign-in form, in a new browser context the caller closes. */
export async function signInToDashboard(
  browser: Browser,
  gatewayUrl: string,
  who: { email: string; password: string },
  options: BrowserContextOptions = {},
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext(options);
  const page = await context.newPage();
  await page.goto(`${gatewayUrl}/dashboard/login`);
  await page.fill('#email', who.email);
  await page.fill('#password', who.password);
  await Promise.all([page.waitForURL(/\/dashboard$/), page.click('button[type=submit]')]);
  return { context, page };
}

/** The browser's dashboard session cookie as a `cookie` header. */
export async function sessionCookie(context: BrowserContext, gatewayUrl: string): Promise<string> {
  const cookie = (await context.cookies(`${gatewayUrl}/dashboard`)).find((c) => c.name === 'adsmcp_session');
  assert.ok(cookie, 'the browser holds a session cookie');
  return `${cookie.name}=${cookie.value}`;
}

/** A form POST to the dashboard from outside the browser, on the dashboard's own origin. */
export function dashboardFormPost(
  gatewayUrl: string,
  path: string,
  cookie: string,
  form: Record<string, string>,
): Promise<Response> {
  return fetch(`${gatewayUrl}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      cookie,
      origin: new URL(gatewayUrl).origin,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams(form).toString(),
  });
}
