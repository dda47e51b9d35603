/**
 * The dashboard's workspace pages in a real browser against the whole stack: connections (and
 * revoking one), members and roles, features, ad accounts and the audit log; times shown in the
 * viewer's zone; and no page wider than the window, even with a 200-character connection name.
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
import pg from 'pg';
import type { Browser, BrowserContext, Page } from 'playwright-core';

let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
let agent: McpTestClient;
let browser: Browser;
let shots: string;
const contexts: BrowserContext[] = [];
let people = 0;

/** A connection name of exactly 200 characters with no place to break a line. */
const LONG_NAME = `Long-${'ConnectionNameWithoutSpaces'.repeat(8)}`.slice(0, 200);

type Person = { email: string; password: string; id: string };

async function userId(email: string): Promise<string> {
  const c = new pg.Client({ connectionString: e2e.db.url });
  await c.connect();
  try {
    const { rows } = await c.query<{ id: string }>('SELECT id FROM gateway.users WHERE email = $1', [email]);
    assert.ok(rows[0], `${email} exists`);
    return rows[0].id;
  } finally {
    await c.end();
  }
}

/** A new person in the demo workspace, so that each test signs in as someone of its own. */
async function person(role: 'admin' | 'editor' | 'viewer', workspace = seed.workspaceId): Promise<Person> {
  people += 1;
  const email = `pages-${role}-${people}@demo.example`;
  const password = `${role}-password-${people}`;
  return addPerson(stack, workspace, role, email, password);
}

async function signIn(
  who: { email: string; password: string },
  options: { timezoneId?: string } = {},
): Promise<{ context: BrowserContext; page: Page }> {
  const { context, page } = await signInToDashboard(browser, stack.gatewayUrl, who, options);
  contexts.push(context);
  return { context, page };
}

const sessionCookie = (context: BrowserContext) => cookieOf(context, stack.gatewayUrl);

const formPost = (path: string, cookie: string, form: Record<string, string>) =>
  dashboardFormPost(stack.gatewayUrl, path, cookie, form);

async function createToken(
  name: string,
  user?: string,
  workspace = seed.workspaceId,
): Promise<{ token: string; credential_id: string }> {
  const args = ['create-token', '--workspace', workspace, '--name', name];
  if (user) args.push('--user', user);
  return JSON.parse(await stack.admin(args)) as { token: string; credential_id: string };
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

async function submit(page: Page, click: () => Promise<void>, path: string): Promise<void> {
  await Promise.all([
    page.waitForResponse(
      (r) => r.url().startsWith(`${stack.gatewayUrl}${path}`) && r.request().method() === 'GET',
    ),
    click(),
  ]);
  await page.waitForLoadState();
}

/**
 * Saves a full-page screenshot and asserts that nothing on the page is wider than the window: the
 * elements (and the document) that scroll sideways, if any, are named in the failure.
 */
async function assertNoOverflow(page: Page, name: string): Promise<void> {
  const shot = join(shots, `${name}.png`);
  await page.screenshot({ path: shot, fullPage: true });
  assert.ok((await stat(shot)).size > 0, `the screenshot ${shot} was written`);
  // A string, run in the page: the test's own TypeScript has no DOM types.
  const wide = (await page.evaluate(`(() => {
    const width = document.documentElement.clientWidth;
    return [...document.querySelectorAll('*')]
      .filter((el) => el.scrollWidth > width || el.getBoundingClientRect().right > width + 1)
      .map((el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + ' ' + el.scrollWidth + 'px > ' + width + 'px');
  })()`)) as string[];
  assert.deepEqual(wide, [], `elements wider than the window on ${name} (screenshot ${shot})`);
}

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '200' } });
  ({ stack, seed } = e2e);
  agent = await connectClient('v2-2026', stack.mcpUrl, seed.token);
  browser = await launchBrowser();
  shots = await mkdtemp(join(tmpdir(), 'adsmcp-dashboard-pages-shots-'));
});

after(async () => {
  for (const c of contexts) await c.close().catch(() => undefined);
  await agent?.close();
  await browser?.close();
  await e2e?.stop();
  if (shots) await rm(shots, { recursive: true, force: true });
});

describe('connections', () => {
  test('an admin revokes a connection on the connections page and its token then gets 401', async () => {
    const created = await createToken('Revoked on the connections page');
    assert.equal(await mcpStatus(created.token), 200, 'the token works before it is revoked');
    const { page } = await signIn(await person('admin'));
    await page.goto(`${stack.gatewayUrl}/dashboard/connections?q=${encodeURIComponent('connections page')}`);
    const row = page.locator(`tr[data-connection="${created.credential_id}"]`);
    assert.equal((await row.locator('.name').innerText()).trim(), 'Revoked on the connections page');
    assert.equal((await row.locator('.state').innerText()).trim(), 'active');
    assert.equal(await page.locator('#connections tbody tr').count(), 1, 'the filter keeps only the match');
    await submit(page, () => row.getByRole('button', { name: 'Revoke' }).click(), '/dashboard/connections');
    await page.goto(`${stack.gatewayUrl}/dashboard/connections?state=revoked`);
    assert.match(await row.locator('.state').innerText(), /^revoked /);
    assert.equal(await row.getByRole('button').count(), 0);
    assert.equal(await mcpStatus(created.token), 401);
  });

  test('an editor revokes their own connection but not another person’s (403, and it keeps working)', async () => {
    const editor = await person('editor');
    const own = await createToken('The editor’s own client', editor.email);
    const others = await createToken('Someone else’s client');
    const { context, page } = await signIn(editor);
    await page.goto(`${stack.gatewayUrl}/dashboard/connections`);
    assert.equal(await page.locator(`tr[data-connection="${others.credential_id}"] button`).count(), 0);
    const csrf = (await page.locator('input[name=csrf]').first().getAttribute('value')) ?? '';
    const refused = await formPost(
      `/dashboard/connections/${others.credential_id}/revoke`,
      await sessionCookie(context),
      {
        csrf,
      },
    );
    assert.equal(refused.status, 403);
    assert.match(await refused.text(), /Only a workspace admin can revoke another person’s connection/);
    assert.equal(await mcpStatus(others.token), 200);
    const row = page.locator(`tr[data-connection="${own.credential_id}"]`);
    await submit(page, () => row.getByRole('button', { name: 'Revoke' }).click(), '/dashboard/connections');
    assert.equal(await mcpStatus(own.token), 401);
  });

  test('a 200-character connection name does not make the connections or audit page wider than the window', async () => {
    const created = await createToken(LONG_NAME);
    const { page } = await signIn(await person('admin'));
    await page.goto(`${stack.gatewayUrl}/dashboard/connections`);
    const name = await page.locator(`tr[data-connection="${created.credential_id}"] .name`).innerText();
    assert.equal(name.trim(), LONG_NAME);
    await assertNoOverflow(page, 'connections-long-name');
    await page.goto(
      `${stack.gatewayUrl}/dashboard/audit?object=${encodeURIComponent(LONG_NAME.slice(0, 60))}`,
    );
    assert.ok(
      (await page.locator('#audit tbody tr').count()) >= 1,
      'the token’s creation is in the audit log',
    );
    await assertNoOverflow(page, 'audit-long-name');
    await page.setViewportSize({ width: 800, height: 700 });
    await page.goto(`${stack.gatewayUrl}/dashboard/connections`);
    await assertNoOverflow(page, 'connections-long-name-narrow');
  });
});

describe('members and roles', () => {
  test('an admin changes an editor to viewer; the page shows the new role', async () => {
    const editor = await person('editor');
    const { page } = await signIn(await person('admin'));
    await page.goto(`${stack.gatewayUrl}/dashboard/members`);
    const row = page.locator(`tr[data-member="${editor.id}"]`);
    assert.equal(await row.getAttribute('data-role'), 'editor');
    await row.locator('select[name=role]').selectOption('viewer');
    await submit(page, () => row.getByRole('button', { name: 'Change role' }).click(), '/dashboard/members');
    assert.equal(await row.getAttribute('data-role'), 'viewer');
    assert.equal(await row.locator('select[name=role]').inputValue(), 'viewer');
  });

  test('the last admin cannot be demoted (409, with the reason), and a wrong role is named (400)', async () => {
    const { workspace_id } = JSON.parse(
      await stack.admin([
        'create-workspace',
        '--name',
        'One admin only',
        '--admin-email',
        'only-admin@one.example',
        '--admin-password',
        'only-admin-password',
      ]),
    ) as { workspace_id: string };
    const admin = { email: 'only-admin@one.example', password: 'only-admin-password' };
    const id = await userId(admin.email);
    const { context, page } = await signIn(admin);
    await page.goto(`${stack.gatewayUrl}/dashboard/members`);
    const row = page.locator(`tr[data-member="${id}"]`);
    await row.locator('select[name=role]').selectOption('editor');
    await row.getByRole('button', { name: 'Change role' }).click();
    await page.waitForLoadState();
    assert.match(await page.locator('[role=alert]').innerText(), /last admin/);
    await page.goto(`${stack.gatewayUrl}/dashboard/members`);
    assert.equal(await row.getAttribute('data-role'), 'admin');
    const csrf = (await page.locator('input[name=csrf]').first().getAttribute('value')) ?? '';
    const wrong = await formPost(`/dashboard/members/${id}/role`, await sessionCookie(context), {
      csrf,
      role: 'owner',
    });
    assert.equal(wrong.status, 400);
    assert.match(await wrong.text(), /role must be one of admin, editor, viewer/);
    // A second admin makes the demotion possible.
    const other = await person('editor', workspace_id);
    await page.goto(`${stack.gatewayUrl}/dashboard/members`);
    const otherRow = page.locator(`tr[data-member="${other.id}"]`);
    await otherRow.locator('select[name=role]').selectOption('admin');
    await submit(
      page,
      () => otherRow.getByRole('button', { name: 'Change role' }).click(),
      '/dashboard/members',
    );
    await row.locator('select[name=role]').selectOption('editor');
    await submit(page, () => row.getByRole('button', { name: 'Change role' }).click(), '/dashboard/members');
    assert.equal(await row.getAttribute('data-role'), 'editor');
    assert.equal(await page.locator('select[name=role]').count(), 0, 'an editor is shown no role forms');
  });
});

describe('features and ad accounts', () => {
  test('a workspace admin sees the features read only; an editor is refused', async () => {
    const { page } = await signIn(await person('admin'));
    await page.goto(`${stack.gatewayUrl}/dashboard/features`);
    assert.equal((await page.locator('tr[data-feature="optimizer"] .state').innerText()).trim(), 'on');
    assert.match(await page.locator('#features-read-only').innerText(), /enable-feature/);
    assert.equal(await page.locator('main form').count(), 0, 'nothing to submit');
    const editor = await signIn(await person('editor'));
    const res = await editor.page.goto(`${stack.gatewayUrl}/dashboard/features`);
    assert.equal(res?.status(), 403);
  });

  test('the ad accounts page lists each account with its currency, time zone and write permission', async () => {
    const { page } = await signIn(await person('viewer'));
    await page.goto(`${stack.gatewayUrl}/dashboard/accounts`);
    for (const a of seed.accounts) {
      const row = await page.locator(`tr[data-account="${a.account_id}"]`).innerText();
      assert.ok(row.includes(a.name) && row.includes(a.currency), row);
    }
    assert.equal(await page.locator('#accounts tbody tr').count(), seed.accounts.length);
    assert.match(await page.locator('#accounts tbody tr .writes').first().innerText(), /allowed|read only/);
  });
});

describe('the audit log', () => {
  test('shows a prepare and a dashboard approval with who, the connection by name and the account by name', async () => {
    const account = seed.accounts[0];
    assert.ok(account);
    const list = await agent.callTool('ads_list_ads', { account_id: account.account_id, limit: 20 });
    const ad = (list.structuredContent as { ads: { id: string; status: string }[] }).ads.find(
      (a) => a.status !== 'archived',
    );
    assert.ok(ad);
    const prepared = await agent.callTool('ads_update_ad', {
      account_id: account.account_id,
      ad_id: ad.id,
      body: { name: 'Renamed for the audit log' },
    });
    assert.notEqual(prepared.isError, true, JSON.stringify(prepared.structuredContent));
    const { change_id, digest } = prepared.structuredContent as { change_id: string; digest: string };
    const admin = await person('admin');
    const { context, page } = await signIn(admin, { timezoneId: 'Asia/Tokyo' });
    const csrf = (await page.locator('input[name=csrf]').first().getAttribute('value')) ?? '';
    const approved = await formPost(`/dashboard/changes/${change_id}/approve`, await sessionCookie(context), {
      csrf,
      digest,
    });
    assert.equal(approved.status, 303);

    await page.goto(`${stack.gatewayUrl}/dashboard/audit?object=${change_id}`);
    const rows = page.locator('#audit tbody tr');
    const texts = await rows.allInnerTexts();
    const prepare = texts.find((t) => t.includes('change prepared'));
    const approval = texts.find((t) => t.includes('change approved'));
    assert.ok(prepare && approval, texts.join('\n'));
    assert.ok(prepare.includes(`${seed.dashboardUser}, through an MCP client`), prepare);
    assert.ok(prepare.includes(account.name), 'the account is named');
    assert.ok(approval.includes(`${admin.email}, in the dashboard`), approval);
    const connection = await page
      .locator('#audit tbody tr', { hasText: 'change prepared' })
      .locator('.connection')
      .innerText();
    assert.ok(connection.trim().length > 0, 'the connection is named');
    const body = await page.content();
    assert.ok(!body.includes(seed.credentialId), 'no credential id');
    assert.ok(!body.includes(seed.token), 'no token');

    // Times are shown in the viewer's zone by the page's script, the CSP allowing it.
    const time = page.locator('#audit tbody tr time').first();
    assert.equal(await time.getAttribute('data-local'), '1');
    assert.match(await time.innerText(), /GMT\+9/);
  });

  test('filters by person and by account, and pages through 60 sign-ins', async () => {
    const viewer = await person('viewer');
    const c = new pg.Client({ connectionString: e2e.db.url });
    await c.connect();
    try {
      await c.query(
        `INSERT INTO gateway.audit_log (workspace_id, actor, action, at)
         SELECT $1, 'user:' || $2, 'user.signed_in', now() - make_interval(mins => g) FROM generate_series(1, 60) g`,
        [seed.workspaceId, viewer.id],
      );
    } finally {
      await c.end();
    }
    const { page } = await signIn(await person('admin'));
    await page.goto(`${stack.gatewayUrl}/dashboard/audit`);
    await page.locator('select[name=person]').selectOption(viewer.id);
    await submit(page, () => page.getByRole('button', { name: 'Filter' }).click(), '/dashboard/audit');
    const whos = await page.locator('#audit tbody td.who').allInnerTexts();
    assert.equal(whos.length, 50, 'a page holds 50 events');
    assert.ok(
      whos.every((w) => w.startsWith(viewer.email)),
      whos.join('\n'),
    );
    assert.match(await page.locator('.pager').innerText(), /The newest events, 50 a page/);
    const firstPage = await page
      .locator('#audit tbody tr')
      .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-event')));
    await submit(page, () => page.locator('a[rel=next]').click(), '/dashboard/audit');
    const secondPage = await page
      .locator('#audit tbody tr')
      .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-event')));
    assert.ok(secondPage.length >= 10 && secondPage.length < 50, `${secondPage.length} on the second page`);
    assert.ok(!secondPage.some((k) => firstPage.includes(k)), 'no event on both pages');
    assert.equal(await page.locator('a[rel=next]').count(), 0, 'the second page is the last');
    assert.equal(await page.locator('a[rel=first]').count(), 1, 'it links back to the newest events');
    assert.equal(await page.locator('select[name=person]').inputValue(), viewer.id, 'the filter is kept');

    const second = seed.accounts[1];
    assert.ok(second);
    await page.goto(`${stack.gatewayUrl}/dashboard/audit?account=${second.account_id}`);
    const accounts = await page.locator('#audit tbody td.account').allInnerTexts();
    assert.ok(
      accounts.every((a) => a.trim() === second.name),
      accounts.join('\n'),
    );
  });
});

describe('reviewing changes', () => {
  test('the review page lists only the fields that change, names the account and shows times in the viewer’s zone', async () => {
    const account = seed.accounts[0];
    const other = seed.accounts[1];
    assert.ok(account && other);
    const list = await agent.callTool('ads_list_ads', { account_id: account.account_id, limit: 20 });
    const ad = (list.structuredContent as { ads: { id: string; status: string }[] }).ads.filter(
      (a) => a.status === 'active' || a.status === 'paused',
    )[1];
    assert.ok(ad, 'a second live ad');
    const prepared = await agent.callTool('ads_update_ad', {
      account_id: account.account_id,
      ad_id: ad.id,
      body: { name: 'Only the name changes', status: ad.status },
    });
    assert.notEqual(prepared.isError, true, JSON.stringify(prepared.structuredContent));
    const { change_id } = prepared.structuredContent as { change_id: string };
    const { page } = await signIn(await person('editor'), { timezoneId: 'America/New_York' });
    await page.goto(`${stack.gatewayUrl}/dashboard/changes/${change_id}`);
    const fields = await page.locator('#what-changes tbody tr td:first-child').allInnerTexts();
    assert.deepEqual(fields, ['name']);
    assert.match(await page.locator('#unchanged').innerText(), /status/);
    const accountText = await page.locator('#account').innerText();
    assert.ok(accountText.startsWith(`${account.name} (time zone `), accountText);
    const prepTime = page.locator('#prepared-by time');
    assert.equal(await prepTime.getAttribute('data-local'), '1');
    assert.match(await prepTime.innerText(), /EST|EDT|GMT-[45]/);

    await page.goto(`${stack.gatewayUrl}/dashboard/changes?status=prepared&account=${account.account_id}`);
    assert.equal(await page.locator(`tr[data-change="${change_id}"]`).count(), 1);
    await page.goto(`${stack.gatewayUrl}/dashboard/changes?status=prepared&account=${other.account_id}`);
    assert.equal(await page.locator(`tr[data-change="${change_id}"]`).count(), 0);
    await page.goto(`${stack.gatewayUrl}/dashboard/changes?status=rejected`);
    assert.equal(await page.locator(`tr[data-change="${change_id}"]`).count(), 0);
  });
});
