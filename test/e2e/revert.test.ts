/**
 * Undo, end to end through the official MCP client and the real processes: an applied ad update and
 * an applied ad batch are each reverted by a change prepared with ads_prepare_revert, approved by a
 * person and applied exactly once (the sandbox's ledger is the witness), leaving the ad as it was
 * before and the batch's ad group archived with its campaign and ads paused; the two changes name
 * each other; the dashboard offers Prepare revert on an applied change's page. And the platform
 * credential's health, as ads_list_accounts and the dashboard show it: the sandbox here issues
 * credentials valid for 10 days, inside the 14 days the product warns ahead.
 *
 * The batch's source images are served by a local HTTPS site, so the marketing service (which
 * fetches them) runs in the test's own process with a fetcher that reaches that site, as in
 * ad-batch.test.ts; every other service runs as a process.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { launchBrowser } from '@adsmcp/testkit/browser';
import { signInToDashboard } from '@adsmcp/testkit/dashboard';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import type { HttpsSite } from '@adsmcp/testkit/https-site';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import type { SeedResult, Stack } from '@adsmcp/testkit/stack';
import { sandboxLedger, toolCalls } from '@adsmcp/testkit/tool-calls';
import type { Browser, BrowserContext } from 'playwright-core';
import { marketingFetchingFrom, startPngSite } from './in-process-marketing.ts';

let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
let agent: McpTestClient;
let account: SeedResult['accounts'][number];
let acct: string;
let site: HttpsSite;
let browser: Browser;
let context: BrowserContext | undefined;

interface ChangeView {
  change_id: string;
  status: string;
  digest: string;
  summary: string;
  operation: { method: string; path: string; body: unknown };
  upstream_response: { id: string } | null;
  reverts_change_id: string | null;
  reverted_by: string[];
}

const { ok, refused } = toolCalls(() => agent);
const ledger = (path: string) => sandboxLedger(stack, account.upstream_account_id, path);

const IMAGE_HOST = 'img.example.com';

before(async () => {
  site = await startPngSite(IMAGE_HOST);
  e2e = await startSeededStack({
    env: { MCP_RATE_BURST: '500', SANDBOX_CREDENTIAL_VALID_DAYS: '10' },
    inProcessMarketing: marketingFetchingFrom(site),
  });
  ({ stack, seed } = e2e);
  account = seed.accounts.find((a) => a.currency === 'USD') as SeedResult['accounts'][number];
  acct = account.account_id;
  agent = await connectClient('v2-2026', stack.mcpUrl, seed.token);
  browser = await launchBrowser();
});

after(async () => {
  await context?.close();
  await browser?.close();
  await agent?.close();
  await e2e?.stop();
  await site?.close();
});

/** Approves `change` as a person would (the admin command), applies it, and waits for its outcome. */
async function approveAndApply(change: ChangeView): Promise<ChangeView> {
  const out = JSON.parse(
    await stack.admin(['approve', change.change_id, '--workspace', seed.workspaceId, '--yes']),
  ) as { status: string };
  assert.equal(out.status, 'approved');
  let applied = await ok<ChangeView>('ads_apply_change', {
    change_id: change.change_id,
    digest: change.digest,
  });
  for (const until = Date.now() + 30_000; applied.status === 'applying' && Date.now() < until; ) {
    await new Promise((r) => setTimeout(r, 250));
    applied = await ok<ChangeView>('ads_get_change', { change_id: change.change_id });
  }
  assert.equal(applied.status, 'applied', JSON.stringify(applied));
  return applied;
}

describe('ads_prepare_revert', () => {
  test('an applied ad update is reverted to its before-state, each request applied once, the two changes linked', async () => {
    const { ads } = await ok<{ ads: { id: string; name: string; status: string }[] }>('ads_list_ads', {
      account_id: acct,
      limit: 5,
    });
    const ad = ads.find((a) => a.status !== 'archived') as (typeof ads)[number];
    const path = `/ads/${ad.id}`;
    const update = await ok<ChangeView>('ads_update_ad', {
      account_id: acct,
      ad_id: ad.id,
      body: { name: 'Reverted soon — winter copy' },
    });
    await approveAndApply(update);

    // The preflight plans the revert the prepare records, recording nothing.
    const args = { change_id: update.change_id, reason: 'The winter copy underperforms' };
    const preflight = await ok<{
      would_prepare: boolean;
      change: { summary: string; digest: string } | null;
    }>('ads_preflight_change', { account_id: acct, operation: 'ads_prepare_revert', args });
    assert.equal(preflight.would_prepare, true);
    const before = await ok<ChangeView>('ads_get_change', { change_id: update.change_id });
    assert.deepEqual(before.reverted_by, [], 'a preflight records no revert');
    const elsewhere = await ok<{ would_prepare: boolean; refusal: { code: string; message: string } | null }>(
      'ads_preflight_change',
      { account_id: '00000000-0000-4000-8000-000000000000', operation: 'ads_prepare_revert', args },
    );
    assert.equal(elsewhere.refusal?.code, 'invalid_argument');
    assert.match(elsewhere.refusal?.message ?? '', /not of account_id/);

    const revert = await ok<ChangeView>('ads_prepare_revert', args);
    assert.equal(preflight.change?.digest, revert.digest);
    assert.equal(preflight.change?.summary, revert.summary);
    assert.equal(revert.status, 'prepared');
    assert.equal(revert.reverts_change_id, update.change_id);
    assert.deepEqual(revert.operation, { method: 'POST', path, body: { name: ad.name } });
    assert.match(revert.summary, new RegExp(`^Revert of change ${update.change_id} \\(ads_update_ad\\)`));
    const reverted = await ok<ChangeView>('ads_get_change', { change_id: update.change_id });
    assert.deepEqual(reverted.reverted_by, [revert.change_id]);
    const twice = await refused('ads_prepare_revert', { change_id: update.change_id });
    assert.equal(twice.code, 'failed_precondition');
    assert.match(twice.message, new RegExp(`already has a revert prepared: change ${revert.change_id}`));

    await approveAndApply(revert);
    const rows = await ledger(path);
    assert.deepEqual(
      rows.map((r) => [r.idempotency_key, r.request_body]),
      [
        [`change-${update.change_id}`, { name: 'Reverted soon — winter copy' }],
        [`change-${revert.change_id}`, { name: ad.name }],
      ],
      'the update and its revert, each applied exactly once',
    );
    const live = await ok<{ ad: { name: string } }>('ads_get_ad', { account_id: acct, ad_id: ad.id });
    assert.equal(live.ad.name, ad.name, 'the ad is back at its before-state');
  });

  test('an applied ad batch is reverted by archiving its ad group, its campaign and ads staying paused', async () => {
    const { item } = await ok<{ item: { item_id: string; revision: number } }>('ads_save_marketing_item', {
      kind: 'batch',
      name: 'Batch to revert',
      data: {
        variants: [1, 2].map((i) => ({
          title: `Revert pick ${i}`,
          body: 'Greens that love the cold',
          target_url: `https://shop.example.com/revert/${i}`,
          source_image_url: `${site.origin(IMAGE_HOST)}/revert/${i}.png`,
        })),
      },
    });
    const batch = await ok<ChangeView>('ads_prepare_ad_batch', {
      item_id: item.item_id,
      expected_revision: item.revision,
      account_id: acct,
      campaign_name: 'Revert batch',
      budget_amount: 20,
      budget_type: 'daily',
      objective: 'clicks',
      bid_micros: 500000,
      countries: ['US'],
    });
    const applied = await approveAndApply(batch);
    const jobId = applied.upstream_response?.id ?? '';
    interface Job {
      status: string;
      results: { type: string; status: string; id?: string }[];
    }
    let job: Job | undefined;
    for (const until = Date.now() + 20_000; Date.now() < until; ) {
      job = (await ok<{ job: Job }>('ads_get_bulk_job', { account_id: acct, job_id: jobId })).job;
      if (job.status === 'succeeded' || job.status === 'failed') break;
      await new Promise((r) => setTimeout(r, 500));
    }
    assert.equal(job?.status, 'succeeded', JSON.stringify(job));
    const idOf = (type: string) => (job?.results ?? []).filter((r) => r.type === type).map((r) => r.id ?? '');
    const [campaignId] = idOf('create_campaign');
    const [groupId] = idOf('create_ad_group');
    const adIds = idOf('create_ad');
    assert.equal(adIds.length, 2);

    const revert = await ok<ChangeView>('ads_prepare_revert', { change_id: batch.change_id });
    assert.equal(revert.reverts_change_id, batch.change_id);
    assert.deepEqual(revert.operation, { method: 'POST', path: `/ad_groups/${groupId}/archive`, body: {} });
    assert.match(revert.summary, /Archive ad group .* stay paused, as the job created them/);
    await approveAndApply(revert);

    const archives = await ledger(`/ad_groups/${groupId}/archive`);
    assert.deepEqual(
      archives.map((r) => r.idempotency_key),
      [`change-${revert.change_id}`],
      'the revert applied exactly once',
    );
    assert.equal(
      (await ledger('/bulk_mutation_jobs')).filter((r) => r.idempotency_key === `change-${batch.change_id}`)
        .length,
      1,
    );
    const group = await ok<{ ad_group: { status: string } }>('ads_get_ad_group', {
      account_id: acct,
      ad_group_id: groupId,
    });
    assert.equal(group.ad_group.status, 'archived');
    const campaign = await ok<{ campaign: { status: string } }>('ads_get_campaign', {
      account_id: acct,
      campaign_id: campaignId,
    });
    assert.equal(campaign.campaign.status, 'paused');
    for (const id of adIds) {
      const { ad } = await ok<{ ad: { status: string } }>('ads_get_ad', { account_id: acct, ad_id: id });
      assert.equal(ad.status, 'paused');
    }
    assert.deepEqual((await ok<ChangeView>('ads_get_change', { change_id: batch.change_id })).reverted_by, [
      revert.change_id,
    ]);
  });
});

describe('the dashboard', () => {
  test('an applied change’s page prepares its revert and opens the revert’s review page; both pages link each other', async () => {
    const { ads } = await ok<{ ads: { id: string; status: string }[] }>('ads_list_ads', {
      account_id: acct,
      limit: 10,
    });
    const ad = ads.filter((a) => a.status !== 'archived')[3] as (typeof ads)[number];
    const update = await ok<ChangeView>('ads_update_ad', {
      account_id: acct,
      ad_id: ad.id,
      body: { name: 'Dashboard revert copy' },
    });
    await approveAndApply(update);
    const signedIn = await signInToDashboard(browser, stack.gatewayUrl, {
      email: seed.dashboardUser,
      password: seed.dashboardPassword ?? '',
    });
    context = signedIn.context;
    const { page } = signedIn;
    await page.goto(`${stack.gatewayUrl}/dashboard/changes/${update.change_id}`);
    await page.fill('#revert-reason', 'Back to the old name');
    await Promise.all([
      page.waitForURL((url) => !url.pathname.endsWith(update.change_id)),
      page.click('#prepare-revert'),
    ]);
    const revertId = new URL(page.url()).pathname.split('/').pop() ?? '';
    const revert = await ok<ChangeView>('ads_get_change', { change_id: revertId });
    assert.equal(revert.status, 'prepared');
    assert.equal(revert.reverts_change_id, update.change_id);
    assert.match(revert.summary, /because "Back to the old name"/);
    assert.equal(await page.textContent('#reverts'), `change ${update.change_id}`);
    assert.ok(await page.isVisible('#approve'), 'the revert is reviewed like any change');
    await page.goto(`${stack.gatewayUrl}/dashboard/changes/${update.change_id}`);
    assert.equal(await page.textContent('#reverted-by'), `change ${revertId}`);
    // A second revert while this one is pending is refused, and the page says why.
    await Promise.all([page.waitForLoadState(), page.click('#prepare-revert')]);
    assert.match(
      (await page.textContent('#revert-refusal')) ?? '',
      new RegExp(`already has a revert prepared: change ${revertId}`),
    );
  });

  test('the accounts page shows each platform credential’s expiry and warns 14 days ahead', async () => {
    const signedIn =
      context === undefined
        ? await signInToDashboard(browser, stack.gatewayUrl, {
            email: seed.dashboardUser,
            password: seed.dashboardPassword ?? '',
          })
        : { context, page: await context.newPage() };
    context = signedIn.context;
    const { page } = signedIn;
    await page.goto(`${stack.gatewayUrl}/dashboard/accounts`);
    const warning = (await page.textContent('#credential-warning')) ?? '';
    assert.match(warning, /Renew the platform credential/);
    assert.ok(warning.includes(`${account.name}: expires within 14 days`), warning);
    assert.match(
      (await page.textContent(`tr[data-account="${acct}"] td.credential`)) ?? '',
      /\(expires soon\)/,
    );
  });
});

describe('ads_list_accounts', () => {
  test('shows when each connection’s platform credential expires, and that it expires soon', async () => {
    const { accounts } = await ok<{
      accounts: { account_id: string; credential_expires_at: string | null; credential_status: string }[];
    }>('ads_list_accounts', {});
    const listed = accounts.find((a) => a.account_id === acct);
    // The sandbox here issues credentials valid for 10 days; the seed connected this one just now.
    const days = (Date.parse(listed?.credential_expires_at ?? '') - Date.now()) / 86_400_000;
    assert.ok(days > 9.9 && days <= 10, `expires in ${days} days`);
    assert.equal(listed?.credential_status, 'expiring_soon');
  });
});
