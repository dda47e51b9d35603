/**
 * Account controls end to end, through the official MCP client, the real processes and a person in
 * Chromium: two ad batches that each fit the account's spend envelope, applied at the same moment,
 * together exceed it and one is refused unsent (the sandbox's ledger as the witness); a person
 * freezes an account while an apply waits, the apply is held unsent, the freeze shows in
 * ads_get_connection_context, ads_list_accounts and the dashboard's banner, prepares are refused,
 * and unfreezing sends the held change.
 *
 * The batches' source images are served by a local HTTPS site, so this file runs the marketing
 * service (which fetches them) in the test's process, as test/e2e/ad-batch.test.ts does.
 */

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { launchBrowser } from '@adsmcp/testkit/browser';
import { signInToDashboard } from '@adsmcp/testkit/dashboard';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import type { HttpsSite } from '@adsmcp/testkit/https-site';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import type { SeedResult, Stack } from '@adsmcp/testkit/stack';
import { sandboxLedger, toolCalls } from '@adsmcp/testkit/tool-calls';
import pg from 'pg';
import type { Browser, Page } from 'playwright-core';
import { marketingFetchingFrom, startPngSite } from './in-process-marketing.ts';

let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
let agent: McpTestClient;
let browser: Browser;
let person: Page;
let site: HttpsSite;
let account: SeedResult['accounts'][number];
let acct: string;

interface ChangeView {
  change_id: string;
  status: string;
  digest: string;
  error: string | null;
}
interface Freeze {
  scope: string;
  account_id: string | null;
  reason: string;
  frozen_by: string;
  frozen_at: string;
}

const { ok, call, refused, waitForChange } = toolCalls(() => agent);
const ledger = (path: string) => sandboxLedger(stack, account.upstream_account_id, path);
const IMAGE_HOST = 'img.example.com';

before(async () => {
  site = await startPngSite(IMAGE_HOST);
  e2e = await startSeededStack({
    env: { MCP_RATE_BURST: '500' },
    inProcessMarketing: marketingFetchingFrom(site),
  });
  ({ stack, seed } = e2e);
  account = seed.accounts.find((a) => a.currency === 'USD') as SeedResult['accounts'][number];
  acct = account.account_id;
  agent = await connectClient('v2-2026', stack.mcpUrl, seed.token);
  browser = await launchBrowser();
  ({ page: person } = await signInToDashboard(browser, stack.gatewayUrl, {
    email: seed.dashboardUser,
    password: seed.dashboardPassword as string,
  }));
});

after(async () => {
  await agent?.close();
  await browser?.close();
  await e2e?.stop();
  await site?.close();
});

/** An ad batch of one variant with a daily budget of `budget` dollars, prepared through MCP. */
async function prepareBatch(budget: number): Promise<ChangeView> {
  const { item } = await ok<{ item: { item_id: string; revision: number } }>('ads_save_marketing_item', {
    kind: 'batch',
    name: `Envelope batch ${budget}`,
    data: {
      variants: [
        {
          title: 'Winter pick',
          body: 'Greens that love the cold',
          target_url: 'https://shop.example.com/winter',
          source_image_url: `${site.origin(IMAGE_HOST)}/winter.png`,
        },
      ],
    },
  });
  return ok<ChangeView>('ads_prepare_ad_batch', {
    item_id: item.item_id,
    expected_revision: item.revision,
    account_id: acct,
    campaign_name: `Envelope ${budget}`,
    budget_amount: budget,
    budget_type: 'daily',
    objective: 'clicks',
    bid_micros: 800000,
    countries: ['US'],
  });
}

const approve = (changeId: string) =>
  stack.admin(['approve', changeId, '--workspace', seed.workspaceId, '--yes']);

describe('the spend envelope', () => {
  test('two applies at once that together exceed the envelope: one is applied, the other refused with nothing sent', async () => {
    // A person sets the envelope on the account's controls page.
    await person.goto(`${stack.gatewayUrl}/dashboard/accounts/${acct}/controls`);
    // A value that is not whole micros is refused, naming the field, and stays in it.
    await person.fill('#envelope_micros', '40.5');
    await person.check('#fail_closed');
    await person.click('#save-envelope');
    assert.match(
      (await person.textContent('[role=alert]')) ?? '',
      /envelope_micros must be a whole number of micros/,
    );
    assert.equal(await person.inputValue('#envelope_micros'), '40.5');
    assert.equal(await person.isChecked('#fail_closed'), true);
    await person.uncheck('#fail_closed');
    await person.fill('#envelope_micros', '40000000');
    await person.click('#save-envelope');
    assert.match((await person.textContent('#envelope-amount')) ?? '', /40\.00 USD \(40000000 micros\)/);

    // Each batch fits alone: both are prepared, and the review page says what each uses.
    const first = await prepareBatch(25.5);
    const second = await prepareBatch(25.5);
    await person.goto(`${stack.gatewayUrl}/dashboard/changes/${first.change_id}`);
    assert.match((await person.textContent('#envelope-use')) ?? '', /raises daily budgets by 25\.50 USD/);
    assert.match(
      (await person.textContent('#envelope-left-now')) ?? '',
      /Envelope 40\.00 USD .*: 0\.00 USD .*used, 40\.00 USD .*left/,
    );
    for (const c of [first, second]) await approve(c.change_id);
    const jobsBefore = (await ledger('/bulk_mutation_jobs')).length;

    // The ledger takes no reservation while both are asked to be applied (it can still be read),
    // until both applies wait: each has read what is left, or waits for the other's turn, as two
    // workers (or replicas) at the same moment would.
    const blocker = new pg.Client({ connectionString: e2e.db.url });
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE changes.envelope_uses IN SHARE MODE');
      const asked = Promise.all(
        [first, second].map((c) => call('ads_apply_change', { change_id: c.change_id, digest: c.digest })),
      );
      for (const until = Date.now() + 20_000; Date.now() < until; ) {
        const { rows } = await blocker.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
        );
        if ((rows[0]?.n ?? 0) >= 2) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      await blocker.query('COMMIT');
      await asked;
    } finally {
      await blocker.end();
    }
    const ends = await Promise.all(
      [first, second].map((c) => waitForChange<ChangeView>(c.change_id, ['applied', 'failed'])),
    );
    assert.deepEqual(ends.map((c) => c.status).sort(), ['applied', 'failed']);
    assert.match(
      ends.find((c) => c.status === 'failed')?.error ?? '',
      /^refused before applying, nothing was sent to the ad account: .*spend envelope is 40\.00 USD .* of which 25\.50 USD .* is used and 14\.50 USD .* is left; it raises daily budgets by 25\.50 USD/,
    );
    assert.equal(
      (await ledger('/bulk_mutation_jobs')).length,
      jobsBefore + 1,
      'one job reached the platform',
    );
  });
});

describe('a freeze', () => {
  test('a frozen account refuses prepares, holds an apply that was waiting, and sends it once unfrozen', async () => {
    const { ads } = await ok<{ ads: { id: string; status: string }[] }>('ads_list_ads', {
      account_id: acct,
      limit: 20,
    });
    const ad = ads.find((a) => a.status !== 'archived');
    assert.ok(ad, 'the seeded account has an ad');
    const rename = await ok<ChangeView>('ads_update_ad', {
      account_id: acct,
      ad_id: ad.id,
      body: { name: 'Renamed after the freeze' },
    });
    await approve(rename.change_id);

    // Another apply of the ad is running (an apply message of the ad's key under a live lease: the
    // bus runs one apply of an object at a time), so this apply waits, unsent, while a person
    // freezes the account.
    const holder = new pg.Client({ connectionString: e2e.db.url });
    await holder.connect();
    const running = randomUUID();
    try {
      await holder.query(
        `INSERT INTO changes.bus_outbox (id, topic, key, payload, status, attempts, locked_by, locked_until)
         VALUES ($1, 'changes.apply', $2, '{}', 'running', 1, gen_random_uuid(), now() + interval '10 minutes')`,
        [running, `${acct} /ads/${ad.id}`],
      );
      const asked = await ok<ChangeView>('ads_apply_change', { change_id: rename.change_id });
      assert.equal(asked.status, 'applying');
      await person.goto(`${stack.gatewayUrl}/dashboard/accounts/${acct}/controls`);
      await person.fill('#freeze-reason', 'Quarterly budget review');
      await person.click('#freeze');
      assert.match(
        (await person.textContent('#freeze-state')) ?? '',
        /is frozen since .*Quarterly budget review/,
      );
    } finally {
      await holder.query(
        `UPDATE changes.bus_outbox SET status = 'done', locked_until = NULL, locked_by = NULL WHERE id = $1`,
        [running],
      );
      await holder.end();
    }

    let held = await ok<ChangeView>('ads_get_change', { change_id: rename.change_id });
    for (const until = Date.now() + 10_000; !held.error?.startsWith('held:') && Date.now() < until; ) {
      await new Promise((r) => setTimeout(r, 250));
      held = await ok<ChangeView>('ads_get_change', { change_id: rename.change_id });
    }
    assert.equal(held.status, 'applying');
    assert.match(
      held.error ?? '',
      /^held: ad account .* is frozen since .*: Quarterly budget review; nothing was sent/,
    );
    assert.deepEqual(await ledger(`/ads/${ad.id}`), [], 'nothing reached the platform');

    // The agent is told, by every read of its connection and accounts, and by the refusal.
    const context = await ok<{ freezes: Freeze[] }>('ads_get_connection_context');
    assert.deepEqual(
      context.freezes.map((f) => [f.scope, f.account_id, f.reason]),
      [['account', acct, 'Quarterly budget review']],
    );
    const { accounts } = await ok<{
      accounts: { account_id: string; can_write: boolean; freeze: Freeze | null }[];
    }>('ads_list_accounts');
    const listed = accounts.find((a) => a.account_id === acct);
    assert.equal(listed?.freeze?.reason, 'Quarterly budget review');
    assert.equal(listed?.can_write, false);
    assert.ok(
      accounts.some((a) => a.account_id !== acct && a.freeze === null),
      'the other account is open',
    );
    const prepare = await refused('ads_update_ad', {
      account_id: acct,
      ad_id: ad.id,
      body: { name: 'Another' },
    });
    assert.equal(prepare.code, 'failed_precondition');
    assert.match(
      prepare.message,
      /is frozen since .* Quarterly budget review; nothing may be prepared or applied/,
    );

    // Every dashboard page carries the banner.
    await person.goto(`${stack.gatewayUrl}/dashboard/changes`);
    assert.match(
      (await person.textContent('#freeze-banner')) ?? '',
      /Writes are frozen.*Quarterly budget review/s,
    );

    // Unfrozen, the held change is sent, once.
    await person.goto(`${stack.gatewayUrl}/dashboard/accounts/${acct}/controls`);
    await person.click('#unfreeze');
    assert.match((await person.textContent('#freeze-state')) ?? '', /Writes are open/);
    const applied = await waitForChange<ChangeView>(rename.change_id, ['applied', 'failed']);
    assert.equal(applied.status, 'applied', JSON.stringify(applied));
    assert.equal((await ledger(`/ads/${ad.id}`)).length, 1);
    assert.equal(await person.locator('#freeze-banner').count(), 0, 'the banner is gone');
  });

  test('the operator freezes the whole workspace with npm run admin, shown on the settings page, and unfreezes it', async () => {
    const INCIDENT = "Incident 42: $' and $& as typed";
    const frozen = JSON.parse(
      await stack.admin(['freeze', '--workspace', seed.workspaceId, '--reason', INCIDENT]),
    ) as { frozen: boolean; account_id: string; reason: string };
    assert.deepEqual([frozen.frozen, frozen.account_id, frozen.reason], [true, '', INCIDENT]);
    const context = await ok<{ freezes: Freeze[] }>('ads_get_connection_context');
    assert.deepEqual(
      context.freezes.map((f) => [f.scope, f.account_id, f.reason]),
      [['workspace', null, INCIDENT]],
    );
    const { accounts } = await ok<{ accounts: { freeze: Freeze | null }[] }>('ads_list_accounts');
    assert.ok(
      accounts.every((a) => a.freeze?.scope === 'workspace'),
      'every account is frozen by it',
    );
    await person.goto(`${stack.gatewayUrl}/dashboard/settings`);
    assert.match(
      (await person.textContent('#workspace-freeze-state')) ?? '',
      /whole workspace is frozen.*Incident 42/s,
    );
    // The reason's `$'` and `$&` are shown as typed, not read as a replacement pattern (which
    // copied the rest of the page into the banner).
    assert.ok(((await person.textContent('#freeze-banner')) ?? '').includes(INCIDENT));
    assert.equal(
      (await person.content()).split('</main>').length,
      2,
      'one page, not a page inside its banner',
    );
    const again = await stack
      .admin(['freeze', '--workspace', seed.workspaceId, '--reason', 'x'])
      .catch((e: Error) => e);
    assert.ok(again instanceof Error && /already/.test(again.message), 'a second freeze is refused');

    const lifted = JSON.parse(await stack.admin(['unfreeze', '--workspace', seed.workspaceId])) as {
      frozen: boolean;
      resumed: number;
    };
    assert.deepEqual([lifted.frozen, lifted.resumed], [false, 0]);
    assert.deepEqual((await ok<{ freezes: Freeze[] }>('ads_get_connection_context')).freezes, []);
  });
});
