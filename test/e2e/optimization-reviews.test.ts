/**
 * Optimization reviews end to end: an agent (the official MCP client) requests a review, claims it
 * with a performance snapshot read from the sandbox, completes it with a proposal; a person
 * approves it in a real browser; the optimizer publishes it as a change, and the new creative is
 * on the ad upstream, applied exactly once.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { enqueue } from '@adsmcp/runtime/bus/outbox';
import { launchBrowser, shownImageWidth } from '@adsmcp/testkit/browser';
import { signInToDashboard } from '@adsmcp/testkit/dashboard';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import { optimizerConfig, QUICK_REVIEW } from '@adsmcp/testkit/optimizer-config';
import type { SeedResult, Stack } from '@adsmcp/testkit/stack';
import { sandboxLedger, type ToolCalls, toolCalls } from '@adsmcp/testkit/tool-calls';
import pg from 'pg';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import sharp from 'sharp';

let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
let agent: McpTestClient;
let calls: ToolCalls;
let browser: Browser;
let accountId: string;
const contexts: BrowserContext[] = [];

interface Ad {
  id: string;
  campaign_id: string;
  status: string;
  creative: { title: string; body: string; target_url: string };
}

interface Run {
  run_id: string;
  status: string;
  claim_expires_at: string | null;
  outcome: string | null;
  proposal_ids: string[];
  cancel_reason: string | null;
}

interface Snapshot {
  time_range: string;
  ads: {
    ad_id: string;
    impressions: string;
    clicks: string;
    meets_thresholds: boolean;
    below_thresholds: string[];
  }[];
}

interface Proposal {
  proposal_id: string;
  status: string;
  revision: number;
  change_id: string | null;
  change_status: string | null;
  approved_by: string | null;
  variant: { title: string };
}

let ads: Ad[];

const config = (campaignIds: string[], patch: Record<string, unknown> = {}) =>
  optimizerConfig(campaignIds, { ...QUICK_REVIEW, ...patch });

/** A new enabled optimizer of the first demo account over the campaign of `ad`. */
async function optimizerFor(ad: Ad, patch: Record<string, unknown> = {}): Promise<string> {
  const { optimizer } = await calls.ok<{ optimizer: { optimizer_id: string } }>('ads_save_optimizer', {
    account_id: accountId,
    name: `Review ${randomUUID().slice(0, 8)}`,
    config: config([ad.campaign_id], patch),
    enabled: true,
  });
  return optimizer.optimizer_id;
}

/** An ad not used by another test, so that each test changes an ad of its own. */
function nextAd(): Ad {
  const ad = ads.shift();
  assert.ok(ad, 'an ad is left');
  return ad;
}

const variantFor = (ad: Ad, title: string) => ({
  base_ad_id: ad.id,
  name: `Proposal for ${ad.id}`,
  title,
  body: 'Healthy plants delivered in two days.',
  target_url: 'https://example.com/spring',
  rationale: 'The title names no offer.',
  hypothesis: 'Naming the offer raises CTR.',
});

/** A claimed review run of a new enabled optimizer over `ad`'s campaign. */
async function claimedRunFor(ad: Ad, patch: Record<string, unknown> = {}) {
  const optimizerId = await optimizerFor(ad, patch);
  const { run } = await calls.ok<{ run: Run }>('ads_request_optimization_review', {
    optimizer_id: optimizerId,
  });
  const claim = await calls.ok<{ claim_token: string }>('ads_claim_optimization_run', { run_id: run.run_id });
  return { run, claim };
}

/** A completed run of a new optimizer over `ad`'s campaign, with one proposal for `ad`. */
async function proposalFor(ad: Ad, title: string): Promise<Proposal> {
  const { run, claim } = await claimedRunFor(ad);
  const done = await calls.ok<{ proposals: Proposal[] }>('ads_complete_optimization_run', {
    run_id: run.run_id,
    claim_token: claim.claim_token,
    outcome: 'proposals',
    summary: 'One ad can name its offer.',
    variants: [variantFor(ad, title)],
  });
  const proposal = done.proposals[0];
  assert.ok(proposal);
  return proposal;
}

/** Queues (POST) or clears (DELETE) faults on the ads sandbox, as its operator. */
async function sandboxFaults(method: 'POST' | 'DELETE', fault?: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${stack.urls['ads-sandbox']}/_sandbox/faults`, {
    method,
    headers: {
      authorization: `Bearer ${stack.secrets.sandboxAdminToken}`,
      ...(fault ? { 'content-type': 'application/json' } : {}),
    },
    ...(fault ? { body: JSON.stringify(fault) } : {}),
  });
  assert.ok(res.ok, `sandbox refused the fault: ${res.status} ${await res.text()}`);
}

async function signIn(): Promise<Page> {
  const { context, page } = await signInToDashboard(browser, stack.gatewayUrl, {
    email: seed.dashboardUser,
    password: seed.dashboardPassword ?? '',
  });
  contexts.push(context);
  return page;
}

/** Clicks Approve on the proposal page `page` shows, and waits for the page it leads back to. */
async function approveOnPage(page: Page, proposalId: string): Promise<void> {
  await Promise.all([
    page.waitForResponse(
      (r) =>
        r.url() === `${stack.gatewayUrl}/dashboard/proposals/${proposalId}` && r.request().method() === 'GET',
    ),
    page.click('#approve'),
  ]);
}

async function waitForProposal(id: string, want: string[], timeoutMs = 60_000): Promise<Proposal> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { proposal } = await calls.ok<{ proposal: Proposal }>('ads_get_optimization_proposal', {
      proposal_id: id,
    });
    if (want.includes(proposal.status) || Date.now() > deadline) return proposal;
    await new Promise((r) => setTimeout(r, 250));
  }
}

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '400' } });
  ({ stack, seed } = e2e);
  const first = seed.accounts[0];
  assert.ok(first);
  accountId = first.account_id;
  agent = await connectClient('v2-2026', stack.mcpUrl, seed.token);
  calls = toolCalls(() => agent);
  browser = await launchBrowser();
  const list = await calls.ok<{ ads: Ad[] }>('ads_list_ads', { account_id: accountId, limit: 50 });
  // One ad per campaign at most per test: max_ads_per_campaign is 1 and each test has its own optimizer.
  ads = list.ads.filter((a) => a.status === 'active');
  assert.ok(ads.length >= 4, 'the seeded account has active ads');
});

after(async () => {
  for (const c of contexts) await c.close().catch(() => undefined);
  await agent?.close();
  await browser?.close();
  await e2e?.stop();
});

describe('the whole review loop', () => {
  test('request, claim, complete, approve in the browser, published: the new creative is upstream exactly once', async () => {
    const ad = nextAd();
    const optimizerId = await optimizerFor(ad);
    const requested = await calls.ok<{ run: Run; created: boolean }>('ads_request_optimization_review', {
      optimizer_id: optimizerId,
    });
    assert.equal(requested.created, true);
    assert.equal(requested.run.status, 'queued');
    const reused = await calls.ok<{ run: Run; created: boolean }>('ads_request_optimization_review', {
      optimizer_id: optimizerId,
    });
    assert.equal(reused.created, false);
    assert.equal(reused.run.run_id, requested.run.run_id);
    const queued = await calls.ok<{ runs: Run[] }>('ads_list_optimization_runs', {
      optimizer_id: optimizerId,
      status: 'queued',
    });
    assert.deepEqual(
      queued.runs.map((r) => r.run_id),
      [requested.run.run_id],
    );

    const token = randomUUID();
    const claim = await calls.ok<{ run: Run; claim_token: string; snapshot: Snapshot }>(
      'ads_claim_optimization_run',
      { run_id: requested.run.run_id, claim_token: token },
    );
    assert.equal(claim.claim_token, token);
    assert.equal(claim.run.status, 'claimed');
    assert.match(claim.snapshot.time_range, /^\d{4}-\d{2}-\d{2}\.\.\d{4}-\d{2}-\d{2}$/);
    const evidence = claim.snapshot.ads.find((a) => a.ad_id === ad.id);
    assert.ok(evidence, 'the snapshot has the base ad');
    assert.ok(Number(evidence.impressions) > 0, 'the sandbox delivered impressions in the window');
    assert.equal(evidence.meets_thresholds, true);
    const second = await calls.refused('ads_claim_optimization_run', { run_id: requested.run.run_id });
    assert.match(second.message, /already claimed/);

    const completion = {
      run_id: requested.run.run_id,
      claim_token: token,
      outcome: 'proposals',
      summary: 'The ad can name its offer.',
      variants: [variantFor(ad, 'Free shipping, this week')],
    };
    const done = await calls.ok<{ run: Run; proposals: Proposal[]; repeated: boolean }>(
      'ads_complete_optimization_run',
      completion,
    );
    assert.equal(done.run.status, 'completed');
    assert.equal(done.repeated, false);
    const again = await calls.ok<{ proposals: Proposal[]; repeated: boolean }>(
      'ads_complete_optimization_run',
      completion,
    );
    assert.equal(again.repeated, true);
    const proposalId = done.proposals[0]?.proposal_id ?? '';
    assert.deepEqual(
      again.proposals.map((p) => p.proposal_id),
      [proposalId],
    );

    const page = await signIn();
    await page.goto(`${stack.gatewayUrl}/dashboard`);
    await Promise.all([
      page.waitForURL(/\/dashboard\/proposals$/),
      page.click('a[href="/dashboard/proposals"]'),
    ]);
    await Promise.all([
      page.waitForURL(new RegExp(`/dashboard/proposals/${proposalId}$`)),
      page.click(`tr[data-proposal="${proposalId}"] a[href="/dashboard/proposals/${proposalId}"]`),
    ]);
    assert.equal((await page.locator('#status').innerText()).trim(), 'pending_review');
    const comparison = await page.locator('table[data-comparison]').innerText();
    assert.match(comparison, new RegExp(ad.creative.title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
    assert.match(comparison, /Free shipping, this week/);
    assert.match(await page.locator('table[data-evidence]').innerText(), /Impressions/);
    await approveOnPage(page, proposalId);
    assert.match((await page.locator('#status').innerText()).trim(), /approved|publishing|published/);

    const published = await waitForProposal(proposalId, ['published', 'failed']);
    assert.equal(published.status, 'published', JSON.stringify(published));
    assert.ok(published.change_id);
    assert.equal(published.change_status, 'applied');
    const change = await calls.ok<{ status: string; approved_by: string }>('ads_get_change', {
      change_id: published.change_id,
    });
    assert.equal(change.status, 'applied');
    assert.match(change.approved_by, /via dashboard/);
    const live = await calls.ok<{ ad: Ad }>('ads_get_ad', { account_id: accountId, ad_id: ad.id });
    assert.equal(live.ad.creative.title, 'Free shipping, this week');
    assert.equal(live.ad.creative.target_url, 'https://example.com/spring');
    const upstream = seed.accounts[0]?.upstream_account_id ?? '';
    const ledger = await sandboxLedger(stack, upstream, `/ads/${ad.id}`);
    assert.equal(ledger.length, 1, JSON.stringify(ledger));
    assert.equal(ledger[0]?.method, 'POST');

    // A dispatch whose commit was lost after the changes service recorded its change (the call
    // timed out, the process was killed): the proposal is approved, as before it, and the next
    // publish message finds the change already applied. It ends published, not publishing.
    const db = new pg.Client({ connectionString: e2e.db.url });
    await db.connect();
    try {
      await db.query(
        `UPDATE optimizer.proposals SET status = 'approved', change_id = NULL, change_status = NULL,
                published_at = NULL, revision = revision + 1 WHERE proposal_id = $1`,
        [proposalId],
      );
      await db.query('SET search_path TO optimizer');
      await enqueue(db, {
        topic: 'optimizer.publish',
        key: proposalId,
        payload: { proposal_id: proposalId, workspace_id: seed.workspaceId },
        id: randomUUID(),
      });
    } finally {
      await db.end();
    }
    const redelivered = await waitForProposal(proposalId, ['published', 'failed'], 30_000);
    assert.equal(redelivered.status, 'published', JSON.stringify(redelivered));
    assert.equal(redelivered.change_status, 'applied');
    assert.equal((await sandboxLedger(stack, upstream, `/ads/${ad.id}`)).length, 1, 'not sent again');
  });
});

describe('publishing', () => {
  test('a proposal the changes service refuses to plan fails with its reason, and nothing is sent', async () => {
    const ad = nextAd();
    const host = new URL(ad.creative.target_url).hostname;
    const { run, claim } = await claimedRunFor(ad, { allowed_domains: [host] });
    // The variant is the ad as it is: publishing it would change nothing.
    const same = {
      ...variantFor(ad, ad.creative.title),
      body: ad.creative.body,
      target_url: ad.creative.target_url,
    };
    const done = await calls.ok<{ proposals: Proposal[] }>('ads_complete_optimization_run', {
      run_id: run.run_id,
      claim_token: claim.claim_token,
      outcome: 'proposals',
      summary: 'x',
      variants: [same],
    });
    const proposalId = done.proposals[0]?.proposal_id ?? '';
    const page = await signIn();
    await page.goto(`${stack.gatewayUrl}/dashboard/proposals/${proposalId}`);
    await approveOnPage(page, proposalId);
    const failed = await waitForProposal(proposalId, ['failed', 'published']);
    assert.equal(failed.status, 'failed');
    assert.match((failed as Proposal & { change_error: string }).change_error, /nothing would change/);
    const ledger = await sandboxLedger(stack, seed.accounts[0]?.upstream_account_id ?? '', `/ads/${ad.id}`);
    assert.deepEqual(ledger, []);
  });
});

describe('refusals', () => {
  test('a variant linking outside allowed_domains is refused, naming target_url', async () => {
    const ad = nextAd();
    const { run, claim } = await claimedRunFor(ad);
    const err = await calls.refused('ads_complete_optimization_run', {
      run_id: run.run_id,
      claim_token: claim.claim_token,
      outcome: 'proposals',
      summary: 'x',
      variants: [{ ...variantFor(ad, 'Elsewhere'), target_url: 'https://elsewhere.test/' }],
    });
    assert.equal(err.code, 'invalid_argument');
    assert.match(err.message, /variants\[0\]\.target_url links to elsewhere\.test/);
    const bad = await calls.refused('ads_claim_optimization_run', { run_id: 'not-a-uuid' });
    assert.equal(bad.code, 'invalid_argument');
  });

  test('approval is not possible through MCP, and a proposal rejected in the dashboard is final', async () => {
    const ad = nextAd();
    const proposal = await proposalFor(ad, 'Rejected title');
    const approve = await calls.refused('ads_review_optimization_proposal', {
      proposal_id: proposal.proposal_id,
      expected_revision: 1,
      decision: 'approve',
      note: 'ok',
    });
    assert.equal(approve.code, 'invalid_argument');
    const page = await signIn();
    await page.goto(`${stack.gatewayUrl}/dashboard/proposals/${proposal.proposal_id}`);
    await page.fill('#note', 'Off brand.');
    await Promise.all([
      page.waitForResponse(
        (r) =>
          r.url() === `${stack.gatewayUrl}/dashboard/proposals/${proposal.proposal_id}` &&
          r.request().method() === 'GET',
      ),
      page.click('#reject'),
    ]);
    assert.equal((await page.locator('#status').innerText()).trim(), 'rejected');
    const edit = await calls.refused('ads_edit_optimization_proposal', {
      proposal_id: proposal.proposal_id,
      expected_revision: 2,
      variant: variantFor(ad, 'Again'),
    });
    assert.match(edit.message, /rejected and cannot be edited/);
  });

  test('an approval posted from another origin is refused by the origin check', async () => {
    const ad = nextAd();
    const proposal = await proposalFor(ad, 'Forged');
    const page = await signIn();
    const cookies = await page.context().cookies(`${stack.gatewayUrl}/dashboard`);
    const cookie = cookies.map((c) => `${c.name}=${c.value}`).join('; ');
    const res = await fetch(`${stack.gatewayUrl}/dashboard/proposals/${proposal.proposal_id}/approve`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        cookie,
        origin: 'https://evil.example',
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ expected_revision: '1' }).toString(),
    });
    assert.equal(res.status, 403);
    assert.match(await res.text(), /origin check/);
    const { proposal: still } = await calls.ok<{ proposal: Proposal }>('ads_get_optimization_proposal', {
      proposal_id: proposal.proposal_id,
    });
    assert.equal(still.status, 'pending_review');
  });

  /** Claims a run while the platform fails every ad group read, so the snapshot cannot be taken. */
  async function claimWithoutSnapshot(args: Record<string, unknown>) {
    await sandboxFaults('POST', {
      account_id: seed.accounts[0]?.upstream_account_id,
      path_prefix: '/ad_groups',
      kind: 'status_500',
      count: 50,
    });
    try {
      return await calls.refused('ads_claim_optimization_run', args);
    } finally {
      await sandboxFaults('DELETE');
    }
  }

  test('when the platform cannot give the snapshot, the run stays claimed and the error names the claim_token to retry with', async () => {
    const ad = nextAd();
    const optimizerId = await optimizerFor(ad);
    const { run } = await calls.ok<{ run: Run }>('ads_request_optimization_review', {
      optimizer_id: optimizerId,
    });
    const err = await claimWithoutSnapshot({ run_id: run.run_id });
    const token = /claim_token ([0-9a-f-]{36})/.exec(err.message)?.[1];
    assert.ok(token, err.message);
    const other = await calls.refused('ads_claim_optimization_run', { run_id: run.run_id });
    assert.match(other.message, /already claimed/);
    const retried = await calls.ok<{ claim_token: string; snapshot: Snapshot }>(
      'ads_claim_optimization_run',
      {
        run_id: run.run_id,
        claim_token: token,
      },
    );
    assert.equal(retried.claim_token, token);
    assert.ok(retried.snapshot.ads.some((a) => a.ad_id === ad.id));
  });

  test('a claim_token in upper case holds through a failed snapshot read, the retry it names, and the completion', async () => {
    // No variant is proposed, so the ad stays free for another test.
    const optimizerId = await optimizerFor(ads[0] as Ad);
    const { run } = await calls.ok<{ run: Run }>('ads_request_optimization_review', {
      optimizer_id: optimizerId,
    });
    const token = randomUUID().toUpperCase();
    const err = await claimWithoutSnapshot({ run_id: run.run_id, claim_token: token });
    assert.notEqual(err.code, 'permission_denied', err.message);
    assert.doesNotMatch(err.message, /is not the claim/);
    const retried = await calls.ok<{ run: Run; claim_token: string }>('ads_claim_optimization_run', {
      run_id: run.run_id,
      claim_token: token,
    });
    assert.equal(retried.run.status, 'claimed');
    assert.equal(retried.claim_token.toUpperCase(), token);
    const completion = {
      run_id: run.run_id,
      claim_token: token,
      outcome: 'no_change',
      summary: 'Nothing to change.',
    };
    const done = await calls.ok<{ run: Run; repeated: boolean }>('ads_complete_optimization_run', completion);
    assert.equal(done.run.status, 'completed');
    const again = await calls.ok<{ repeated: boolean }>('ads_complete_optimization_run', completion);
    assert.equal(again.repeated, true);
  });

  test('a variant with a campaign image: the reviewer sees it, and publishing uploads it once and puts it on the ad', async () => {
    const ad = nextAd();
    const png = await sharp({ create: { width: 160, height: 120, channels: 3, background: '#c84' } })
      .png()
      .toBuffer();
    const saved = await calls.ok<{ asset: { asset_id: string; sha256: string } }>('ads_save_campaign_asset', {
      account_id: accountId,
      name: 'Spring picture',
      content_base64: png.toString('base64'),
    });
    const assetId = saved.asset.asset_id;
    const { run, claim } = await claimedRunFor(ad);
    const done = await calls.ok<{ proposals: (Proposal & { variant: { asset_id?: string } })[] }>(
      'ads_complete_optimization_run',
      {
        run_id: run.run_id,
        claim_token: claim.claim_token,
        outcome: 'proposals',
        summary: 'A picture of the offer.',
        variants: [{ ...variantFor(ad, 'Spring, with a picture'), asset_id: assetId.toUpperCase() }],
      },
    );
    const proposal = done.proposals[0];
    assert.ok(proposal);
    assert.equal(proposal.variant.asset_id, assetId);

    const page = await signIn();
    await page.goto(`${stack.gatewayUrl}/dashboard/proposals/${proposal.proposal_id}`);
    // The image as the reviewer's browser loads it.
    assert.equal(await shownImageWidth(page, `table[data-comparison] img[data-asset="${assetId}"]`), 160);
    await approveOnPage(page, proposal.proposal_id);
    const published = await waitForProposal(proposal.proposal_id, ['published', 'failed']);
    assert.equal(published.status, 'published', JSON.stringify(published));
    const change = await calls.ok<{
      status: string;
      operation: { body: { creative: Record<string, unknown> } };
      uploads: { asset_id: string; sha256: string; file_id: string | null; width: number }[];
      applied_differences: string[];
    }>('ads_get_change', { change_id: published.change_id });
    assert.equal(change.status, 'applied');
    // What was reviewed names the asset; the pinned image is the saved one, uploaded as one file.
    assert.equal(change.operation.body.creative.asset_id, assetId);
    assert.equal(change.uploads.length, 1);
    const [upload] = change.uploads;
    assert.equal(upload?.asset_id, assetId);
    assert.equal(upload?.sha256, saved.asset.sha256);
    assert.equal(upload?.width, 160);
    assert.match(upload?.file_id ?? '', /^file_/);
    assert.deepEqual(change.applied_differences, []);
    const live = await calls.ok<{ ad: Ad & { creative: { file_id?: string } } }>('ads_get_ad', {
      account_id: accountId,
      ad_id: ad.id,
    });
    assert.equal(live.ad.creative.title, 'Spring, with a picture');
    assert.equal(live.ad.creative.file_id, upload?.file_id);
    const upstream = seed.accounts[0]?.upstream_account_id ?? '';
    assert.equal((await sandboxLedger(stack, upstream, '/files')).length, 1);
    assert.equal((await sandboxLedger(stack, upstream, `/ads/${ad.id}`)).length, 1);
    // The change page shows the image with what was pinned and the file it became.
    await page.goto(`${stack.gatewayUrl}/dashboard/changes/${published.change_id}`);
    const figure = await page.locator(`#creative-preview figure[data-asset="${assetId}"]`).innerText();
    assert.match(figure, new RegExp(`uploaded as file ${upload?.file_id}`));
    assert.match(figure, new RegExp(saved.asset.sha256));
    assert.match(figure, /Shown on the ad titled “Spring, with a picture”/);
  });

  test("a variant's image is checked as it is submitted and again at publishing, where nothing is sent if it is gone", async () => {
    const ad = nextAd();
    const { run, claim } = await claimedRunFor(ad);
    const png = await sharp({ create: { width: 100, height: 100, channels: 3, background: '#48c' } })
      .png()
      .toBuffer();
    const save = async (account: string, name: string) =>
      (
        await calls.ok<{ asset: { asset_id: string; revision: number } }>('ads_save_campaign_asset', {
          account_id: account,
          name,
          content_base64: png.toString('base64'),
        })
      ).asset;
    const archived = await save(accountId, 'Old picture');
    await calls.ok('ads_archive_campaign_asset', {
      asset_id: archived.asset_id,
      expected_revision: archived.revision,
    });
    const other = seed.accounts.find((a) => a.account_id !== accountId);
    assert.ok(other, 'the demo workspace has a second account');
    const elsewhere = await save(other.account_id, 'Picture of another account');
    const complete = (assetId: string) =>
      calls.refused('ads_complete_optimization_run', {
        run_id: run.run_id,
        claim_token: claim.claim_token,
        outcome: 'proposals',
        summary: 'A picture of the offer.',
        variants: [{ ...variantFor(ad, 'Spring, with a picture'), asset_id: assetId }],
      });
    const unknown = randomUUID();
    const refusals = [
      await complete(unknown),
      await complete(archived.asset_id),
      await complete(elsewhere.asset_id),
    ];
    assert.deepEqual(
      refusals.map((r) => r.code),
      ['invalid_argument', 'invalid_argument', 'invalid_argument'],
    );
    assert.match(
      refusals[0]?.message ?? '',
      new RegExp(`^variants\\[0\\]\\.asset_id ${unknown}: no campaign asset with this id in this workspace`),
    );
    assert.match(refusals[1]?.message ?? '', /^variants\[0\]\.asset_id .*: the campaign asset is archived/);
    assert.match(
      refusals[2]?.message ?? '',
      new RegExp(
        `is a campaign asset of ad account ${other.account_id}, not of the optimizer's ad account ${accountId}`,
      ),
    );
    // Nothing was recorded: the run is still claimed, and completes with a live image.
    const got = await calls.ok<{ run: Run }>('ads_get_optimization_run', { run_id: run.run_id });
    assert.equal(got.run.status, 'claimed');
    const live = await save(accountId, 'Soon archived');
    const done = await calls.ok<{ proposals: Proposal[] }>('ads_complete_optimization_run', {
      run_id: run.run_id,
      claim_token: claim.claim_token,
      outcome: 'proposals',
      summary: 'A picture of the offer.',
      variants: [{ ...variantFor(ad, 'Spring, with a lost picture'), asset_id: live.asset_id }],
    });
    const proposalId = done.proposals[0]?.proposal_id ?? '';
    // An edit is held to the same rule.
    const edit = await calls.refused('ads_edit_optimization_proposal', {
      proposal_id: proposalId,
      expected_revision: 1,
      variant: { ...variantFor(ad, 'Spring, with a picture'), asset_id: unknown },
    });
    assert.match(edit.message, new RegExp(`^variant\\.asset_id ${unknown}: no campaign asset`));
    // Archived after it was submitted: the reviewer is told, and publishing fails naming it.
    await calls.ok('ads_archive_campaign_asset', {
      asset_id: live.asset_id,
      expected_revision: live.revision,
    });
    const page = await signIn();
    await page.goto(`${stack.gatewayUrl}/dashboard/proposals/${proposalId}`);
    assert.match(await page.locator('table[data-comparison]').innerText(), /unknown or archived/);
    await approveOnPage(page, proposalId);
    const failed = await waitForProposal(proposalId, ['failed', 'published']);
    assert.equal(failed.status, 'failed');
    assert.match(
      (failed as Proposal & { change_error: string }).change_error,
      new RegExp(`asset_id\` ${live.asset_id}: the campaign asset is archived`),
    );
    const ledger = await sandboxLedger(stack, seed.accounts[0]?.upstream_account_id ?? '', `/ads/${ad.id}`);
    assert.deepEqual(ledger, []);
  });

  test('pausing the optimizer cancels its open run and refuses new reviews', async () => {
    const ad = nextAd();
    const optimizerId = await optimizerFor(ad);
    const { run } = await calls.ok<{ run: Run }>('ads_request_optimization_review', {
      optimizer_id: optimizerId,
    });
    await calls.ok('ads_pause_optimizer', { optimizer_id: optimizerId });
    const got = await calls.ok<{ run: Run }>('ads_get_optimization_run', { run_id: run.run_id });
    assert.equal(got.run.status, 'cancelled');
    const err = await calls.refused('ads_request_optimization_review', { optimizer_id: optimizerId });
    assert.match(err.message, /paused/);
  });
});
