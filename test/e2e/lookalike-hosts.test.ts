/**
 * Look-alike landing-page hosts end to end, through the official MCP client and the real
 * processes: an ad's landing page written with a Cyrillic "а" (`shop.exаmple.com`, which a
 * reviewer would read as shop.example.com) is refused by ads_update_ad, ads_preflight_change and
 * ads_plan_workbook, naming the field and showing the host's ASCII form, with nothing recorded;
 * once the account's standards list that exact host it is prepared, and the summary a person
 * approves shows the ASCII host first, its Unicode form and the warning beside it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { archiveAccountStandards } from '@adsmcp/testkit/account-standards';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import type { SeedResult } from '@adsmcp/testkit/stack';
import { toolCalls } from '@adsmcp/testkit/tool-calls';

let e2e: SeededStack;
let agent: McpTestClient;
let account: SeedResult['accounts'][number];
let ad: { id: string; name: string };

const { ok, refused } = toolCalls(() => agent);

/** `shop.example.com` with a Cyrillic "а" (U+0430) for the Latin "a". */
const LOOKALIKE = 'https://shop.ex\u0430mple.com/spring';
const A_LABEL = 'shop.xn--exmple-4nf.com';
const WARNING = `${A_LABEL} (shown as "shop.ex\u0430mple.com": mixed Latin and Cyrillic letters; looks like shop.example.com)`;

const changesTotal = async () => (await ok<{ total: number }>('ads_list_changes', {})).total;
const updateArgs = (targetUrl: string) => ({
  account_id: account.account_id,
  ad_id: ad.id,
  body: { creative: { target_url: targetUrl } },
});

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '500' } });
  account = e2e.seed.accounts.find((a) => a.currency === 'USD') as SeedResult['accounts'][number];
  agent = await connectClient('v2-2026', e2e.stack.mcpUrl, e2e.seed.token);
  const { ads } = await ok<{
    ads: { id: string; name: string; status: string; creative?: { target_url?: string } }[];
  }>('ads_list_ads', { account_id: account.account_id, limit: 20 });
  const found = ads.find(
    (a) => a.status !== 'archived' && a.creative?.target_url?.startsWith('https://shop.example.com/'),
  );
  assert.ok(found, 'the seeded account has an ad linking to shop.example.com');
  ad = found;
});

after(async () => {
  await agent?.close();
  await e2e?.stop();
});

describe('a landing page on a look-alike host', () => {
  test('ads_update_ad and ads_preflight_change refuse it, naming the field, the rule and the ASCII form; nothing is recorded', async () => {
    const before = await changesTotal();
    const err = await refused('ads_update_ad', updateArgs(LOOKALIKE));
    assert.equal(err.code, 'invalid_argument');
    assert.equal(
      err.message,
      `body.creative.target_url must not link to a look-alike host: ${WARNING} mixes scripts in its label "ex\u0430mple" (UTS #39, highly restrictive); a standard of this account must list ${A_LABEL} in allowed_domains for it to be used`,
    );
    const preflight = await ok<{ would_prepare: boolean; refusal: { code: string; message: string } | null }>(
      'ads_preflight_change',
      { account_id: account.account_id, operation: 'ads_update_ad', args: updateArgs(LOOKALIKE) },
    );
    assert.equal(preflight.would_prepare, false);
    assert.deepEqual(preflight.refusal, { code: err.code, message: err.message });
    assert.equal(await changesTotal(), before);
  });

  test('ads_plan_workbook refuses a workbook linking to it, naming the ad', async () => {
    const err = await refused('ads_plan_workbook', {
      account_id: account.account_id,
      sheets: {
        campaigns: [{ name: 'Winter Sale', objective: 'clicks', budget: '19.99', budget_type: 'daily' }],
        adgroups: [{ campaign: 'Winter Sale', name: 'Warm plants', bid: '0.30', countries: ['US'] }],
        ads: [
          { ad_group: 'Warm plants', name: 'Cosy one', title: 'Plants for winter', target_url: LOOKALIKE },
        ],
      },
    });
    assert.equal(err.code, 'invalid_argument');
    assert.match(
      err.message,
      /body\.operations\[2\]\.body\.creative\.target_url \(the ad "Cosy one"\) must not link to a look-alike host: shop\.xn--exmple-4nf\.com \(shown as/,
    );
  });

  test('listed exactly in the allowed domains it is prepared, and the summary shows the A-label first with the warning', async () => {
    await ok('ads_save_account_standard', {
      account_id: account.account_id,
      name: 'Our domains',
      kind: 'standard',
      data: { allowed_domains: [A_LABEL, 'example.com'] },
    });
    try {
      const prepared = await ok<{ change_id: string; summary: string }>(
        'ads_update_ad',
        updateArgs(LOOKALIKE),
      );
      const shown = `"https://${A_LABEL}/spring" (its host ${A_LABEL} is shown as "shop.ex\u0430mple.com": mixed Latin and Cyrillic letters; looks like shop.example.com)`;
      assert.ok(prepared.summary.endsWith(shown), prepared.summary);
      // The Unicode form appears only beside the ASCII host, never alone.
      assert.equal(prepared.summary.split('ex\u0430mple').length, 2);
      const got = await ok<{ summary: string; status: string }>('ads_get_change', {
        change_id: prepared.change_id,
      });
      assert.equal(got.status, 'prepared');
      assert.equal(got.summary, prepared.summary);
    } finally {
      await archiveAccountStandards(e2e.db.url, account.account_id);
    }
  });
});
