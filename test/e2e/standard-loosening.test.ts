/**
 * Guardrails only a person loosens, end to end: an agent (the demo admin's MCP credential, through
 * the official MCP client) saves a standard that loosens the naming prefix; the save is pending, a
 * prepare the looser standard would allow is still refused, the workspace admin confirms it in a
 * real browser, and the same prepare then succeeds. The review page of a change prepared under the
 * old standard says the standard was saved since.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { launchBrowser } from '@adsmcp/testkit/browser';
import { signInToDashboard } from '@adsmcp/testkit/dashboard';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import type { SeedResult, Stack } from '@adsmcp/testkit/stack';
import { toolCalls } from '@adsmcp/testkit/tool-calls';
import type { Browser } from 'playwright-core';

let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
let agent: McpTestClient;
let browser: Browser;
let account: SeedResult['accounts'][number];

interface SaveResult {
  standard: { standard_id: string; revision: number; data: { naming_prefix?: string } };
  pending: { pending_id: string; status: string; loosenings: string[] } | null;
  confirm_url: string | null;
  next_step: string;
}

const { ok, refused } = toolCalls(() => agent);

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '500' } });
  ({ stack, seed } = e2e);
  account = seed.accounts.find((a) => a.currency === 'USD') as SeedResult['accounts'][number];
  agent = await connectClient('v2-2026', stack.mcpUrl, seed.token);
  browser = await launchBrowser();
});

after(async () => {
  await agent?.close();
  await browser?.close();
  await e2e?.stop();
});

test('a loosening save is pending until a person confirms it in the dashboard; the stricter standard holds meanwhile', async () => {
  const { ads } = await ok<{ ads: { id: string; status: string }[] }>('ads_list_ads', {
    account_id: account.account_id,
    limit: 20,
  });
  const [first, second] = ads.filter((a) => a.status !== 'archived');
  assert.ok(first && second, 'the seeded account has two ads');
  const created = await ok<SaveResult>('ads_save_account_standard', {
    account_id: account.account_id,
    name: 'Naming',
    kind: 'standard',
    data: { naming_prefix: 'ACME-' },
  });
  assert.equal(created.pending, null);
  const before = await ok<{ change_id: string }>('ads_update_ad', {
    account_id: account.account_id,
    ad_id: first.id,
    body: { name: 'ACME-Spring' },
  });

  const loosened = await ok<SaveResult>('ads_save_account_standard', {
    account_id: account.account_id,
    name: 'Naming',
    kind: 'standard',
    data: { naming_prefix: 'BETA-' },
    standard_id: created.standard.standard_id,
    expected_revision: created.standard.revision,
  });
  assert.equal(loosened.pending?.status, 'pending');
  assert.equal(loosened.standard.data.naming_prefix, 'ACME-', 'the standard in force is unchanged');
  assert.equal(
    loosened.confirm_url,
    `${stack.gatewayUrl}/dashboard/accounts/${account.account_id}#pending-standard-changes`,
  );
  assert.match(loosened.next_step, /pending a person's confirmation/);
  assert.match(loosened.next_step, /changes the naming prefix from "ACME-" to "BETA-"/);

  const held = await refused('ads_update_ad', {
    account_id: account.account_id,
    ad_id: second.id,
    body: { name: 'BETA-Spring' },
  });
  assert.equal(held.code, 'failed_precondition');
  assert.match(held.message, /body\.name must start with ACME- \(standard Naming\)/);

  const { context, page } = await signInToDashboard(browser, stack.gatewayUrl, {
    email: seed.dashboardUser,
    password: seed.dashboardPassword as string,
  });
  try {
    await page.goto(loosened.confirm_url ?? '');
    const row = page.locator(`tr[data-pending="${loosened.pending?.pending_id}"]`);
    assert.match(
      (await row.textContent()) ?? '',
      /changes the naming prefix from "ACME-" to "BETA-": names starting with "BETA-" but not "ACME-" would pass/,
    );
    await Promise.all([
      page.waitForURL(/\/dashboard\/accounts\/[^/]+$/),
      page.click(`#confirm-${loosened.pending?.pending_id}`),
    ]);
    assert.equal(await page.locator('#no-pending-standard-changes').count(), 1);
    assert.match((await page.textContent('#standards')) ?? '', /Naming\s*standard\s*2/);

    const after = await ok<{ status: string }>('ads_update_ad', {
      account_id: account.account_id,
      ad_id: second.id,
      body: { name: 'BETA-Spring' },
    });
    assert.equal(after.status, 'prepared');

    await page.goto(`${stack.gatewayUrl}/dashboard/changes/${before.change_id}`);
    assert.match(
      (await page.textContent(`#standards-checked li[data-standard="${created.standard.standard_id}"]`)) ??
        '',
      /Naming \(revision 1\) saved since: now revision 2/,
    );

    // An archive asked for at revision 2 goes stale once the agent tightens the standard: the
    // person's Confirm is refused saying why, and Reject clears it.
    const archive = await ok<SaveResult>('ads_archive_account_standard', {
      standard_id: created.standard.standard_id,
      expected_revision: 2,
    });
    assert.equal(archive.pending?.status, 'pending');
    await ok<SaveResult>('ads_save_account_standard', {
      account_id: account.account_id,
      name: 'Naming',
      kind: 'standard',
      data: { naming_prefix: 'BETA-EU-' },
      standard_id: created.standard.standard_id,
      expected_revision: 2,
    });
    await page.goto(archive.confirm_url ?? '');
    const [refusal] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.click(`#confirm-${archive.pending?.pending_id}`),
    ]);
    assert.equal(refusal.status(), 409);
    assert.match(
      (await page.textContent('[role=alert]')) ?? '',
      /is at revision 3 since this change was asked for at revision 2; .* cannot be confirmed: reject it/,
    );
    await Promise.all([
      page.waitForURL(/\/dashboard\/accounts\/[^/]+$/),
      page.click(`#reject-${archive.pending?.pending_id}`),
    ]);
    assert.equal(await page.locator('#no-pending-standard-changes').count(), 1);
    assert.match((await page.textContent('#standards')) ?? '', /Naming\s*standard\s*3/);
  } finally {
    await context.close();
  }
});
