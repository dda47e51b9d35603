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

/** Someone who signs in to the dashboard, as `addPerson` made them. */
export interface DashboardPerson {
  email: string;
  password: string;
  /** Their user id, as the admin command printed it. */
  id: string;
}

/** Adds a person with `role` to a workspace through the admin command, so they can sign in. */
export async function addPerson(
  stack: { admin(args: string[]): Promise<string> },
  workspaceId: string,
  role: 'admin' | 'editor' | 'viewer',
  email: string,
  password: string,
): Promise<DashboardPerson> {
  const args = ['add-user', '--workspace', workspaceId, '--email', email, '--password', password];
  const out = JSON.parse(await stack.admin([...args, '--role', role])) as { user_id: string };
  return { email, password, id: out.user_id };
}
