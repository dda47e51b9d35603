/**
 * The dashboard's growing lists in a real browser against the whole stack: the proposals list's
 * filters (status, ad account by name, optimizer, run, creation days) and pages; the audit log
 * paged to its oldest event past thousands of newer ones; and every list page checked for layout
 * overflow with 200-character values, at 1280 and 800 pixels, by element boxes (screenshots are
 * kept as artifacts in a temporary directory named in the test output).
 */
import assert from 'node:assert/strict';
import { mkdtemp, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { launchBrowser } from '@adsmcp/testkit/browser';
import { addPerson, sessionCookie, signInToDashboard } from '@adsmcp/testkit/dashboard';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import { optimizerConfig, QUICK_REVIEW } from '@adsmcp/testkit/optimizer-config';
import type { SeedResult, Stack } from '@adsmcp/testkit/stack';
import { type ToolCalls, toolCalls } from '@adsmcp/testkit/tool-calls';
import pg from 'pg';
import type { Browser, BrowserContext, Page } from 'playwright-core';

let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
let agent: McpTestClient;
let calls: ToolCalls;
let browser: Browser;
let shots: string;
const contexts: BrowserContext[] = [];
let people = 0;

/** A 200-character value with no place to break a line. */
const LONG_NAME = `Long-${'ConnectionNameWithoutSpaces'.repeat(8)}`.slice(0, 200);

type Person = { email: string; password: string; id: string };

async function sql<T extends pg.QueryResultRow>(text: string, params: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: e2e.db.url });
  await c.connect();
  try {
    return (await c.query<T>(text, params)).rows;
  } finally {
    await c.end();
  }
}

async function person(role: 'admin' | 'editor' | 'viewer'): Promise<Person> {
  people += 1;
  const email = `lists-${role}-${people}@demo.example`;
  const password = `${role}-password-${people}`;
  return addPerson(stack, seed.workspaceId, role, email, password);
}

async function signIn(who: Person): Promise<{ context: BrowserContext; page: Page }> {
  const { context, page } = await signInToDashboard(browser, stack.gatewayUrl, who);
  contexts.push(context);
  return { context, page };
}

async function createToken(name: string): Promise<void> {
  await stack.admin(['create-token', '--workspace', seed.workspaceId, '--name', name]);
}

/**
 * Saves a full-page screenshot, then asserts on element boxes: the document is no wider than the
 * window, and no element reaches past its right edge (each one that does is named).
 */
async function assertNoOverflow(page: Page, name: string): Promise<void> {
  const shot = join(shots, `${name}.png`);
  await page.screenshot({ path: shot, fullPage: true });
  assert.ok((await stat(shot)).size > 0, `the screenshot ${shot} was written`);
  // A string, run in the page: the test's own TypeScript has no DOM types.
  const found = (await page.evaluate(`(() => {
    const width = document.documentElement.clientWidth;
    const wide = [...document.querySelectorAll('*')]
      .filter((el) => el.getBoundingClientRect().right > width + 1 || el.scrollWidth > width)
      .map((el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + ' ' + Math.round(el.getBoundingClientRect().right) + 'px > ' + width + 'px');
    return { document: document.documentElement.scrollWidth, window: width, wide };
  })()`)) as { document: number; window: number; wide: string[] };
  assert.ok(
    found.document <= found.window,
    `${name}: the document is ${found.document} px wide in a ${found.window} px window (${shot})`,
  );
  assert.deepEqual(found.wide, [], `elements wider than the window on ${name} (screenshot ${shot})`);
}

/** The right edge of every cell holding `text`, each of which must be within the window. */
async function assertCellsWrap(page: Page, text: string, width: number, name: string): Promise<void> {
  const cells = page.locator('td', { hasText: text });
  const count = await cells.count();
  assert.ok(count > 0, `${name}: a cell holds the long value`);
  for (let i = 0; i < count; i++) {
    const box = await cells.nth(i).boundingBox();
    assert.ok(
      box && box.x + box.width <= width + 1,
      `${name}: cell ${i} ends at ${box ? box.x + box.width : '?'} px`,
    );
  }
}

interface Ad {
  id: string;
  campaign_id: string;
  status: string;
}

/** A completed review run of a new optimizer over `ad`'s campaign, with one proposal; its ids. */
async function proposalFor(
  accountId: string,
  ad: Ad,
): Promise<{ proposalId: string; runId: string; optimizerId: string }> {
  const { optimizer } = await calls.ok<{ optimizer: { optimizer_id: string } }>('ads_save_optimizer', {
    account_id: accountId,
    name: `Lists ${people++}`,
    config: optimizerConfig([ad.campaign_id], QUICK_REVIEW),
    enabled: true,
  });
  const { run } = await calls.ok<{ run: { run_id: string } }>('ads_request_optimization_review', {
    optimizer_id: optimizer.optimizer_id,
  });
  const claim = await calls.ok<{ claim_token: string }>('ads_claim_optimization_run', { run_id: run.run_id });
  const done = await calls.ok<{ proposals: { proposal_id: string }[] }>('ads_complete_optimization_run', {
    run_id: run.run_id,
    claim_token: claim.claim_token,
    outcome: 'proposals',
    summary: 'One ad can name its offer.',
    variants: [
      {
        base_ad_id: ad.id,
        name: `Proposal for ${ad.id}`,
        title: 'Spring offer: 20% off',
        body: 'Healthy plants delivered in two days.',
        target_url: 'https://example.com/spring',
        rationale: 'The title names no offer.',
        hypothesis: 'Naming the offer raises CTR.',
      },
    ],
  });
  const proposalId = done.proposals[0]?.proposal_id;
  assert.ok(proposalId);
  return { proposalId, runId: run.run_id, optimizerId: optimizer.optimizer_id };
}

/** `count` copies of a proposal (same run and optimizer), created `minutes` apart before it. */
async function copiesOf(
  proposalId: string,
  count: number,
  minutes: number,
  patch: Record<string, unknown> = {},
) {
  await sql(
    `INSERT INTO optimizer.proposals
     SELECT (jsonb_populate_record(p, jsonb_build_object('proposal_id', gen_random_uuid(), 'position', p.position + 1000 + g,
              'created_at', p.created_at - make_interval(mins => g * $3::int)) || $4::jsonb)).*
       FROM optimizer.proposals p, generate_series(1, $2::int) g WHERE p.proposal_id = $1`,
    [proposalId, count, minutes, JSON.stringify(patch)],
  );
}

/** The proposal ids listed on the page, in order. */
const listedProposals = (page: Page) =>
  page.locator('#proposals tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-proposal')));

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '200' } });
  ({ stack, seed } = e2e);
  agent = await connectClient('v2-2026', stack.mcpUrl, seed.token);
  calls = toolCalls(() => agent);
  browser = await launchBrowser();
  shots = await mkdtemp(join(tmpdir(), 'adsmcp-dashboard-lists-shots-'));
  process.stdout.write(`# screenshots: ${shots}\n`);
});

after(async () => {
  for (const c of contexts) await c.close().catch(() => undefined);
  await agent?.close();
  await browser?.close();
  await e2e?.stop();
});

describe('the proposals list', () => {
  test('filters by status, ad account, optimizer, run and creation days, and pages 25 at a time', async () => {
    const [first, second] = seed.accounts;
    assert.ok(first && second);
    const adsOf = async (accountId: string) =>
      (await calls.ok<{ ads: Ad[] }>('ads_list_ads', { account_id: accountId, limit: 50 })).ads.filter(
        (a) => a.status === 'active',
      );
    const [adA] = await adsOf(first.account_id);
    const [adB] = await adsOf(second.account_id);
    assert.ok(adA && adB, 'both demo accounts have an active ad');
    const a = await proposalFor(first.account_id, adA);
    const b = await proposalFor(second.account_id, adB);
    // 29 more of the first run, one a minute older each: 30 in the first account, 31 in all.
    await copiesOf(a.proposalId, 29, 1);
    // And one of the second run, 40 days old and rejected.
    await copiesOf(b.proposalId, 1, 40 * 24 * 60, { status: 'rejected' });

    const { page } = await signIn(await person('viewer'));
    await page.goto(`${stack.gatewayUrl}/dashboard/proposals`);
    assert.equal((await listedProposals(page)).length, 25, 'a page holds 25');
    assert.match(await page.locator('.pager').innerText(), /Page 1 of 2 \(32 in all\)/);
    const accountCells = await page.locator('#proposals td.account').allInnerTexts();
    assert.ok(
      accountCells.every((t) => t === first.name || t === second.name),
      'accounts by name',
    );
    assert.equal(
      await page.locator('#proposals td.created time[data-local="1"]').count(),
      25,
      'times in the viewer’s zone',
    );

    await page.locator('select[name=account]').selectOption({ label: second.name });
    await Promise.all([page.waitForURL(/account=/), page.getByRole('button', { name: 'Filter' }).click()]);
    assert.equal((await listedProposals(page)).length, 2);
    assert.equal(await page.locator('select[name=account]').inputValue(), second.account_id.toLowerCase());

    await page.goto(`${stack.gatewayUrl}/dashboard/proposals?status=rejected`);
    assert.equal((await listedProposals(page)).length, 1);
    assert.deepEqual(await page.locator('#proposals td.state').allInnerTexts(), ['rejected']);

    await page.goto(
      `${stack.gatewayUrl}/dashboard/proposals?optimizer=${b.optimizerId}&status=pending_review`,
    );
    assert.deepEqual(await listedProposals(page), [b.proposalId]);

    await page.goto(`${stack.gatewayUrl}/dashboard/proposals?run=${a.runId}`);
    assert.match(await page.locator('.pager').innerText(), /\(30 in all\)/);
    await Promise.all([page.waitForURL(/page=2/), page.locator('a[rel=next]').click()]);
    assert.equal((await listedProposals(page)).length, 5, 'the second page of the run');
    assert.equal(await page.locator('input[name=run]').inputValue(), a.runId, 'the pager keeps the filters');

    const day = (daysAgo: number) => new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10);
    await page.goto(`${stack.gatewayUrl}/dashboard/proposals?to=${day(30)}`);
    assert.equal(
      (await listedProposals(page)).length,
      1,
      'only the 40-day-old one was created 30 days ago or before',
    );
    await page.goto(`${stack.gatewayUrl}/dashboard/proposals?from=${day(1)}&to=${day(0)}`);
    assert.match(await page.locator('.pager').innerText(), /\(31 in all\)/);
    await page.goto(`${stack.gatewayUrl}/dashboard/proposals?from=not-a-day&account=nope`);
    assert.match(await page.locator('.pager').innerText(), /\(32 in all\)/, 'invalid filters are ignored');
    // Days no calendar has, and a last day whose next is in year 10000, are as invalid.
    for (const q of ['from=2024-02-30', 'to=9999-12-31', 'from=2025-13-01&to=2025-00-10']) {
      await page.goto(`${stack.gatewayUrl}/dashboard/proposals?${q}`);
      assert.match(await page.locator('.pager').innerText(), /\(32 in all\)/, q);
    }
  });
});

describe('the audit log beyond its first thousands of events', () => {
  test('every event is reachable page by page, an old one behind 2,100 newer ones included, each once', async () => {
    const member = await person('viewer');
    let lastAt = '';
    const c = new pg.Client({ connectionString: e2e.db.url });
    await c.connect();
    try {
      // A role change a year ago, then 2,100 sign-ins of the member, oldest first: the gateway's
      // records, relayed into the workspace's chained log in the order they were written.
      await c.query(
        `INSERT INTO gateway.audit_log (workspace_id, actor, action, target, detail, at)
         VALUES ($1, 'user:' || $2, 'member.role_changed', $2, '{"from":"editor","to":"viewer"}', now() - interval '1 year')`,
        [seed.workspaceId, member.id],
      );
      await c.query(
        `INSERT INTO gateway.audit_log (workspace_id, actor, action, at)
         SELECT $1, 'user:' || $2, 'user.signed_in', now() - make_interval(secs => g)
           FROM generate_series(1, 2100) g ORDER BY g DESC`,
        [seed.workspaceId, member.id],
      );
      const last = await c.query<{ at: Date }>(
        `SELECT max(at) AS at FROM gateway.audit_log WHERE actor = 'user:' || $1`,
        [member.id],
      );
      lastAt = last.rows[0]?.at.toISOString() ?? '';
    } finally {
      await c.end();
    }
    const { context, page } = await signIn(await person('admin'));
    const cookie = await sessionCookie(context, stack.gatewayUrl);
    // Found by a filter that only the old event matches, once the relay has carried every row
    // (the last one written is the newest on the first page).
    const newest = `/dashboard/audit?person=${member.id}`;
    for (const until = Date.now() + 60_000; ; ) {
      const html = await (await fetch(`${stack.gatewayUrl}${newest}`, { headers: { cookie } })).text();
      // The event rows' times (the chain's line above them dates its last whole check).
      if (/<tr data-event="\d+"><td[^>]*><time datetime="([^"]+)"/.exec(html)?.[1] === lastAt) break;
      assert.ok(Date.now() < until, 'the sign-ins reached the audit log within a minute');
      await new Promise((r) => setTimeout(r, 500));
    }
    await page.goto(`${stack.gatewayUrl}/dashboard/audit?person=${member.id}&object=editor`);
    const found = await page.locator('#audit tbody td.what').allInnerTexts();
    assert.deepEqual(found, ['role changed']);

    // And by paging: 43 pages of the member's 2,101 events, each once, newest first.
    let path: string | undefined = newest;
    const keys: number[] = [];
    const times: string[] = [];
    let pages = 0;
    while (path && pages < 60) {
      const res = await fetch(`${stack.gatewayUrl}${path}`, { headers: { cookie } });
      assert.equal(res.status, 200);
      const html = await res.text();
      keys.push(...[...html.matchAll(/data-event="([^"]+)"/g)].map((m) => Number(m[1])));
      times.push(
        ...[...html.matchAll(/<tr data-event="\d+"><td[^>]*><time datetime="([^"]+)"/g)].map(
          (m) => m[1] ?? '',
        ),
      );
      path = /<a rel="next" href="([^"]+)"/.exec(html)?.[1]?.replaceAll('&amp;', '&');
      pages += 1;
    }
    assert.equal(keys.length, 2101);
    assert.equal(new Set(keys).size, 2101, 'no event twice');
    assert.equal(pages, 43);
    assert.deepEqual(
      keys,
      [...keys].sort((a, b) => b - a),
      'newest first',
    );
    assert.deepEqual(times, [...times].sort().reverse(), 'in the order they happened');
  });
});

describe('long values on every list page', () => {
  test('a 200-character account name, connection name and values keep every list page within the window', async () => {
    const account = seed.accounts[seed.accounts.length - 1];
    assert.ok(account);
    const longAccount = `Account-${'WithAVeryLongNameAndNoSpaces'.repeat(7)}`.slice(0, 200);
    const c = new pg.Client({ connectionString: e2e.db.url });
    await c.connect();
    try {
      await c.query('UPDATE upstream_proxy.connections SET name = $2 WHERE account_id = $1', [
        account.account_id,
        longAccount,
      ]);
      await createToken(LONG_NAME);
      // A proposal whose variant has a 200-character name, on the account with the long name.
      const [ad] = (
        await calls.ok<{ ads: Ad[] }>('ads_list_ads', { account_id: account.account_id, limit: 50 })
      ).ads;
      assert.ok(ad);
      const p = await proposalFor(account.account_id, ad);
      await c.query(
        `UPDATE optimizer.proposals SET variant = jsonb_set(variant, '{name}', to_jsonb($2::text)) WHERE proposal_id = $1`,
        [p.proposalId, LONG_NAME],
      );
      const { page } = await signIn(await person('admin'));
      for (const width of [1280, 800]) {
        await page.setViewportSize({ width, height: 800 });
        for (const [name, path] of [
          ['accounts', '/dashboard/accounts'],
          ['connections', '/dashboard/connections'],
          ['audit', '/dashboard/audit'],
          ['audit-by-account', `/dashboard/audit?account=${account.account_id}`],
          ['changes', '/dashboard/changes'],
          ['proposals', '/dashboard/proposals'],
        ] as const) {
          await page.goto(`${stack.gatewayUrl}${path}`);
          await assertNoOverflow(page, `${name}-long-values-${width}`);
        }
        await page.goto(`${stack.gatewayUrl}/dashboard/proposals`);
        await assertCellsWrap(page, LONG_NAME, width, `proposals at ${width} px`);
        await assertCellsWrap(page, longAccount, width, `proposals at ${width} px`);
        await page.goto(`${stack.gatewayUrl}/dashboard/connections`);
        await assertCellsWrap(page, LONG_NAME, width, `connections at ${width} px`);
        await page.goto(`${stack.gatewayUrl}/dashboard/audit?account=${account.account_id}`);
        await assertNoOverflow(page, `audit-account-${width}`);
        await page.goto(`${stack.gatewayUrl}/dashboard/accounts`);
        const cell = page.getByText(longAccount).first();
        const box = await cell.boundingBox();
        assert.ok(box && box.x + box.width <= width, `the account name wraps within ${width} px`);
        // The filters offer accounts by name: the select is no wider than the window either.
        await page.goto(`${stack.gatewayUrl}/dashboard/proposals`);
        const select = await page.locator('select[name=optimizer]').boundingBox();
        assert.ok(select && select.x + select.width <= width);
      }
    } finally {
      await c.query('UPDATE upstream_proxy.connections SET name = $2 WHERE account_id = $1', [
        account.account_id,
        account.name,
      ]);
      await c.end();
    }
  });
});
