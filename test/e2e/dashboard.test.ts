/**
 * The dashboard as a person uses it: a real browser against the whole stack, signing in, reading
 * the overview, revoking a connection, reviewing a change prepared by an agent, and signing out.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { launchBrowser } from '@adsmcp/testkit/browser';
import {
  addPerson,
  sessionCookie as cookieOf,
  dashboardFormPost,
  signInToDashboard,
} from '@adsmcp/testkit/dashboard';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient, rawPost } from '@adsmcp/testkit/mcp-clients';
import type { SeedResult, Stack } from '@adsmcp/testkit/stack';
import type { Browser, BrowserContext, Page } from 'playwright-core';

let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
let agent: McpTestClient;
let browser: Browser;
let shots: string;
let ads: { id: string; status: string }[];
const contexts: BrowserContext[] = [];
let people = 0;

const SESSION_COOKIE = 'adsmcp_session';

/** A new person in the demo workspace, so that each test signs in as someone of its own. */
async function person(role: 'admin' | 'editor' | 'viewer'): Promise<{ email: string; password: string }> {
  people += 1;
  const email = `${role}-${people}@demo.example`;
  const password = `${role}-password-${people}`;
  return addPerson(stack, seed.workspaceId, role, email, password);
}

async function signIn(who: {
  email: string;
  password: string;
}): Promise<{ context: BrowserContext; page: Page }> {
  const { context, page } = await signInToDashboard(browser, stack.gatewayUrl, who);
  contexts.push(context);
  return { context, page };
}

const sessionCookie = (context: BrowserContext) => cookieOf(context, stack.gatewayUrl);

const formPost = (path: string, cookie: string, form: Record<string, string>) =>
  dashboardFormPost(stack.gatewayUrl, path, cookie, form);

async function createToken(name: string): Promise<{ token: string; credential_id: string }> {
  return JSON.parse(await stack.admin(['create-token', '--workspace', seed.workspaceId, '--name', name])) as {
    token: string;
    credential_id: string;
  };
}

/** The status of an MCP call made with `token`. */
async function mcpStatus(token: string): Promise<number> {
  const res = await rawPost(
    stack.mcpUrl,
    {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'ads_get_connection_context', arguments: {} },
    },
    { authorization: `Bearer ${token}` },
  );
  return res.status;
}

/** An agent prepares a change to an ad over MCP, with the demo token; each call takes another ad. */
async function prepareOverMcp(): Promise<{ change_id: string; digest: string }> {
  const ad = ads.shift();
  assert.ok(ad, 'an ad is left to change');
  const res = await agent.callTool('ads_update_ad', {
    account_id: seed.accounts[0]?.account_id,
    ad_id: ad.id,
    body: { name: 'Summer sale, reviewed by a person' },
  });
  assert.notEqual(res.isError, true, JSON.stringify(res.structuredContent));
  return res.structuredContent as { change_id: string; digest: string };
}

/** Waits for the page the browser lands on after submitting a form that redirects to `path`. */
async function submit(page: Page, click: () => Promise<void>, path: string): Promise<void> {
  await Promise.all([
    page.waitForResponse((r) => r.url() === `${stack.gatewayUrl}${path}` && r.request().method() === 'GET'),
    click(),
  ]);
  await page.waitForLoadState();
}

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '200' } });
  ({ stack, seed } = e2e);
  agent = await connectClient('v2-2026', stack.mcpUrl, seed.token);
  browser = await launchBrowser();
  shots = await mkdtemp(join(tmpdir(), 'adsmcp-dashboard-shots-'));
  const list = await agent.callTool('ads_list_ads', { account_id: seed.accounts[0]?.account_id, limit: 20 });
  ads = (list.structuredContent as { ads: typeof ads }).ads.filter((a) => a.status !== 'archived');
  assert.ok(ads.length >= 3, 'the seeded account has ads to change');
});

after(async () => {
  for (const c of contexts) await c.close().catch(() => undefined);
  await agent?.close();
  await browser?.close();
  await e2e?.stop();
  if (shots) await rm(shots, { recursive: true, force: true });
});

describe('signing in and out', () => {
  test('a wrong password shows "The email or password is not right." and starts no session', async () => {
    const context = await browser.newContext();
    contexts.push(context);
    const page = await context.newPage();
    await page.goto(`${stack.gatewayUrl}/dashboard/login`);
    await page.fill('#email', seed.dashboardUser);
    await page.fill('#password', 'not-the-password');
    await page.click('button[type=submit]');
    assert.equal(
      (await page.locator('[role=alert]').innerText()).trim(),
      'The email or password is not right.',
    );
    assert.deepEqual(
      (await context.cookies()).filter((c) => c.name === SESSION_COOKIE),
      [],
    );
    await page.goto(`${stack.gatewayUrl}/dashboard`);
    assert.match(page.url(), /\/dashboard\/login$/);
  });

  test('a page opened while signed out (a review link from an MCP client or a webhook) is where sign-in lands', async () => {
    const signedOut = await fetch(`${stack.gatewayUrl}/dashboard/changes?status=prepared`, {
      redirect: 'manual',
    });
    assert.equal(signedOut.status, 303);
    assert.equal(
      signedOut.headers.get('location'),
      `/dashboard/login?next=${encodeURIComponent('/dashboard/changes?status=prepared')}`,
    );
    const context = await browser.newContext();
    contexts.push(context);
    const page = await context.newPage();
    await page.goto(`${stack.gatewayUrl}/dashboard/changes?status=prepared`);
    assert.match(page.url(), /\/dashboard\/login\?next=/);
    await page.fill('#email', seed.dashboardUser);
    await page.fill('#password', seed.dashboardPassword as string);
    await Promise.all([
      page.waitForURL(/\/dashboard\/changes\?status=prepared$/),
      page.click('button[type=submit]'),
    ]);
    // A link that would leave the dashboard after sign-in is not followed: the overview is.
    const crafted = await fetch(
      `${stack.gatewayUrl}/dashboard/login?next=${encodeURIComponent('//evil.test/x')}`,
    );
    assert.doesNotMatch(await crafted.text(), /evil\.test/);
  });

  test('Sign out ends the session: the next visit to /dashboard goes to the sign-in page', async () => {
    const { context, page } = await signIn(await person('editor'));
    const cookie = await sessionCookie(context);
    await Promise.all([page.waitForURL(/\/dashboard\/login$/), page.click('header button[type=submit]')]);
    await page.goto(`${stack.gatewayUrl}/dashboard`);
    assert.match(page.url(), /\/dashboard\/login$/);
    // The session is gone on the server too, not only from the browser.
    const replayed = await fetch(`${stack.gatewayUrl}/dashboard`, {
      headers: { cookie },
      redirect: 'manual',
    });
    assert.equal(replayed.status, 303);
    assert.equal(replayed.headers.get('location'), '/dashboard/login');
  });

  test('a session cookie that is not validly percent-encoded counts as no session: sign-in, not a 503', async () => {
    // Such a cookie is never ours: another site on the same host, or a hand-edited one.
    for (const value of ['%', '%E0%A4%A', 'abc%zz']) {
      const cookie = `${SESSION_COOKIE}=${value}`;
      const overview = await fetch(`${stack.gatewayUrl}/dashboard`, {
        headers: { cookie },
        redirect: 'manual',
      });
      assert.equal(overview.status, 303, `${value}: ${await overview.text()}`);
      assert.equal(overview.headers.get('location'), '/dashboard/login');
      const change = await fetch(`${stack.gatewayUrl}/dashboard/changes`, {
        headers: { cookie },
        redirect: 'manual',
      });
      assert.equal(change.status, 303, value);
      const logout = await fetch(`${stack.gatewayUrl}/dashboard/logout`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie, origin: stack.gatewayUrl, 'content-type': 'application/x-www-form-urlencoded' },
        body: 'csrf=x',
      });
      assert.equal(logout.status, 403, value);
      assert.match(await logout.text(), /You are not signed in/);
    }
  });
});

describe('the overview', () => {
  test('lists the two demo ad accounts and the MCP connections, under a Content-Security-Policy', async () => {
    const { page } = await signIn(await person('admin'));
    const res = await page.goto(`${stack.gatewayUrl}/dashboard`);
    assert.match(res?.headers()['content-security-policy'] ?? '', /default-src 'none'/);
    const accounts = await page
      .locator('section', { has: page.locator('h2', { hasText: 'Ad accounts' }) })
      .locator('tbody tr')
      .allInnerTexts();
    assert.equal(accounts.length, 2);
    for (const a of seed.accounts) {
      assert.ok(
        accounts.some((row) => row.includes(a.name) && row.includes(a.account_id)),
        `${a.name} is listed`,
      );
    }
    const demo = await page.locator(`tr[data-credential="${seed.credentialId}"]`).innerText();
    assert.match(demo, new RegExp(seed.dashboardUser.replace(/\./g, '\\.')));
    assert.match(demo, /\bactive\b/);
  });

  test('revoking a connection marks it revoked, removes its Revoke button, and its token then gets 401', async () => {
    const created = await createToken('Revoked in the browser');
    assert.equal(await mcpStatus(created.token), 200, 'the token works before it is revoked');
    const { page } = await signIn(await person('admin'));
    const row = page.locator(`tr[data-credential="${created.credential_id}"]`);
    assert.equal((await row.locator('.state').innerText()).trim(), 'active');
    await submit(page, () => row.getByRole('button', { name: 'Revoke' }).click(), '/dashboard');
    assert.match(await row.locator('.state').innerText(), /^revoked \S/);
    assert.ok(
      await row.locator('.state time[datetime]').count(),
      'the time of revocation, in the viewer’s zone',
    );
    assert.equal(await row.getAttribute('class'), 'inactive');
    assert.equal(await row.getByRole('button').count(), 0);
    assert.equal(await mcpStatus(created.token), 401);
  });

  test('a form POST without the right CSRF token is refused with 403 and changes nothing', async () => {
    const created = await createToken('Kept despite a forged form');
    const { context, page } = await signIn(await person('admin'));
    const cookie = await sessionCookie(context);
    const path = `/dashboard/credentials/${created.credential_id}/revoke`;
    for (const form of [{}, { csrf: 'not-the-token' }] as Record<string, string>[]) {
      const res = await formPost(path, cookie, form);
      assert.equal(res.status, 403, JSON.stringify(form));
      assert.match(await res.text(), /This form has expired/);
    }
    assert.equal(await mcpStatus(created.token), 200, 'the connection was not revoked');
    // The same form with the session's own token goes through: the refusals were for the token alone.
    const csrf = (await page.locator('input[name=csrf]').first().getAttribute('value')) ?? '';
    assert.equal((await formPost(path, cookie, { csrf })).status, 303);
    assert.equal(await mcpStatus(created.token), 401);
  });
});

describe('reviewing a change', () => {
  test('the review page names who prepared the change by email and "through an MCP client", never by credential id', async () => {
    const change = await prepareOverMcp();
    const { page } = await signIn(await person('editor'));
    await page.goto(`${stack.gatewayUrl}/dashboard/changes/${change.change_id}`);
    const preparedBy = (await page.locator('#prepared-by').innerText()).trim();
    assert.match(preparedBy, / by (.+)$/);
    assert.equal(/ by (.+)$/.exec(preparedBy)?.[1], `${seed.dashboardUser}, through an MCP client`);
    assert.ok(!(await page.locator('body').innerText()).includes(seed.credentialId));
    // The recorded text stays at hand for whoever needs it.
    const title = (await page.locator('#prepared-by .actor').getAttribute('title')) ?? '';
    assert.match(title, / via mcp$/, 'the title keeps the channel');
    assert.ok(!title.includes('('), 'and not the credential');

    const shot = join(shots, 'review-page.png');
    await page.screenshot({ path: shot, fullPage: true });
    assert.ok((await stat(shot)).size > 0, 'the screenshot was written');

    await page.goto(`${stack.gatewayUrl}/dashboard/changes`);
    const listed = await page.locator(`tr[data-change="${change.change_id}"]`).innerText();
    assert.ok(listed.includes(`${seed.dashboardUser}, through an MCP client`), listed);
    assert.ok(!(await page.locator('body').innerText()).includes(seed.credentialId));
  });

  test('approving in the browser shows the approver by email and "in the dashboard"', async () => {
    const change = await prepareOverMcp();
    const editor = await person('editor');
    const { page } = await signIn(editor);
    await page.goto(`${stack.gatewayUrl}/dashboard/changes/${change.change_id}`);
    await submit(page, () => page.click('#approve'), `/dashboard/changes/${change.change_id}`);
    assert.equal((await page.locator('#status').innerText()).trim(), 'approved');
    assert.match(
      await page.locator('#approved-by').innerText(),
      new RegExp(` by ${editor.email}, in the dashboard$`),
    );
    assert.ok(!(await page.locator('body').innerText()).includes('dashboard:'));
  });

  test('a viewer sees the change without Approve or Reject, and a forged approval says "Your role cannot approve changes"', async () => {
    const change = await prepareOverMcp();
    const { context, page } = await signIn(await person('viewer'));
    await page.goto(`${stack.gatewayUrl}/dashboard/changes/${change.change_id}`);
    assert.equal((await page.locator('#status').innerText()).trim(), 'prepared');
    assert.equal(await page.getByRole('button', { name: 'Approve' }).count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Reject' }).count(), 0);

    const csrf = (await page.locator('input[name=csrf]').first().getAttribute('value')) ?? '';
    const res = await formPost(
      `/dashboard/changes/${change.change_id}/approve`,
      await sessionCookie(context),
      {
        csrf,
        digest: change.digest,
      },
    );
    assert.equal(res.status, 403);
    assert.match(await res.text(), /role="alert">Your role cannot approve changes\.</);
    const after = await agent.callTool('ads_get_change', { change_id: change.change_id });
    assert.equal((after.structuredContent as { status: string }).status, 'prepared');
  });
});

describe('origins and form checks', () => {
  test('opened at localhost while the server says 127.0.0.1, the dashboard signs in and its forms work', async () => {
    const created = await createToken('Revoked from localhost');
    const who = await person('admin');
    const local = stack.gatewayUrl.replace('127.0.0.1', 'localhost');
    const context = await browser.newContext();
    contexts.push(context);
    const page = await context.newPage();
    await page.goto(`${local}/dashboard/login`);
    await page.fill('#email', who.email);
    await page.fill('#password', who.password);
    await Promise.all([page.waitForURL(/\/dashboard$/), page.click('button[type=submit]')]);
    const row = page.locator(`tr[data-credential="${created.credential_id}"]`);
    await Promise.all([
      page.waitForResponse((r) => r.url() === `${local}/dashboard` && r.request().method() === 'GET'),
      row.getByRole('button', { name: 'Revoke' }).click(),
    ]);
    assert.match(await row.locator('.state').innerText(), /^revoked \S/);
    assert.ok(
      await row.locator('.state time[datetime]').count(),
      'the time of revocation, in the viewer’s zone',
    );
    assert.equal(await mcpStatus(created.token), 401);
  });

  test('a form posted from [::1] on the same port passes the origin check', async () => {
    const created = await createToken('Revoked from [::1]');
    const { context, page } = await signIn(await person('admin'));
    const csrf = (await page.locator('input[name=csrf]').first().getAttribute('value')) ?? '';
    const res = await fetch(`${stack.gatewayUrl}/dashboard/credentials/${created.credential_id}/revoke`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        cookie: await sessionCookie(context),
        origin: `http://[::1]:${new URL(stack.gatewayUrl).port}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ csrf }).toString(),
    });
    assert.equal(res.status, 303);
    assert.equal(await mcpStatus(created.token), 401);
  });

  test('a form refused by the origin check says so, and one refused by the CSRF check says so', async () => {
    const created = await createToken('Kept despite foreign forms');
    const { context, page } = await signIn(await person('admin'));
    const cookie = await sessionCookie(context);
    const csrf = (await page.locator('input[name=csrf]').first().getAttribute('value')) ?? '';
    const path = `/dashboard/credentials/${created.credential_id}/revoke`;
    const foreign = await fetch(`${stack.gatewayUrl}${path}`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        cookie,
        origin: 'https://evil.example',
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ csrf }).toString(),
    });
    assert.equal(foreign.status, 403);
    const foreignText = await foreign.text();
    assert.match(foreignText, /refused by the origin check/);
    assert.match(foreignText, /sent from https:\/\/evil\.example/);
    const forged = await formPost(path, cookie, { csrf: 'not-the-token' });
    assert.equal(forged.status, 403);
    const forgedText = await forged.text();
    assert.match(forgedText, /the CSRF check failed/);
    assert.doesNotMatch(forgedText, /origin check/);
    assert.equal(await mcpStatus(created.token), 200, 'the connection was not revoked');
  });

  test('sign-in posted from another site is refused by the origin check and starts no session', async () => {
    const who = await person('editor');
    const res = await fetch(`${stack.gatewayUrl}/dashboard/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { origin: 'https://evil.example', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ email: who.email, password: who.password }).toString(),
    });
    assert.equal(res.status, 403);
    assert.equal(res.headers.get('set-cookie'), null);
    assert.match(await res.text(), /refused by the origin check/);
    // The same form from our own origin signs in.
    const own = await fetch(`${stack.gatewayUrl}/dashboard/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        origin: new URL(stack.gatewayUrl).origin,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ email: who.email, password: who.password }).toString(),
    });
    assert.equal(own.status, 303);
    assert.match(own.headers.get('set-cookie') ?? '', new RegExp(`^${SESSION_COOKIE}=`));
  });
});

describe('sign-in attempts', () => {
  const signInWith = (email: string, password: string) =>
    fetch(`${stack.gatewayUrl}/dashboard/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        origin: new URL(stack.gatewayUrl).origin,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ email, password }).toString(),
    });

  test('a person who signs in eight times in a minute is signed in every time: only failed attempts are limited', async () => {
    const who = await person('editor');
    for (let i = 0; i < 8; i++) {
      const res = await signInWith(who.email, who.password);
      assert.equal(res.status, 303, `sign-in ${i + 1}`);
      await res.text();
    }
  });

  test('the sixth wrong password in a minute is refused with 429 and Retry-After, before the password is checked', async () => {
    const who = await person('viewer');
    for (let i = 0; i < 5; i++) {
      const res = await signInWith(who.email, 'not-the-password');
      assert.equal(res.status, 401, `attempt ${i + 1}`);
      await res.text();
    }
    const sixth = await signInWith(who.email, 'not-the-password');
    assert.equal(sixth.status, 429);
    assert.ok(Number(sixth.headers.get('retry-after')) >= 1);
    assert.match(await sixth.text(), /Too many attempts/);
  });
});

describe('bad form input is named, never a server error', () => {
  test('a malformed connection id on the overview’s revoke route gets 404 "no such connection", like an unknown one', async () => {
    const { context, page } = await signIn(await person('admin'));
    const cookie = await sessionCookie(context);
    const csrf = (await page.locator('input[name=csrf]').first().getAttribute('value')) ?? '';
    for (const id of ['-'.repeat(36), '0'.repeat(36), '00000000-0000-4000-8000-000000000000']) {
      const res = await formPost(`/dashboard/credentials/${id}/revoke`, cookie, { csrf });
      assert.equal(res.status, 404, id);
      assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
      assert.match(await res.text(), /There is no such connection in this workspace\./);
    }
  });

  test('the overview’s revoke follows the connections page’s rule: an editor revokes their own, not another’s', async () => {
    const editor = await person('editor');
    const own = JSON.parse(
      await stack.admin([
        'create-token',
        '--workspace',
        seed.workspaceId,
        '--user',
        editor.email,
        '--name',
        'Editor’s own',
      ]),
    ) as { token: string; credential_id: string };
    const others = await createToken('Someone else’s');
    const { context, page } = await signIn(editor);
    // Their own connection has its Revoke button on the overview; another's has none.
    const ownRow = page.locator(`tr[data-credential="${own.credential_id}"]`);
    assert.equal(await ownRow.getByRole('button', { name: 'Revoke' }).count(), 1);
    assert.equal(
      await page.locator(`tr[data-credential="${others.credential_id}"]`).getByRole('button').count(),
      0,
    );
    const csrf = (await page.locator('input[name=csrf]').first().getAttribute('value')) ?? '';
    const cookie = await sessionCookie(context);
    const refused = await formPost(`/dashboard/credentials/${others.credential_id}/revoke`, cookie, { csrf });
    assert.equal(refused.status, 403);
    assert.match(await refused.text(), /Only a workspace admin can revoke another person’s connection\./);
    assert.equal(await mcpStatus(others.token), 200, 'another’s connection keeps working');
    await submit(page, () => ownRow.getByRole('button', { name: 'Revoke' }).click(), '/dashboard');
    assert.match(await ownRow.locator('.state').innerText(), /^revoked/);
    assert.equal(await mcpStatus(own.token), 401);
  });

  test('an id in a form’s path that is not a UUID, or names nothing, gets the page’s 404: revert, a pending standard change, a webhook', async () => {
    const { context, page } = await signIn(await person('admin'));
    const cookie = await sessionCookie(context);
    const csrf = (await page.locator('input[name=csrf]').first().getAttribute('value')) ?? '';
    const acct = seed.accounts[0]?.account_id;
    for (const id of ['x', '00000000-0000-4000-8000-000000000000']) {
      for (const [path, message] of [
        [`/dashboard/changes/${id}/revert`, /No such change in this workspace\./],
        [`/dashboard/accounts/${acct}/standard-changes/${id}/confirm`, /No such pending standard change/],
        [`/dashboard/webhooks/${id}/delete`, /There is no such webhook in this workspace\./],
      ] as const) {
        const res = await formPost(path, cookie, { csrf, reason: 'r' });
        assert.equal(res.status, 404, path);
        assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
        assert.match(await res.text(), message, path);
      }
    }
  });

  test('a NUL character in a form field or a query value gets 400 naming the field, before any database reads it', async () => {
    // Signed out: the sign-in form.
    const signInRes = await formPost('/dashboard/login', '', {
      email: 'a\u0000@demo.example',
      password: 'x',
    });
    assert.equal(signInRes.status, 400);
    assert.match(signInRes.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(await signInRes.text(), /email must not contain the character U\+0000 \(NUL\)/);
    // Signed in: a list's filter.
    const { context } = await signIn(await person('admin'));
    const res = await fetch(`${stack.gatewayUrl}/dashboard/connections?q=a%00b`, {
      headers: { cookie: await sessionCookie(context) },
      redirect: 'manual',
    });
    assert.equal(res.status, 400);
    assert.match(await res.text(), /q must not contain the character U\+0000 \(NUL\)/);
  });

  test('a form posted as multipart gets a 415 page naming the form encoding, not a JSON-RPC error', async () => {
    const { context, page } = await signIn(await person('admin'));
    const csrf = (await page.locator('input[name=csrf]').first().getAttribute('value')) ?? '';
    const created = await createToken('Kept: posted as multipart');
    for (const [path, form] of [
      [`/dashboard/credentials/${created.credential_id}/revoke`, { csrf }],
      ['/dashboard/login', { email: 'a@demo.example', password: 'b' }],
    ] as const) {
      const body = new FormData();
      for (const [k, v] of Object.entries(form)) body.set(k, v);
      const res = await fetch(`${stack.gatewayUrl}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie: await sessionCookie(context), origin: stack.gatewayUrl },
        body,
      });
      assert.equal(res.status, 415, path);
      assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
      const text = await res.text();
      assert.match(text, /must be sent as application\/x-www-form-urlencoded/);
      assert.match(text, /not multipart\/form-data/);
      assert.ok(!text.includes('jsonrpc'), text);
    }
    assert.equal(await mcpStatus(created.token), 200, 'nothing was revoked');
  });

  test('rejecting with an empty reason gets 400 naming the reason; the field has no UTF-16 maxlength and a reason of 2000 emoji is taken', async () => {
    const change = await prepareOverMcp();
    const { context, page } = await signIn(await person('editor'));
    await page.goto(`${stack.gatewayUrl}/dashboard/changes/${change.change_id}`);
    assert.equal(
      await page.locator('#reason').getAttribute('maxlength'),
      null,
      'browsers count UTF-16 units',
    );
    const csrf = (await page.locator('input[name=csrf]').first().getAttribute('value')) ?? '';
    const cookie = await sessionCookie(context);
    const empty = await formPost(`/dashboard/changes/${change.change_id}/reject`, cookie, {
      csrf,
      reason: '  ',
    });
    assert.equal(empty.status, 400);
    assert.match(await empty.text(), /role="alert">reason must be 1 to 2000 characters</);
    // Too long by the server's rule: the page says so (the browser did not stop it).
    await page.fill('#reason', '🙂'.repeat(2001));
    await Promise.all([page.waitForResponse((r) => r.url().endsWith('/reject')), page.click('#reject')]);
    assert.match(await page.locator('body').innerText(), /reason must be 1 to 2000 characters/);
    assert.equal(
      await page.inputValue('#reason'),
      '🙂'.repeat(2001),
      'the refused reason is still in its field',
    );
    await page.fill('#reason', '🙂'.repeat(2000));
    await submit(page, () => page.click('#reject'), `/dashboard/changes/${change.change_id}`);
    assert.equal((await page.locator('#status').innerText()).trim(), 'rejected');
  });

  test('sign-in takes as long for an unknown email as for a member’s (the time does not tell who has an account)', async () => {
    const member = await person('viewer');
    const time = async (email: string) => {
      const started = performance.now();
      const res = await fetch(`${stack.gatewayUrl}/dashboard/login`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: stack.gatewayUrl },
        body: new URLSearchParams({ email, password: 'not-the-password' }).toString(),
      });
      assert.equal(res.status, 401);
      await res.text();
      return performance.now() - started;
    };
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
    const known: number[] = [];
    const unknown: number[] = [];
    // Five tries a minute per email: each unknown try uses an email of its own.
    for (let i = 0; i < 5; i++) {
      known.push(await time(member.email));
      unknown.push(await time(`nobody-${i}-${Date.now()}@demo.example`));
    }
    // Before the dummy hash: about 2 ms against 60 ms.
    assert.ok(
      median(unknown) >= median(known) / 3,
      `unknown ${median(unknown).toFixed(1)} ms, member ${median(known).toFixed(1)} ms`,
    );
  });
});
