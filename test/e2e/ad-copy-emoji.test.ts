/**
 * Emoji in ad copy, through the MCP tool an agent uses: an emoji written with its presentation
 * selector (❤️) or as a ZWJ sequence is prepared and reviewed code point for code point, while a
 * variation selector after a letter, which shows nothing, is refused naming the field.
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
let adIds: string[];

interface ChangeView {
  change_id: string;
  status: string;
  operation: { method: string; path: string; body: { creative?: { title?: string } } };
}

const { ok, refused } = toolCalls(() => agent);

const codePoints = (text: string) => [...text].map((c) => (c.codePointAt(0) ?? 0).toString(16).toUpperCase());

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '500' } });
  account = e2e.seed.accounts.find((a) => a.currency === 'USD') as SeedResult['accounts'][number];
  agent = await connectClient('v2-2026', e2e.stack.mcpUrl, e2e.seed.token);
  const list = await ok<{ ads: { id: string; status: string }[] }>('ads_list_ads', {
    account_id: account.account_id,
    limit: 20,
  });
  adIds = [];
  for (const a of list.ads.filter((x) => x.status !== 'archived')) {
    const { ad } = await ok<{ ad: { creative: { title?: string } } }>('ads_get_ad', {
      account_id: account.account_id,
      ad_id: a.id,
    });
    if (typeof ad.creative.title === 'string') adIds.push(a.id);
  }
  assert.ok(adIds.length >= 2, 'the seeded account has ads with a title');
});

after(async () => {
  await agent?.close();
  await e2e?.stop();
});

describe('emoji in ad copy', () => {
  test('a title with ❤️ and 👩🏽‍💻 is prepared, and the reviewed body holds exactly its code points', async () => {
    const title = 'We \u2764\uFE0F coders \u{1F469}\u{1F3FD}\u200D\u{1F4BB}';
    const prepared = await ok<ChangeView>('ads_update_ad', {
      account_id: account.account_id,
      ad_id: adIds[0],
      body: { creative: { title } },
    });
    assert.equal(prepared.status, 'prepared');
    const reviewed = await ok<ChangeView>('ads_get_change', { change_id: prepared.change_id });
    const sent = reviewed.operation.body.creative?.title ?? '';
    assert.deepEqual(codePoints(sent), [
      ...['57', '65', '20', '2764', 'FE0F', '20'],
      ...['63', '6F', '64', '65', '72', '73', '20'],
      ...['1F469', '1F3FD', '200D', '1F4BB'],
    ]);
  });

  test('a variation selector after a letter is refused, naming the field, and nothing is prepared', async () => {
    const before = await ok<{ total: number }>('ads_list_changes', {});
    for (const title of ['A\uFE0F sale', 'Sale 1\uFE0F']) {
      const err = await refused('ads_update_ad', {
        account_id: account.account_id,
        ad_id: adIds[1],
        body: { creative: { title } },
      });
      assert.match(err.message, /`body\.creative\.title` must not contain the invisible character U\+FE0F/);
    }
    const after = await ok<{ total: number }>('ads_list_changes', {});
    assert.equal(after.total, before.total, 'a refused prepare records no change');
  });
});
