/**
 * What a person reads before approving, in Chromium and on the operator's terminal, against the
 * whole stack and through the official MCP client: a landing page on a look-alike host is shown
 * with its ASCII host, the Unicode form and a warning beside it (never the Unicode host alone,
 * never as a link); a title's repeated and trailing spaces show as ␣ with the legend; an ad name
 * with stacked marks from the platform is shown bounded; and a change that breaks a standard saved
 * after it was prepared says why and offers no Approve button.
 */
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { archiveAccountStandards } from '@adsmcp/testkit/account-standards';
import { launchBrowser } from '@adsmcp/testkit/browser';
import { signInToDashboard } from '@adsmcp/testkit/dashboard';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import type { SeedResult, Stack } from '@adsmcp/testkit/stack';
import { toolCalls } from '@adsmcp/testkit/tool-calls';
import pg from 'pg';
import type { Browser, BrowserContext, Page } from 'playwright-core';

let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
let agent: McpTestClient;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let account: SeedResult['accounts'][number];
let ads: { id: string; name: string; status: string; creative?: { target_url?: string } }[];
let domains: { standard_id: string; revision: number };

const { ok } = toolCalls(() => agent);

/** `shop.example.com` with a Cyrillic "а" (U+0430) for the Latin "a". */
const LOOKALIKE = 'https://shop.ex\u0430mple.com/spring';
const UNICODE_HOST = 'shop.ex\u0430mple.com';
const A_LABEL = 'shop.xn--exmple-4nf.com';
const WARNING = `Look-alike host: ${A_LABEL} is shown as "${UNICODE_HOST}": mixed Latin and Cyrillic letters; looks like shop.example.com.`;
/** Nine marks stacked on the "e" of "Sale". */
const NINE_MARKS = '\u0301\u0336\u0317\u035C\u0300\u0316\u0334\u0327\u0350';

interface ChangeView {
  change_id: string;
  summary: string;
}

/** An ad of the seeded account no other test here changes; `linking` picks one with that landing page. */
function takeAd(linking?: string): { id: string } {
  const i = ads.findIndex((a) => linking === undefined || a.creative?.target_url?.startsWith(linking));
  const [ad] = i < 0 ? [] : ads.splice(i, 1);
  assert.ok(ad, 'an ad is left to change');
  return ad;
}

/** Renames an ad on the platform directly, as the platform's own console would, unchecked. */
async function renameOnPlatform(adId: string, name: string): Promise<void> {
  const c = new pg.Client({ connectionString: e2e.db.url });
  await c.connect();
  try {
    const res = await c.query(
      'UPDATE ads_sandbox.ads SET name = $1, revision = revision + 1, updated_at = now() WHERE id = $2 AND account_id = $3',
      [name, adId, account.upstream_account_id],
    );
    assert.equal(res.rowCount, 1, 'the ad was renamed on the platform');
  } finally {
    await c.end();
  }
}

const review = async (changeId: string) => {
  await page.goto(`${stack.gatewayUrl}/dashboard/changes/${changeId}`);
};
const escaped = (literal: string) => literal.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** A computed style property of the first element `selector` finds (this package is not typed for the DOM). */
const styleOf = (selector: string, property: 'whiteSpace' | 'overflow') =>
  page
    .locator(selector)
    .first()
    .evaluate(
      (el, p) =>
        (globalThis as unknown as { getComputedStyle(e: unknown): Record<string, string> }).getComputedStyle(
          el,
        )[p],
      property,
    );
const text = (selector: string) => page.locator(selector).innerText();

/**
 * What `admin approve` prints before it asks; without a terminal it then refuses to approve, so
 * the command fails, and its error output is that text followed by the refusal.
 */
async function adminApproveShows(changeId: string): Promise<string> {
  const shown = await stack.admin(['approve', changeId, '--workspace', seed.workspaceId]).then(
    () => assert.fail('approve without --yes and without a terminal must not approve'),
    (err: Error) => err.message,
  );
  assert.match(shown, /approve asks for confirmation on a terminal and there is none/);
  return shown;
}

/** Every place `shown` writes the Unicode host, the A-label comes just before it: never alone. */
function assertUnicodeHostOnlyBesideALabel(shown: string, where: string): void {
  const at = [...shown.matchAll(/shop\.exаmple\.com/g)].map((m) => m.index);
  assert.ok(at.length > 0, `${where} shows the Unicode form`);
  for (const i of at) {
    assert.ok(
      shown.slice(Math.max(0, i - 80), i).includes(A_LABEL),
      `${where} writes the Unicode host beside the A-label: …${shown.slice(Math.max(0, i - 80), i + 20)}…`,
    );
  }
}

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '500' } });
  ({ stack, seed } = e2e);
  account = seed.accounts.find((a) => a.currency === 'USD') as SeedResult['accounts'][number];
  agent = await connectClient('v2-2026', stack.mcpUrl, seed.token);
  browser = await launchBrowser();
  ({ context, page } = await signInToDashboard(browser, stack.gatewayUrl, {
    email: seed.dashboardUser,
    password: seed.dashboardPassword as string,
  }));
  const list = await ok<{ ads: typeof ads }>('ads_list_ads', { account_id: account.account_id, limit: 20 });
  ads = list.ads.filter((a) => a.status !== 'archived');
  assert.ok(ads.length >= 5, 'the seeded account has ads to change');
  // The exact A-label is listed, which is what lets a change link to the look-alike host at all.
  ({ standard: domains } = await ok<{ standard: typeof domains }>('ads_save_account_standard', {
    account_id: account.account_id,
    name: 'Our domains',
    kind: 'standard',
    data: { allowed_domains: [A_LABEL, 'example.com'] },
  }));
});

after(async () => {
  await context?.close().catch(() => undefined);
  await agent?.close();
  await browser?.close();
  await e2e?.stop();
});

describe('a landing page on a look-alike host', () => {
  test('the review page, the lists and admin approve show the A-label with the Unicode form and a warning beside it, never the Unicode host alone, never as a link', async () => {
    const ad = takeAd('https://shop.example.com/');
    const prepared = await ok<ChangeView>('ads_update_ad', {
      account_id: account.account_id,
      ad_id: ad.id,
      body: { creative: { target_url: LOOKALIKE } },
    });

    await review(prepared.change_id);
    const table = await text('#what-changes');
    assert.ok(table.includes(`"https://${A_LABEL}/spring"`), table);
    assert.ok(table.includes(WARNING), table);
    const payload = await text('#payload');
    assert.ok(payload.includes(`"target_url":"https://${A_LABEL}/spring"`), payload);
    assert.ok(payload.includes(WARNING), payload);
    // The warning is an alert, in the table and beside the request, where a reviewer cannot miss it.
    const alerts = page.locator('[role=alert][data-host-warning]');
    assert.equal(await alerts.count(), 2);
    for (const alert of await alerts.all()) {
      assert.equal(await alert.isVisible(), true);
      assert.match(await alert.innerText(), /^⚠ Look-alike host: shop\.xn--exmple-4nf\.com is shown as/);
    }
    assert.match(await text('#payload-note'), /the request sends the text as written/);
    assertUnicodeHostOnlyBesideALabel(await text('body'), 'the review page');
    const hrefs = await page
      .locator('a[href]')
      .evaluateAll((links) =>
        links.map((a) => `${a.getAttribute('href')} ${(a as unknown as { href: string }).href}`),
      );
    for (const href of hrefs) {
      assert.ok(!/exmple|exаmple/.test(href), `no link points at the look-alike host: ${href}`);
    }
    await page.screenshot({ path: join(tmpdir(), 'review-surfaces-lookalike.png'), fullPage: true });

    for (const path of ['/dashboard/changes', '/dashboard']) {
      await page.goto(`${stack.gatewayUrl}${path}`);
      const row = await text(`tr[data-change="${prepared.change_id}"]`);
      assert.ok(row.includes(`"https://${A_LABEL}/spring" (its host ${A_LABEL} is shown as`), row);
      assertUnicodeHostOnlyBesideALabel(await text('body'), path);
    }

    const terminal = await adminApproveShows(prepared.change_id);
    const line = `"https://${A_LABEL}/spring" (WARNING, look-alike host: ${A_LABEL} is shown as "${UNICODE_HOST}": mixed Latin and Cyrillic letters; looks like shop.example.com; the link goes to ${A_LABEL})`;
    assert.match(
      terminal,
      new RegExp(
        `^ {2}creative\\.target_url: "https://shop\\.example\\.com/[^"]*" -> ${escaped(line)}$`,
        'm',
      ),
    );
    assert.match(terminal, new RegExp(`^ +"target_url": ${escaped(line)}$`, 'm'));
    assertUnicodeHostOnlyBesideALabel(terminal, 'admin approve');
    assert.equal(
      (await ok<{ status: string }>('ads_get_change', { change_id: prepared.change_id })).status,
      'prepared',
      'nothing was approved without a confirmation',
    );
  });
});

describe('spaces in reviewed text', () => {
  test('a title "Sale  now " shows as Sale␣␣now␣ with the legend on the page and in admin approve', async () => {
    const prepared = await ok<ChangeView>('ads_update_ad', {
      account_id: account.account_id,
      ad_id: takeAd().id,
      body: { creative: { title: 'Sale  now ' } },
    });
    await review(prepared.change_id);
    const summary = await text('h2.summary');
    assert.ok(summary.includes('→ "Sale␣␣now␣" (␣ is a space)'), summary);
    const table = await text('#what-changes');
    assert.ok(table.includes('"Sale␣␣now␣"'), table);
    assert.ok((await text('#payload')).includes('{"creative":{"title":"Sale␣␣now␣"}}'));
    assert.equal(await page.locator('[data-legend]').count(), 2, 'under the table and under the request');
    for (const legend of await page.locator('[data-legend]').all()) {
      assert.equal((await legend.innerText()).trim(), '␣ is a space');
      assert.equal(await legend.isVisible(), true);
    }
    // Where a reviewed value is shown, white space is kept as it is.
    for (const selector of ['h2.summary', '#what-changes .v', '#payload']) {
      const ws = await styleOf(selector, 'whiteSpace');
      assert.equal(ws, 'pre-wrap', selector);
    }
    await page.screenshot({ path: join(tmpdir(), 'review-surfaces-spaces.png'), fullPage: true });
    const terminal = await adminApproveShows(prepared.change_id);
    assert.match(terminal, /^ {2}creative\.title: "[^"]*" -> "Sale␣␣now␣"$/m);
    assert.match(terminal, /^\(␣ is a space\)$/m);
  });

  test('a no-break space the summary shows as ⟨U+00A0⟩ is shown as that token, not with its brackets spelled out', async () => {
    const prepared = await ok<ChangeView>('ads_update_ad', {
      account_id: account.account_id,
      ad_id: takeAd().id,
      body: { creative: { title: '10\u00A0€ off' } },
    });
    assert.ok(prepared.summary.includes('"10⟨U+00A0⟩€ off"'), prepared.summary);
    await review(prepared.change_id);
    const summary = await text('h2.summary');
    assert.ok(summary.includes('"10⟨U+00A0⟩€ off"'), summary);
    assert.ok(!summary.includes('U+27E8'), summary);
    assert.ok((await text('#what-changes')).includes('"10⟨U+00A0⟩€ off"'));
    await page.goto(`${stack.gatewayUrl}/dashboard/changes`);
    const row = await text(`tr[data-change="${prepared.change_id}"]`);
    assert.ok(row.includes('"10⟨U+00A0⟩€ off"') && !row.includes('U+27E8'), row);
    await page.goto(`${stack.gatewayUrl}/dashboard/audit?object=${prepared.change_id}`);
    // The log's rows are keyed by their number; the change's prepare is the row that says so.
    const event = await text('tr[data-event]:has(td.what:text-is("change prepared")) td.detail');
    assert.ok(event.includes('"10⟨U+00A0⟩€ off"') && !event.includes('U+27E8'), event);
    const terminal = await adminApproveShows(prepared.change_id);
    assert.match(terminal, /^Summary: .*"10⟨U\+00A0⟩€ off"/m);
    assert.doesNotMatch(terminal, /U\+27E8/);
  });
});

describe('stacked marks from the platform', () => {
  test('an ad named with 9 marks on one character on the platform is shown with them as a token, on the page, the list and the terminal', async () => {
    const ad = takeAd();
    const name = `Sale${NINE_MARKS}!`;
    await renameOnPlatform(ad.id, name);
    const prepared = await ok<ChangeView>('ads_update_ad', {
      account_id: account.account_id,
      ad_id: ad.id,
      body: { name: 'Sale plain' },
    });
    await review(prepared.change_id);
    assert.ok(!(await page.content()).includes(NINE_MARKS), 'no run of 9 marks reaches the page');
    assert.ok((await text('h2.summary')).includes('"Sale⟨9 combining marks⟩!"'));
    const row = page.locator('#what-changes tbody tr', { hasText: 'name' }).first();
    assert.ok((await row.innerText()).includes('"Sale⟨9 combining marks⟩!"'));
    // A second line of defence: a value's box clips whatever would draw outside it.
    const overflow = await styleOf('#what-changes .v', 'overflow');
    await page.screenshot({ path: join(tmpdir(), 'review-surfaces-marks.png'), fullPage: true });
    assert.equal(overflow, 'hidden');
    await page.goto(`${stack.gatewayUrl}/dashboard/changes`);
    assert.ok(!(await page.content()).includes(NINE_MARKS), 'nor the changes list');
    assert.ok((await text(`tr[data-change="${prepared.change_id}"]`)).includes('Sale⟨9 combining marks⟩!'));
    const terminal = await adminApproveShows(prepared.change_id);
    assert.ok(!terminal.includes(NINE_MARKS));
    assert.match(terminal, /^ {2}name: "Sale⟨9 combining marks⟩!" -> "Sale plain"$/m);
  });
});

describe('a change that breaks the account’s standards as they are now', () => {
  test('prepared before a naming prefix it breaks, its page gives the standards reason and no Approve button', async () => {
    const prepared = await ok<ChangeView>('ads_update_ad', {
      account_id: account.account_id,
      ad_id: takeAd().id,
      body: { name: 'Spring plain name' },
    });
    await review(prepared.change_id);
    assert.equal(await page.locator('#approve').count(), 1, 'approvable before the standard is saved');

    await ok('ads_save_account_standard', {
      account_id: account.account_id,
      name: 'Naming',
      kind: 'standard',
      data: { naming_prefix: 'ACME-' },
    });
    try {
      await review(prepared.change_id);
      assert.match(
        await text('#stale'),
        /can no longer be approved: it breaks the account's standards or spend guard as they are now: body\.name must start with ACME-/,
      );
      assert.equal(await page.locator('#approve').count(), 0);
      assert.equal(await page.getByRole('button', { name: 'Approve' }).count(), 0);
      assert.equal(await page.locator('#reject').count(), 1, 'it can still be rejected');
    } finally {
      await archiveAccountStandards(e2e.db.url, account.account_id);
    }
  });
});
