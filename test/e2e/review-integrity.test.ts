/**
 * Approval integrity, as a careful reviewer meets it in a real browser against the whole stack:
 * the text read on the review page is the payload applied, invisible characters from the
 * platform's live state are shown, a change whose object moved cannot be approved, and changes to
 * the same object are marked as conflicting, an approved one as waiting for the agent.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { launchBrowser } from '@adsmcp/testkit/browser';
import { signInToDashboard } from '@adsmcp/testkit/dashboard';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import type { TestDatabase } from '@adsmcp/testkit/postgres';
import type { SeedResult, Stack } from '@adsmcp/testkit/stack';
import { sandboxLedger, toolCalls } from '@adsmcp/testkit/tool-calls';
import pg from 'pg';
import type { Browser, BrowserContext, Page } from 'playwright-core';

let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
let db: TestDatabase;
let agent: McpTestClient;
let browser: Browser;
let account: SeedResult['accounts'][number];
let ads: { id: string; name: string; status: string }[];
const contexts: BrowserContext[] = [];

interface ChangeView {
  change_id: string;
  status: string;
  digest: string;
  error?: string;
}

/** An ad of the seeded account no other test touches. */
function takeAd(): { id: string; name: string; status: string } {
  const ad = ads.shift();
  assert.ok(ad, 'an ad is left to change');
  return ad;
}

/** Changes an ad on the platform directly, as someone in the platform's own console would. */
async function editOnPlatform(adId: string, name: string): Promise<void> {
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  try {
    const res = await c.query(
      'UPDATE ads_sandbox.ads SET name = $1, revision = revision + 1, updated_at = now() WHERE id = $2 AND account_id = $3',
      [name, adId, account.upstream_account_id],
    );
    assert.equal(res.rowCount, 1, 'the ad was edited on the platform');
  } finally {
    await c.end();
  }
}

async function signIn(): Promise<{ context: BrowserContext; page: Page }> {
  const { context, page } = await signInToDashboard(browser, stack.gatewayUrl, {
    email: seed.dashboardUser,
    password: seed.dashboardPassword as string,
  });
  contexts.push(context);
  return { context, page };
}

const review = (page: Page, changeId: string) =>
  page.goto(`${stack.gatewayUrl}/dashboard/changes/${changeId}`);

/** Clicks Approve and waits for the page the form lands on; resolves with the POST's status. */
async function clickApprove(page: Page): Promise<number> {
  const [res] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/approve')),
    page.click('#approve'),
  ]);
  await page.waitForLoadState();
  return res.status();
}

const { ok, waitForChange: waitForStatus } = toolCalls(() => agent);
/** The sandbox's ledger of mutations applied to the account, for one path. */
const ledger = (path: string) => sandboxLedger(stack, account.upstream_account_id, path);

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '500' } });
  ({ stack, seed, db } = e2e);
  account = seed.accounts.find((a) => a.currency === 'USD') as SeedResult['accounts'][number];
  agent = await connectClient('v2-2026', stack.mcpUrl, seed.token);
  browser = await launchBrowser();
  const list = await ok<{ ads: typeof ads }>('ads_list_ads', { account_id: account.account_id, limit: 20 });
  ads = list.ads.filter((a) => a.status !== 'archived');
  assert.ok(ads.length >= 6, 'the seeded account has ads to change');
});

after(async () => {
  for (const c of contexts) await c.close().catch(() => undefined);
  await agent?.close();
  await browser?.close();
  await e2e?.stop();
});

describe('what the reviewer reads is what is applied', () => {
  test('the exact request text on the review page is the body the ad platform receives', async () => {
    const ad = takeAd();
    const body = {
      name: 'Spring: "50% off" <b>& more</b> — שלום 🎉',
      creative: { title: 'Café déjà vu', body: 'From $9.99 → €8,50 \\ 1 < 2' },
    };
    const prepared = await ok<ChangeView>('ads_update_ad', {
      account_id: account.account_id,
      ad_id: ad.id,
      body,
    });

    const { page } = await signIn();
    await review(page, prepared.change_id);
    const requestLine = (await page.locator('#request-line').innerText()).trim();
    const payloadText = await page.locator('#payload').innerText();
    const shownDigest = (await page.locator('#digest').innerText()).trim();
    assert.equal(requestLine, `POST /ads/${ad.id}`);
    // The digest the person approves covers exactly the bytes they read.
    const [method, path] = requestLine.split(' ') as [string, string];
    assert.equal(
      createHash('sha256').update(`${method}\n${path}\n${payloadText}`, 'utf8').digest('hex'),
      shownDigest,
      'the payload text on the page is the digested payload, byte for byte',
    );
    assert.equal(shownDigest, prepared.digest);

    assert.equal(await clickApprove(page), 303, 'approved and sent back to the review page');
    assert.equal((await page.locator('#status').innerText()).trim(), 'approved');
    const applied = await ok<ChangeView>('ads_apply_change', { change_id: prepared.change_id });
    const final =
      applied.status === 'applied' ? applied : await waitForStatus(prepared.change_id, ['applied', 'failed']);
    assert.equal(final.status, 'applied', JSON.stringify(final));

    const rows = await ledger(path);
    assert.equal(rows.length, 1, 'applied once');
    assert.equal(rows[0]?.method, method);
    assert.deepEqual(rows[0]?.request_body, JSON.parse(payloadText), 'the page text is the applied body');
    assert.deepEqual(rows[0]?.request_body, body);
  });
});

describe('invisible characters from the live state are shown, never obeyed', () => {
  test('a U+202E in an ad name on the platform shows as ⟨U+202E⟩ on the review page and the lists', async () => {
    const ad = takeAd();
    const tricky = 'Sale \u202Edesuap\u202C tonight\u200B';
    const shown = 'Sale ⟨U+202E⟩desuap⟨U+202C⟩ tonight⟨U+200B⟩';
    await editOnPlatform(ad.id, tricky);
    const prepared = await ok<ChangeView>('ads_archive_ad', { account_id: account.account_id, ad_id: ad.id });

    const { page } = await signIn();
    const pages = [
      [`/dashboard/changes/${prepared.change_id}`, 'h2'],
      ['/dashboard/changes', `tr[data-change="${prepared.change_id}"]`],
      ['/dashboard', `tr[data-change="${prepared.change_id}"]`],
    ] as const;
    for (const [path, where] of pages) {
      await page.goto(`${stack.gatewayUrl}${path}`);
      const html = await page.content();
      for (const c of ['\u202E', '\u202C', '\u200B'])
        assert.ok(!html.includes(c), `${path} has no raw U+${c.codePointAt(0)?.toString(16)}`);
      const text = await page.locator(where).first().innerText();
      assert.ok(text.includes(shown), `${path} shows the name escaped: ${text}`);
    }
  });
});

describe('a change whose object moved cannot be approved', () => {
  test('the review page says why and offers no Approve button; an approval is refused', async () => {
    const ad = takeAd();
    const prepared = await ok<ChangeView>('ads_update_ad', {
      account_id: account.account_id,
      ad_id: ad.id,
      body: { name: 'Reviewed against the old revision' },
    });
    const { context, page } = await signIn();
    await review(page, prepared.change_id);
    assert.equal(await page.locator('#approve').count(), 1, 'a fresh change can be approved');

    // The object moves while the page is open: the click reaches the changes service, which refuses.
    await editOnPlatform(ad.id, 'Edited in the platform console');
    assert.equal(await clickApprove(page), 409);
    assert.match(
      await page.locator('[role=alert]').innerText(),
      /cannot be approved: the object changed since this change was prepared \(revision \d+, now \d+\)/,
    );
    assert.equal(await page.getByRole('button', { name: 'Approve' }).count(), 0);

    // Opened afresh, the page knows before anyone clicks.
    await review(page, prepared.change_id);
    assert.equal((await page.locator('#status').innerText()).trim(), 'prepared');
    assert.match(
      await page.locator('#stale').innerText(),
      /can no longer be approved: the object changed since this change was prepared/,
    );
    assert.equal(await page.getByRole('button', { name: 'Approve' }).count(), 0);

    // A forged approval (the form posted anyway, with the session's token) is refused too.
    const cookie = (await context.cookies(`${stack.gatewayUrl}/dashboard`)).find(
      (c) => c.name === 'adsmcp_session',
    );
    const csrf = (await page.locator('input[name=csrf]').first().getAttribute('value')) ?? '';
    const forged = await fetch(`${stack.gatewayUrl}/dashboard/changes/${prepared.change_id}/approve`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        cookie: `${cookie?.name}=${cookie?.value}`,
        origin: new URL(stack.gatewayUrl).origin,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ csrf, digest: prepared.digest }).toString(),
    });
    assert.equal(forged.status, 409);
    assert.match(await forged.text(), /changed since this change was prepared/);
    assert.equal(
      (await ok<ChangeView>('ads_get_change', { change_id: prepared.change_id })).status,
      'prepared',
    );
    assert.deepEqual(await ledger(`/ads/${ad.id}`), [], 'nothing reached the account');
  });
});

describe('conflicting and waiting changes', () => {
  test('changes to the same object are marked conflicting; an approved one waits for the agent', async () => {
    const ad = takeAd();
    const other = takeAd();
    const prepare = (adId: string, name: string) =>
      ok<ChangeView>('ads_update_ad', { account_id: account.account_id, ad_id: adId, body: { name } });
    const first = await prepare(ad.id, 'First rename of this ad');
    const second = await prepare(ad.id, 'Second rename of this ad');
    const alone = await prepare(other.id, 'The only change to this ad');

    const { page } = await signIn();
    const mark = (id: string, kind: string) => page.locator(`tr[data-change="${id}"] [data-mark="${kind}"]`);
    for (const path of ['/dashboard/changes', '/dashboard']) {
      await page.goto(`${stack.gatewayUrl}${path}`);
      for (const c of [first, second]) {
        assert.match(
          await mark(c.change_id, 'conflict').innerText(),
          /conflicts with 1 other pending change to the same object/,
          path,
        );
      }
      assert.equal(
        await mark(alone.change_id, 'conflict').count(),
        0,
        `${path}: a lone change is no conflict`,
      );
    }

    await review(page, first.change_id);
    assert.match(await page.locator('#conflicts').innerText(), /Conflicting/);
    const link = page.locator(`#conflicts a[data-change="${second.change_id}"]`);
    assert.equal(await link.getAttribute('href'), `/dashboard/changes/${second.change_id}`);
    await review(page, alone.change_id);
    assert.equal(await page.locator('#conflicts').count(), 0);

    // Approved, not yet applied: waiting for the agent, on the page and in the list.
    await review(page, first.change_id);
    assert.equal(await clickApprove(page), 303, 'approved and sent back to the review page');
    assert.equal((await page.locator('#status').innerText()).trim(), 'approved');
    assert.match(
      await page.locator('#waiting').innerText(),
      /waiting for the agent to apply it \(ads_apply_change\)/,
    );
    await page.goto(`${stack.gatewayUrl}/dashboard/changes`);
    assert.match(await mark(first.change_id, 'waiting').innerText(), /waiting for the agent to apply it/);
    assert.equal(await mark(second.change_id, 'waiting').count(), 0, 'a prepared change is not waiting');

    // Once applied it waits no more, and the other change to the object is stale, not conflicting.
    await ok('ads_apply_change', { change_id: first.change_id });
    assert.equal((await waitForStatus(first.change_id, ['applied', 'failed'])).status, 'applied');
    await page.goto(`${stack.gatewayUrl}/dashboard/changes`);
    assert.equal(await mark(first.change_id, 'waiting').count(), 0);
    assert.equal(await mark(second.change_id, 'conflict').count(), 0);
    await review(page, second.change_id);
    assert.equal(await page.locator('#conflicts').count(), 0);
    assert.match(await page.locator('#stale').innerText(), /changed since this change was prepared/);
    assert.equal(await page.getByRole('button', { name: 'Approve' }).count(), 0);
  });
});
