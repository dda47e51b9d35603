/**
 * Account standards and spend guards end to end: an agent saves standards through the official MCP
 * client, prepares changes that they refuse, and a change prepared before a standard it breaks
 * fails at apply with nothing sent (the sandbox's ledger is the witness); a workspace admin sets a
 * spend cap in a real browser, and the reviewer sees which standards a change was checked against.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { archiveAccountStandards } from '@adsmcp/testkit/account-standards';
import { launchBrowser } from '@adsmcp/testkit/browser';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import type { SeedResult, Stack } from '@adsmcp/testkit/stack';
import { sandboxLedger, toolCalls } from '@adsmcp/testkit/tool-calls';
import type { Browser, Page } from 'playwright-core';

let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
let agent: McpTestClient;
let browser: Browser;
let account: SeedResult['accounts'][number];
let ads: { id: string; name: string; status: string }[];
let adGroups: { id: string; name: string; status: string }[];

interface StandardView {
  standard_id: string;
  account_id: string;
  name: string;
  kind: string;
  data: Record<string, unknown>;
  revision: number;
  archived: boolean;
}

interface ChangeView {
  change_id: string;
  status: string;
  digest: string;
  error: string | null;
}

const { call, ok, refused, waitForChange } = toolCalls(() => agent);

async function saveStandard(name: string, data: Record<string, unknown>, kind = 'standard') {
  const res = await ok<{ standard: StandardView; created: boolean }>('ads_save_account_standard', {
    account_id: account.account_id,
    name,
    kind,
    data,
  });
  return res.standard;
}

/** Archives every standard of the account, so each test starts with none. */
async function archiveAll(): Promise<void> {
  await archiveAccountStandards(e2e.db.url, account.account_id);
}

/** A signed-in browser page of the demo workspace's admin, or of another person. */
async function adminPage(
  who = { email: seed.dashboardUser, password: seed.dashboardPassword as string },
): Promise<Page> {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${stack.gatewayUrl}/dashboard/login`);
  await page.fill('#email', who.email);
  await page.fill('#password', who.password);
  await Promise.all([page.waitForURL(/\/dashboard$/), page.click('button[type=submit]')]);
  return page;
}

async function approveInBrowser(changeId: string): Promise<void> {
  const page = await adminPage();
  try {
    await page.goto(`${stack.gatewayUrl}/dashboard/changes/${changeId}`);
    await Promise.all([
      page.waitForURL(new RegExp(`/dashboard/changes/${changeId}$`)),
      page.click('#approve'),
    ]);
    assert.equal((await page.textContent('#status'))?.trim(), 'approved');
  } finally {
    await page.context().close();
  }
}

const updateAd = (ad: { id: string }, body: Record<string, unknown>) =>
  ok<ChangeView>('ads_update_ad', { account_id: account.account_id, ad_id: ad.id, body });
const refusedUpdate = (ad: { id: string }, body: Record<string, unknown>) =>
  refused('ads_update_ad', { account_id: account.account_id, ad_id: ad.id, body });

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '500' } });
  ({ stack, seed } = e2e);
  account = seed.accounts.find((a) => a.currency === 'USD') as SeedResult['accounts'][number];
  agent = await connectClient('v2-2026', stack.mcpUrl, seed.token);
  browser = await launchBrowser();
  ads = (
    await ok<{ ads: typeof ads }>('ads_list_ads', { account_id: account.account_id, limit: 20 })
  ).ads.filter((a) => a.status !== 'archived');
  adGroups = (
    await ok<{ ad_groups: typeof adGroups }>('ads_list_ad_groups', {
      account_id: account.account_id,
      limit: 20,
    })
  ).ad_groups.filter((g) => g.status !== 'archived');
  assert.ok(ads.length >= 4 && adGroups.length >= 1, 'the seeded account has ads and ad groups');
});

after(async () => {
  await agent?.close();
  await browser?.close();
  await e2e?.stop();
});

describe('saving standards through MCP', () => {
  test('save, list, update at the revision, a stale revision refused with the current one, archive', async () => {
    const created = await saveStandard('Naming', { naming_prefix: 'ACME-', guidance: 'Prefix every name.' });
    assert.equal(created.revision, 1);
    assert.equal(created.data.naming_prefix, 'ACME-');
    const listed = await ok<{ standards: StandardView[]; total: number; next_offset: number | null }>(
      'ads_list_account_standards',
      { account_id: account.account_id },
    );
    assert.deepEqual(
      listed.standards.map((s) => s.standard_id),
      [created.standard_id],
    );
    assert.equal(listed.next_offset, null);
    const updated = await ok<{ standard: StandardView; created: boolean }>('ads_save_account_standard', {
      account_id: account.account_id,
      name: 'Naming',
      kind: 'standard',
      data: { naming_prefix: 'ACME-' },
      standard_id: created.standard_id,
      expected_revision: 1,
    });
    assert.equal(updated.created, false);
    assert.equal(updated.standard.revision, 2);
    const stale = await refused('ads_save_account_standard', {
      account_id: account.account_id,
      name: 'Naming',
      kind: 'standard',
      data: {},
      standard_id: created.standard_id,
      expected_revision: 1,
    });
    assert.equal(stale.code, 'stale_revision');
    assert.match(stale.message, /at revision 2/);
    // Archiving a standard over MCP loosens it: it waits for a person's confirmation.
    const archived = await ok<{ standard: StandardView; pending: { action: string } | null }>(
      'ads_archive_account_standard',
      { standard_id: created.standard_id, expected_revision: 2 },
    );
    assert.equal(archived.standard.archived, false);
    assert.equal(archived.pending?.action, 'archive');
    await archiveAll();
    const after = await ok<{ total: number }>('ads_list_account_standards', {
      account_id: account.account_id,
    });
    assert.equal(after.total, 0);
  });

  test('a template with an access token or a remote id is refused, naming each by its path', async () => {
    const err = await refused('ads_save_account_standard', {
      account_id: account.account_id,
      name: 'Spring ad',
      kind: 'template',
      data: { template: { creative: { title: 'Spring', file_id: 'file_1' }, access_token: 'tok' } },
    });
    assert.equal(err.code, 'invalid_argument');
    assert.match(err.message, /data\.template\.creative\.file_id \(a remote identity field\)/);
    assert.match(err.message, /data\.template\.access_token \(an authorization field\)/);
  });

  test('bad data is refused by the schema, naming the field and the rule', async () => {
    const err = await refused('ads_save_account_standard', {
      account_id: account.account_id,
      name: 'Links',
      kind: 'standard',
      data: { utm: { utm_source: 'ads', utm_id: 'x' }, operating_start: '2026-02-30' },
    });
    assert.equal(err.code, 'invalid_argument');
    assert.match(err.message, /unknown property of `data.utm` `utm_id`/);
    assert.match(err.message, /`data.operating_start` must be a date/);
  });

  test('a naming prefix of white space only is refused: no name a person can read starts with it', async () => {
    const err = await refused('ads_save_account_standard', {
      account_id: account.account_id,
      name: 'Naming',
      kind: 'standard',
      data: { naming_prefix: '   ' },
    });
    assert.equal(err.code, 'invalid_argument');
    assert.match(err.message, /`data.naming_prefix` must contain a visible character, not only white space/);
  });
});

describe('a prepare that breaks a standard is refused, naming the rule and the standard', () => {
  test('naming prefix', async () => {
    await saveStandard('Naming', { naming_prefix: 'ACME-' });
    try {
      const err = await refusedUpdate(ads[0] as { id: string }, { name: 'Spring sale' });
      assert.equal(err.code, 'failed_precondition');
      assert.equal(err.message, 'body.name must start with ACME- (standard Naming)');
    } finally {
      await archiveAll();
    }
  });

  test('allowed domains', async () => {
    await saveStandard('Domains', { allowed_domains: ['example.com'] });
    try {
      const err = await refusedUpdate(ads[0] as { id: string }, {
        creative: { target_url: 'https://elsewhere.test/spring' },
      });
      assert.equal(
        err.message,
        'body.creative.target_url must link to an allowed domain (example.com), not elsewhere.test (standard Domains)',
      );
    } finally {
      await archiveAll();
    }
  });

  test('required UTM parameters', async () => {
    await saveStandard('Tracking', { utm: { utm_source: 'ads', utm_campaign: 'spring' } });
    try {
      const err = await refusedUpdate(ads[0] as { id: string }, {
        creative: { target_url: 'https://example.com/spring?utm_source=ads' },
      });
      assert.equal(
        err.message,
        'body.creative.target_url must carry utm_campaign=spring in its query (it has none) (standard Tracking)',
      );
    } finally {
      await archiveAll();
    }
  });

  test('operating window', async () => {
    await saveStandard('Season', { operating_start: '2020-03-01', operating_end: '2020-03-31' });
    try {
      const err = await refusedUpdate(ads[0] as { id: string }, { name: 'Spring sale' });
      assert.match(
        err.message,
        /^today \(\d{4}-\d{2}-\d{2} in [A-Za-z_/]+\) is outside the operating window 2020-03-01 to 2020-03-31: no change but a pause or an archive may be made now \(standard Season\)$/,
      );
      // A preflight says the same, without recording anything.
      const preflight = await ok<{ would_prepare: boolean; refusal: { code: string; message: string } }>(
        'ads_preflight_change',
        {
          account_id: account.account_id,
          operation: 'ads_update_ad',
          args: {
            account_id: account.account_id,
            ad_id: (ads[0] as { id: string }).id,
            body: { name: 'X name' },
          },
        },
      );
      assert.equal(preflight.would_prepare, false);
      assert.match(preflight.refusal.message, /outside the operating window .* \(standard Season\)/);
      // Spending can always be stopped: an update that only pauses the ad is prepared.
      const pause = await updateAd(ads[0] as { id: string }, { status: 'paused' });
      assert.equal(pause.status, 'prepared');
    } finally {
      await archiveAll();
    }
  });
});

describe('enforced again at apply', () => {
  test('a change prepared before a standard it breaks fails at apply with the reason, and nothing reaches the ad account', async () => {
    const ad = ads[1] as { id: string };
    const prepared = await updateAd(ad, { name: 'Summer sale' });
    await approveInBrowser(prepared.change_id);
    await saveStandard('Naming', { naming_prefix: 'ACME-' });
    try {
      // The apply answers apply_failed, or applying when the worker has not finished within its wait.
      const applied = await call('ads_apply_change', {
        change_id: prepared.change_id,
        digest: prepared.digest,
      });
      if (applied.isError) {
        assert.equal((applied.data as { error: { code: string } }).error.code, 'apply_failed');
      }
      const final = await waitForChange<ChangeView>(prepared.change_id, ['applied', 'failed']);
      assert.equal(final.status, 'failed');
      assert.equal(
        final.error,
        'refused before applying, nothing was sent to the ad account: body.name must start with ACME- (standard Naming)',
      );
      assert.deepEqual(await sandboxLedger(stack, account.upstream_account_id, `/ads/${ad.id}`), []);
    } finally {
      await archiveAll();
    }
  });
});

describe('spend guard set by an admin in the dashboard', () => {
  test('a bid over the cap set in the browser is refused naming the cap; one within it is prepared', async () => {
    const page = await adminPage();
    try {
      await page.goto(`${stack.gatewayUrl}/dashboard`);
      await Promise.all([
        page.waitForURL(new RegExp(`/dashboard/accounts/${account.account_id}$`)),
        page.click(`a[href="/dashboard/accounts/${account.account_id}"]`),
      ]);
      await page.fill('#max_daily_budget_micros', '500000000');
      await page.fill('#max_bid_micros', '2000000');
      await Promise.all([
        page.waitForResponse(
          (r) =>
            r.url().endsWith(`/dashboard/accounts/${account.account_id}`) && r.request().method() === 'GET',
        ),
        page.click('#save-guard'),
      ]);
      assert.match((await page.textContent('#cap-bid'))?.trim() ?? '', /^[A-Z]{3} 2\.00 \(2000000 micros\)$/);
      assert.match(
        (await page.textContent('#cap-budget'))?.trim() ?? '',
        /^[A-Z]{3} 500\.00 \(500000000 micros\)$/,
      );
    } finally {
      await page.context().close();
    }
    const group = adGroups[0] as { id: string };
    const err = await refused('ads_update_ad_group', {
      account_id: account.account_id,
      ad_group_id: group.id,
      body: { bidding_config: { strategy: 'fixed_bid', max_bid_micros: 2_500_000 } },
    });
    assert.equal(err.code, 'failed_precondition');
    assert.equal(
      err.message,
      "body.bidding_config.max_bid_micros 2500000 exceeds this account's bid cap 2000000 (spend guard)",
    );
    const within = await ok<ChangeView>('ads_update_ad_group', {
      account_id: account.account_id,
      ad_group_id: group.id,
      body: { bidding_config: { strategy: 'fixed_bid', max_bid_micros: 1_750_000 } },
    });
    assert.equal(within.status, 'prepared');
    // Within the cap, but ten times that for one custom audience.
    const multiplied = await refused('ads_update_ad_group', {
      account_id: account.account_id,
      ad_group_id: group.id,
      body: {
        bidding_config: {
          strategy: 'fixed_bid',
          max_bid_micros: 1_900_000,
          custom_audience_bid_multipliers: [
            { custom_audience_id: 'aud_vip', bid_multiplier_micros: 10_000_000 },
          ],
        },
      },
    });
    assert.equal(multiplied.code, 'failed_precondition');
    assert.equal(
      multiplied.message,
      "body.bidding_config.custom_audience_bid_multipliers[0]: the bid 1900000 times custom audience aud_vip's multiplier 10000000 (micros) is 19000000 micros, above this account's bid cap 2000000 (spend guard)",
    );
  });

  test('a cap that is not a whole number is refused on the page, and nothing is saved', async () => {
    const page = await adminPage();
    try {
      await page.goto(`${stack.gatewayUrl}/dashboard/accounts/${account.account_id}`);
      const before = (await page.textContent('#cap-bid'))?.trim();
      await page.fill('#max_bid_micros', '1.5');
      await page.click('#save-guard');
      await page.waitForSelector('[role=alert]');
      assert.match(
        (await page.textContent('[role=alert]')) ?? '',
        /The bid cap must be a whole number of micros/,
      );
      assert.equal((await page.textContent('#cap-bid'))?.trim(), before);
    } finally {
      await page.context().close();
    }
  });

  test('an editor sees the caps but no form, and a forged post from them or from another origin is refused', async () => {
    const editor = { email: 'editor-standards@demo.example', password: 'editor-password-1' };
    await stack.admin([
      'add-user',
      '--workspace',
      seed.workspaceId,
      '--email',
      editor.email,
      '--password',
      editor.password,
      '--role',
      'editor',
    ]);
    const page = await adminPage(editor);
    try {
      const path = `/dashboard/accounts/${account.account_id}`;
      await page.goto(`${stack.gatewayUrl}${path}`);
      assert.equal(await page.locator('#save-guard').count(), 0);
      const before = (await page.textContent('#cap-bid'))?.trim();
      const cookie = (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
      const csrf = await page.locator('header input[name=csrf]').getAttribute('value');
      const post = (origin: string) =>
        fetch(`${stack.gatewayUrl}${path}/spend-guard`, {
          method: 'POST',
          redirect: 'manual',
          headers: { cookie, origin, 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ csrf: csrf ?? '', max_bid_micros: '999999999' }).toString(),
        });
      const forged = await post(new URL(stack.gatewayUrl).origin);
      assert.equal(forged.status, 403);
      assert.match(await forged.text(), /Only a workspace admin can set a spend guard/);
      const foreign = await post('https://attacker.example');
      assert.equal(foreign.status, 403);
      assert.match(await foreign.text(), /refused by the origin check/);
      await page.reload();
      assert.equal((await page.textContent('#cap-bid'))?.trim(), before);
    } finally {
      await page.context().close();
    }
  });
});

describe('the review page', () => {
  test('lists the standards a change was checked against, with their guidance', async () => {
    const standard = await saveStandard('Brand voice', {
      naming_prefix: 'ACME-',
      guidance: 'Check the copy against the <spring> brief.',
    });
    try {
      const prepared = await updateAd(ads[2] as { id: string }, { name: 'ACME-Spring sale' });
      const page = await adminPage();
      try {
        await page.goto(`${stack.gatewayUrl}/dashboard/changes/${prepared.change_id}`);
        const item = page.locator(`#standards-checked li[data-standard="${standard.standard_id}"]`);
        assert.match(await item.innerText(), /Brand voice\s+\(revision 1\)/);
        assert.equal(
          (await item.locator('.guidance').innerText()).trim(),
          'Check the copy against the <spring> brief.',
        );
      } finally {
        await page.context().close();
      }
    } finally {
      await archiveAll();
    }
  });
});

describe('the change as tools show it', () => {
  test('the prepare result and ads_get_change list the standards the change was checked against', async () => {
    const standard = await saveStandard('Naming', {
      naming_prefix: 'ACME-',
      guidance: 'Names start with the brand.',
    });
    try {
      const prepared = await ok<ChangeView & { standards_checked: unknown[] }>('ads_update_ad', {
        account_id: account.account_id,
        ad_id: (ads[3] as { id: string }).id,
        body: { name: 'ACME-Winter' },
      });
      const expected = [
        {
          standard_id: standard.standard_id,
          name: 'Naming',
          revision: standard.revision,
          guidance: 'Names start with the brand.',
        },
      ];
      assert.deepEqual(prepared.standards_checked, expected);
      const got = await ok<{ standards_checked: unknown[] }>('ads_get_change', {
        change_id: prepared.change_id,
      });
      assert.deepEqual(got.standards_checked, expected);
    } finally {
      await archiveAll();
    }
    const without = await ok<{ standards_checked: unknown[] }>('ads_update_ad', {
      account_id: account.account_id,
      ad_id: (ads[3] as { id: string }).id,
      body: { name: 'Winter, no standards' },
    });
    assert.deepEqual(without.standards_checked, []);
  });
});
