/**
 * Text a person reviews, through an official MCP client against the whole stack: text of combining
 * marks alone and marks stacked high enough to draw over the page are refused naming the field,
 * real text in scripts that stack marks is prepared as written, and a change's summary shows the
 * spaces a review page would collapse.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import type { SeedResult } from '@adsmcp/testkit/stack';
import { toolCalls } from '@adsmcp/testkit/tool-calls';

let e2e: SeededStack;
let agent: McpTestClient;
let account: SeedResult['accounts'][number];
let ads: { id: string; status: string }[];

interface ChangeView {
  change_id: string;
  summary: string;
  operation: { body: unknown };
}

const { ok, refused } = toolCalls(() => agent);

/** An ad of the seeded account no other test here changes. */
function takeAd(): string {
  const ad = ads.shift();
  assert.ok(ad, 'an ad is left to change');
  return ad.id;
}

const updateTitle = (title: string) => ({
  account_id: account.account_id,
  ad_id: takeAd(),
  body: { creative: { title } },
});

/** Nine marks on the "e" of "Sale": Zalgo text. */
const ZALGO = `Sale${'\u0301\u0336\u0317\u035C\u0300\u0316\u0334\u0327\u0350'}!`;

before(async () => {
  e2e = await startSeededStack();
  account = e2e.seed.accounts.find((a) => a.currency === 'USD') as SeedResult['accounts'][number];
  agent = await connectClient('v2-2026', e2e.stack.mcpUrl, e2e.seed.token);
  const list = await ok<{ ads: typeof ads }>('ads_list_ads', { account_id: account.account_id, limit: 20 });
  ads = list.ads.filter((a) => a.status !== 'archived');
  assert.ok(ads.length >= 7, 'the seeded account has ads to change');
});

after(async () => {
  await agent?.close();
  await e2e?.stop();
});

describe('combining marks in reviewed text', () => {
  test('a title of combining marks alone is refused as showing nothing, naming the field', async () => {
    const err = await refused('ads_update_ad', updateTitle('\u0301\u0301'));
    assert.equal(err.code, 'invalid_argument');
    assert.match(
      err.message,
      /`body\.creative\.title` must contain a visible character, not only combining marks and white space/,
    );
  });

  test('a title with 9 marks stacked on one character is refused, naming the field, the position and the limit', async () => {
    const err = await refused('ads_update_ad', updateTitle(ZALGO));
    assert.equal(err.code, 'invalid_argument');
    assert.match(
      err.message,
      /`body\.creative\.title` has 9 combining marks stacked on one character at position 4; at most 4 are accepted/,
    );
    // The preflight says the same, and a workbook row is held to the same rule.
    const preflight = await ok<{ would_prepare: boolean; issues: { path: string; message: string }[] }>(
      'ads_preflight_change',
      { account_id: account.account_id, operation: 'ads_update_ad', args: updateTitle(ZALGO) },
    );
    assert.equal(preflight.would_prepare, false);
    assert.deepEqual(preflight.issues, [
      {
        path: 'body.creative.title',
        message:
          '`body.creative.title` has 9 combining marks stacked on one character at position 4; at most 4 are accepted',
      },
    ]);
    const workbook = await refused('ads_plan_workbook', {
      account_id: account.account_id,
      sheets: {
        campaigns: [{ name: 'Spring Sale', objective: 'clicks', budget: '50.00', budget_type: 'daily' }],
        adgroups: [{ campaign: 'Spring Sale', name: 'Plants', bid: '0.80', countries: ['US'] }],
        ads: [{ ad_group: 'Plants', name: 'One', title: ZALGO, target_url: 'https://shop.example.com/' }],
      },
    });
    assert.match(
      workbook.message,
      /title has 9 combining marks stacked on one character at position 4; at most 4 are accepted/,
    );
  });

  for (const title of ['Tiếng Việt có dấu', 'नमस्ते दुनिया', 'Tiếng Việt có dấu'.normalize('NFD')]) {
    test(`real text that stacks marks is prepared as written: ${JSON.stringify(title)}`, async () => {
      const change = await ok<ChangeView>('ads_update_ad', updateTitle(title));
      assert.deepEqual(change.operation.body, { creative: { title } });
      assert.ok(change.summary.includes(JSON.stringify(title)), change.summary);
    });
  }
});

describe('spaces in reviewed text', () => {
  test('a title with repeated and trailing spaces is prepared as sent, and its summary shows each space', async () => {
    const change = await ok<ChangeView>('ads_update_ad', updateTitle('Sale  now '));
    assert.deepEqual(change.operation.body, { creative: { title: 'Sale  now ' } }, 'the spaces are sent');
    assert.match(change.summary, /→ "Sale␣␣now␣"/);
    assert.match(change.summary, /\(␣ is a space\)$/);
    const read = await ok<ChangeView>('ads_get_change', { change_id: change.change_id });
    assert.equal(read.summary, change.summary, 'the summary is kept as shown');
  });
});
