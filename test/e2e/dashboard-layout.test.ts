/**
 * Every dashboard page, in Chromium at 1280 and 390 pixels, against the whole stack with the
 * demo seeded (a change prepared by an agent and an optimization proposal awaiting review): the
 * document is no wider than the window, no word in a table cell is broken across lines or reaches
 * past its cell, and axe-core finds no serious or critical accessibility violation. With
 * DASHBOARD_SCREENSHOTS set to a directory, each page is saved there at both widths
 * (scripts/dashboard-screenshots.ts writes docs/dashboard/ that way).
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { launchBrowser } from '@adsmcp/testkit/browser';
import { addPerson, signInToDashboard } from '@adsmcp/testkit/dashboard';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import { optimizerConfig, QUICK_REVIEW } from '@adsmcp/testkit/optimizer-config';
import { type ToolCalls, toolCalls } from '@adsmcp/testkit/tool-calls';
import pg from 'pg';
import type { Browser, BrowserContext, Page } from 'playwright-core';

let e2e: SeededStack;
let agent: McpTestClient;
let calls: ToolCalls;
let browser: Browser;
let context: BrowserContext;
let axeSource: string;
let staleChangeId: string;
const shots = process.env.DASHBOARD_SCREENSHOTS;

/** The pages checked, by name; a page being added elsewhere is one more line. */
const pages: { name: string; path: string; optional?: boolean }[] = [];

const WIDTHS = [1280, 390] as const;
/**
 * Longer runs without a space (pasted ids, URLs) may wrap anywhere by design; shorter words may
 * not. A line may end after a hyphen, as text does, so each part of a hyphenated word is one word.
 */
const LONGEST_WORD_CHECKED = 40;

interface Ad {
  id: string;
  campaign_id: string;
  status: string;
}

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '200' } });
  const { stack, seed } = e2e;
  agent = await connectClient('v2-2026', stack.mcpUrl, seed.token);
  calls = toolCalls(() => agent);
  axeSource = await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  const [account] = seed.accounts;
  assert.ok(account);
  const { ads } = await calls.ok<{ ads: Ad[] }>('ads_list_ads', {
    account_id: account.account_id,
    limit: 20,
  });
  const [ad, other, third] = ads.filter((a) => a.status !== 'archived' && a.status !== 'deleted');
  assert.ok(ad && other && third, 'the demo account has three ads to change');
  const change = await calls.ok<{ change_id: string }>('ads_update_ad', {
    account_id: account.account_id,
    ad_id: other.id,
    body: { name: 'Spring sale — reviewed by a person before it goes live' },
  });
  // A change whose ad is then renamed on the platform: it can no longer be approved.
  const stale = await calls.ok<{ change_id: string }>('ads_update_ad', {
    account_id: account.account_id,
    ad_id: third.id,
    body: { name: 'Autumn sale' },
  });
  staleChangeId = stale.change_id;
  const db = new pg.Client({ connectionString: e2e.db.url });
  await db.connect();
  await db.query(
    'UPDATE ads_sandbox.ads SET name = $1, revision = revision + 1, updated_at = now() WHERE id = $2 AND account_id = $3',
    ['Renamed in the platform console', third.id, account.upstream_account_id],
  );
  await db.end();
  const { optimizer } = await calls.ok<{ optimizer: { optimizer_id: string } }>('ads_save_optimizer', {
    account_id: account.account_id,
    name: 'Weekly creative review',
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
        name: 'Name the spring offer',
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
  pages.push(
    { name: 'inbox', path: '/dashboard/inbox' },
    { name: 'overview', path: '/dashboard' },
    { name: 'changes', path: '/dashboard/changes' },
    { name: 'change', path: `/dashboard/changes/${change.change_id}` },
    { name: 'proposals', path: '/dashboard/proposals' },
    { name: 'proposal', path: `/dashboard/proposals/${proposalId}` },
    { name: 'accounts', path: '/dashboard/accounts' },
    { name: 'account', path: `/dashboard/accounts/${account.account_id}` },
    { name: 'connections', path: '/dashboard/connections' },
    { name: 'members', path: '/dashboard/members' },
    { name: 'features', path: '/dashboard/features' },
    { name: 'settings', path: '/dashboard/settings' },
    { name: 'audit', path: '/dashboard/audit' },
    { name: 'webhooks', path: '/dashboard/webhooks', optional: true },
    { name: 'controls', path: `/dashboard/accounts/${account.account_id}/controls`, optional: true },
  );
  // A spend envelope of 50.00 in the account currency, for its use to be charted.
  await stack.admin(['set-envelope', '--account', account.account_id, '--micros', '50000000']);
  const admin = await addPerson(
    stack,
    seed.workspaceId,
    'admin',
    'layout-admin@demo.example',
    'layout-password-1',
  );
  browser = await launchBrowser();
  ({ context } = await signInToDashboard(browser, stack.gatewayUrl, admin));
});

after(async () => {
  await context?.close();
  await agent?.close();
  await browser?.close();
  await e2e?.stop();
});

/** What a page's layout check found, measured in the page (a string: this file has no DOM types). */
interface Layout {
  documentWidth: number;
  windowWidth: number;
  brokenWords: string[];
}

const MEASURE = `(() => {
  const broken = [];
  for (const cell of document.querySelectorAll('td, th')) {
    const box = cell.getBoundingClientRect();
    if (box.width === 0 || getComputedStyle(cell).display === 'none') continue;
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (node.parentElement.closest('.sr-only, svg')) continue;
      for (const m of node.data.matchAll(/[^\\s-]+-?/g)) {
        if ([...m[0]].length > ${LONGEST_WORD_CHECKED}) continue;
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const rects = [...range.getClientRects()].filter((r) => r.width > 0);
        const tops = new Set(rects.map((r) => Math.round(r.top)));
        const right = Math.max(...rects.map((r) => r.right));
        if (tops.size > 1 || right > box.right + 1) broken.push(m[0] + ' in a ' + Math.round(box.width) + ' px cell');
      }
    }
  }
  return { documentWidth: document.documentElement.scrollWidth, windowWidth: window.innerWidth, brokenWords: broken };
})()`;

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

async function seriousViolations(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol, so the page's script policy (one hashed script) stays as served.
  await page.evaluate(axeSource);
  const violations = (await page.evaluate(
    `axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations)`,
  )) as AxeViolation[];
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

describe('every dashboard page at 1280 and 390 pixels', () => {
  test('no horizontal overflow, no word broken inside a table cell, and no serious accessibility violation', async () => {
    const page = await context.newPage();
    const problems: string[] = [];
    let checked = 0;
    for (const { name, path, optional } of pages) {
      for (const width of WIDTHS) {
        await page.setViewportSize({ width, height: 900 });
        const res = await page.goto(`${e2e.stack.gatewayUrl}${path}`);
        if (optional && res?.status() === 404) break;
        assert.equal(res?.status(), 200, `${name} answers 200`);
        if (shots) await page.screenshot({ path: join(shots, `${name}-${width}.png`), fullPage: true });
        const layout = (await page.evaluate(MEASURE)) as Layout;
        if (layout.documentWidth > layout.windowWidth)
          problems.push(`${name} at ${width}: the document is ${layout.documentWidth} px wide`);
        for (const word of layout.brokenWords)
          problems.push(`${name} at ${width}: "${word}" is broken or overflows`);
        for (const v of await seriousViolations(page)) problems.push(`${name} at ${width}: ${v}`);
        checked += 1;
      }
    }
    assert.ok(checked >= 26, `all 13 pages were checked at both widths (${checked} page views)`);
    assert.deepEqual(problems, []);
  });

  test('the inbox groups what awaits by ad account, marks the stale change, and the navigation counts it', async () => {
    const page = await context.newPage();
    await page.goto(`${e2e.stack.gatewayUrl}/dashboard/inbox`);
    const account = e2e.seed.accounts[0];
    assert.ok(account);
    const section = page.locator(`section[data-inbox-account="${account.account_id.toLowerCase()}"]`);
    const heading = await section.locator('h3').innerText();
    assert.ok(heading.startsWith(account.name), `the section is headed by the account's name: ${heading}`);
    const changes = await section.locator('tr[data-change]').count();
    const proposals = await section.locator('tr[data-proposal]').count();
    assert.ok(changes >= 2 && proposals >= 1, `changes ${changes}, proposals ${proposals}`);
    assert.match(
      await section.locator(`tr[data-change="${staleChangeId}"] .mark.stale`).innerText(),
      /^Stale: can no longer be approved/,
    );
    assert.equal(await section.locator('tr[data-stale]').count(), 1, 'only the renamed ad’s change is stale');
    assert.match(await section.locator('tr[data-proposal]').first().innerText(), /Weekly creative review/);
    const badge = (await page.locator('nav a[href="/dashboard/inbox"] .count').innerText()).trim();
    const total = await page.locator('tr[data-change], tr[data-proposal]').count();
    assert.equal(
      badge.replace(/\s+/g, ' '),
      `${total} awaiting you`,
      'the navigation counts every item the inbox lists',
    );
    assert.equal(await page.locator('nav a[aria-current="page"]').getAttribute('href'), '/dashboard/inbox');

    await page.goto(`${e2e.stack.gatewayUrl}/dashboard/changes`);
    assert.match(
      await page.locator(`tr[data-change="${staleChangeId}"] td.state`).innerText(),
      /Stale: can no longer be approved/,
    );
  });

  test('an empty filtered list names its filters, and a proposal names its optimizer and shows money in the currency', async () => {
    const page = await context.newPage();
    const account = e2e.seed.accounts[0];
    assert.ok(account);
    await page.goto(
      `${e2e.stack.gatewayUrl}/dashboard/changes?status=rejected&account=${account.account_id}`,
    );
    assert.equal(
      (await page.locator('p.empty').innerText()).trim(),
      `No changes match these filters: status rejected, ad account ${account.name}. Clear the filters`,
    );
    await page.goto(`${e2e.stack.gatewayUrl}/dashboard/connections?q=nobody-by-this-name&state=revoked`);
    assert.equal(
      (await page.locator('p.empty').innerText()).trim(),
      'No connections match these filters: name or person nobody-by-this-name, state revoked. Clear the filters',
    );
    await page.goto(`${e2e.stack.gatewayUrl}/dashboard/proposals?status=expired`);
    assert.match(
      await page.locator('p.empty').innerText(),
      /^No proposals match these filters: status expired\./,
    );
    await page.goto(`${e2e.stack.gatewayUrl}/dashboard/proposals`);
    await page.locator('#proposals a', { hasText: 'Review' }).first().click();
    const facts = await page.locator('section').first().innerText();
    assert.match(facts, /Optimizer\s+Weekly creative review/);
    assert.doesNotMatch(facts, /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/, 'no raw ISO time');
    const spend = await page.locator('[data-evidence] tr', { hasText: 'Spend' }).locator('td').innerText();
    assert.match(spend, /\(\d+ micros\)/);
    assert.ok(
      (await page.locator('[data-evidence] data[data-currency]').first().getAttribute('data-currency')) ===
        account.currency,
      'the spend is in the account currency',
    );
  });

  test('the account page charts the sandbox insights, with the numbers in a table', async () => {
    const page = await context.newPage();
    const account = e2e.seed.accounts[0];
    assert.ok(account);
    await page.goto(`${e2e.stack.gatewayUrl}/dashboard/accounts/${account.account_id}`);
    for (const chart of [
      account.currency,
      'impressions',
      'clicks',
      'conversions',
      'changes-applied',
      'envelope',
    ]) {
      assert.equal(
        await page.locator(`figure[data-chart="${chart}"] svg[role="img"]`).count(),
        1,
        `${chart} is charted`,
      );
    }
    const impressions = await page
      .locator('#performance-numbers tbody td:nth-child(3)')
      .evaluateAll((cells) => cells.map((c) => Number((c.textContent ?? '').replaceAll(',', ''))));
    assert.equal(impressions.length, 14, 'fourteen days are listed');
    assert.ok(
      impressions.every((n) => n > 0),
      `the sandbox delivered on every day: ${impressions.join(' ')}`,
    );
    assert.match(
      await page.locator('[data-envelope]').innerText(),
      /^Used .+ \(0 micros\) of .+ \(50000000 micros\) in the last 24 hours \(0%\)\.$/,
    );
    const label =
      (await page.locator('figure[data-chart="impressions"] svg').getAttribute('aria-label')) ?? '';
    const total = impressions.reduce((a, b) => a + b, 0);
    assert.match(label, new RegExp(`total ${total}\\b`), 'the chart says the total the table sums to');
  });

  test('the dashboard answers an address with a trailing slash with the page, and an unknown one with a 404 page', async () => {
    const base = e2e.stack.gatewayUrl;
    const slash = await fetch(`${base}/dashboard/`, { redirect: 'manual' });
    assert.equal(slash.status, 301);
    assert.equal(slash.headers.get('location'), '/dashboard');
    const list = await fetch(`${base}/dashboard/changes/?status=prepared`, { redirect: 'manual' });
    assert.equal(list.headers.get('location'), '/dashboard/changes?status=prepared');
    const missing = await fetch(`${base}/dashboard/no-such-page`);
    assert.equal(missing.status, 404);
    assert.match(missing.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(
      await missing.text(),
      /There is no dashboard page at <code>\/dashboard\/no-such-page<\/code>/,
    );
  });
});
