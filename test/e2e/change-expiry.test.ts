/**
 * Expiry of a prepared change, end to end: a change prepared through the MCP client and left past
 * 72 hours (its preparation moved back in the changes service's database) is refused by
 * ads_apply_change and read expired by ads_get_change; the dashboard shows it expired, with when,
 * and no Approve button, and leaves it out of the changes awaiting approval. An admin changes the
 * expiry settings in the dashboard and the audit log shows who did it and to what.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { launchBrowser } from '@adsmcp/testkit/browser';
import { signInToDashboard } from '@adsmcp/testkit/dashboard';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import type { TestDatabase } from '@adsmcp/testkit/postgres';
import type { SeedResult, Stack } from '@adsmcp/testkit/stack';
import { toolCalls } from '@adsmcp/testkit/tool-calls';
import pg from 'pg';
import type { Browser } from 'playwright-core';

let db: TestDatabase;
let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
let agent: McpTestClient;
let browser: Browser;
let account: SeedResult['accounts'][number];
let ads: { id: string; name: string; status: string }[];

interface ChangeView {
  change_id: string;
  status: string;
  prepared_at: string;
  expires_at: string | null;
  next_step: string;
}

const { ok, refused } = toolCalls(() => agent);

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '500' } });
  ({ stack, seed, db } = e2e);
  account = seed.accounts.find((a) => a.currency === 'USD') as SeedResult['accounts'][number];
  agent = await connectClient('v2-2026', stack.mcpUrl, seed.token);
  browser = await launchBrowser();
  const list = await ok<{ ads: typeof ads }>('ads_list_ads', { account_id: account.account_id, limit: 20 });
  ads = list.ads.filter((a) => a.status !== 'archived');
  assert.ok(ads.length >= 1, 'the seeded account has an ad to change');
});

after(async () => {
  await agent?.close();
  await browser?.close();
  await e2e?.stop();
});

/** Moves a change's preparation `hours` back, as if it had waited that long. */
async function agePrepared(changeId: string, hours: number): Promise<void> {
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  try {
    const res = await c.query(
      'UPDATE changes.changes SET prepared_at = prepared_at - make_interval(hours => $2) WHERE change_id = $1',
      [changeId, hours],
    );
    assert.equal(res.rowCount, 1);
  } finally {
    await c.end();
  }
}

describe('a prepared change nobody approved within 72 hours', () => {
  test('is refused by ads_apply_change, read expired by ads_get_change, and shown expired without Approve', async () => {
    const ad = ads[0] as (typeof ads)[number];
    const prepared = await ok<ChangeView>('ads_update_ad', {
      account_id: account.account_id,
      ad_id: ad.id,
      body: { name: 'Left waiting too long' },
    });
    assert.equal(prepared.status, 'prepared');
    assert.equal(Date.parse(prepared.expires_at ?? '') - Date.parse(prepared.prepared_at), 72 * 3_600_000);
    await agePrepared(prepared.change_id, 73);

    const refusal = await refused('ads_apply_change', { change_id: prepared.change_id });
    assert.equal(refusal.code, 'failed_precondition');
    assert.match(refusal.message, /expired at \d{4}-\d{2}-\d{2}T.*prepare it again/);
    const read = await ok<ChangeView>('ads_get_change', { change_id: prepared.change_id });
    assert.equal(read.status, 'expired');
    assert.ok(read.expires_at && Date.parse(read.expires_at) < Date.now(), 'expires_at is in the past');
    assert.match(read.next_step, /Prepare it again/);
    const expired = await ok<{ changes: ChangeView[] }>('ads_list_changes', {
      status: 'expired',
      limit: 100,
    });
    assert.ok(expired.changes.some((c) => c.change_id === prepared.change_id));
    const waiting = await ok<{ changes: ChangeView[] }>('ads_list_changes', {
      status: 'prepared',
      limit: 100,
    });
    assert.ok(!waiting.changes.some((c) => c.change_id === prepared.change_id));

    const { context, page } = await signInToDashboard(browser, stack.gatewayUrl, {
      email: seed.dashboardUser,
      password: seed.dashboardPassword as string,
    });
    try {
      await page.goto(`${stack.gatewayUrl}/dashboard/changes/${prepared.change_id}`);
      assert.equal((await page.textContent('#status'))?.trim(), 'expired');
      assert.match(
        (await page.textContent('#expired')) ?? '',
        /Expired at .*Nobody approved it in time.*Prepare it again/s,
      );
      assert.equal(
        await page.getAttribute('#expires-at time', 'datetime'),
        read.expires_at,
        'the page says when it expired',
      );
      assert.equal(await page.locator('#approve').count(), 0, 'no Approve button');

      await page.goto(`${stack.gatewayUrl}/dashboard`);
      assert.equal(
        await page.locator(`tr[data-change="${prepared.change_id}"]`).count(),
        0,
        'not among the changes awaiting approval',
      );
      await page.goto(`${stack.gatewayUrl}/dashboard/changes?status=expired`);
      assert.equal(await page.locator(`tr[data-change="${prepared.change_id}"]`).count(), 1);
    } finally {
      await context.close();
    }
  });
});

describe('the expiry settings', () => {
  test('an admin changes them in the dashboard, they apply at once, and the audit log shows it', async () => {
    const ad = ads[0] as (typeof ads)[number];
    const prepared = await ok<ChangeView>('ads_update_ad', {
      account_id: account.account_id,
      ad_id: ad.id,
      body: { name: 'Waiting five hours' },
    });
    await agePrepared(prepared.change_id, 5);
    assert.equal(
      (await ok<ChangeView>('ads_get_change', { change_id: prepared.change_id })).status,
      'prepared',
    );

    const { context, page } = await signInToDashboard(browser, stack.gatewayUrl, {
      email: seed.dashboardUser,
      password: seed.dashboardPassword as string,
    });
    try {
      await page.goto(`${stack.gatewayUrl}/dashboard`);
      await Promise.all([
        page.waitForURL(/\/dashboard\/settings$/),
        page.click('nav a[href="/dashboard/settings"]'),
      ]);
      assert.equal(await page.inputValue('#prepared_valid_hours'), '72');
      assert.equal(await page.inputValue('#approval_valid_hours'), '24');
      await page.fill('#prepared_valid_hours', '4');
      await page.fill('#approval_valid_hours', '12');
      await Promise.all([page.waitForURL(/\/dashboard\/settings$/), page.click('#save-expiry')]);
      assert.equal(await page.inputValue('#prepared_valid_hours'), '4');
      assert.match((await page.textContent('#expiry-set-by')) ?? '', new RegExp(`by ${seed.dashboardUser}`));

      const now = await ok<ChangeView>('ads_get_change', { change_id: prepared.change_id });
      assert.equal(now.status, 'expired', 'a change prepared 5 hours ago expires under the 4-hour setting');
      assert.equal(Date.parse(now.expires_at ?? '') - Date.parse(now.prepared_at), 4 * 3_600_000);

      await page.goto(`${stack.gatewayUrl}/dashboard/audit`);
      const row = page.locator('#audit tbody tr', { hasText: 'change expiry set' }).first();
      assert.equal(await row.count(), 1, 'the audit log lists the settings change');
      const text = (await row.innerText()).replace(/\s+/g, ' ');
      assert.match(text, new RegExp(seed.dashboardUser.replace(/[.+]/g, '\\$&')));
      assert.match(text, /expires 4 hours after it was prepared; an approval, 12 hours after/);
    } finally {
      await context.close();
    }
  });

  test('a value out of range is refused with the field and the rule, and nothing changes', async () => {
    const { context, page } = await signInToDashboard(browser, stack.gatewayUrl, {
      email: seed.dashboardUser,
      password: seed.dashboardPassword as string,
    });
    try {
      await page.goto(`${stack.gatewayUrl}/dashboard/settings`);
      // The browser's own check of the number field is bypassed, as a hand-made post would.
      await page.$eval('#change-expiry-form', (f) => f.setAttribute('novalidate', ''));
      await page.fill('#approval_valid_hours', '1000');
      const [res] = await Promise.all([page.waitForResponse(/change-expiry$/), page.click('#save-expiry')]);
      assert.equal(res.status(), 400);
      assert.match(
        (await page.textContent('[role=alert]')) ?? '',
        /approval_valid_hours must be a whole number of hours from 1 to 720 \(got 1000\)/,
      );
      assert.equal(await page.inputValue('#approval_valid_hours'), '12', 'the setting in force is shown');
    } finally {
      await context.close();
    }
  });
});
