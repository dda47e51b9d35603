/**
 * The marketing context and variation tools end to end: every process running, driven through
 * the official MCP client with workspace tokens, as an agent would use them.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { newWorkspaceToken, type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import type { SeedResult, Stack } from '@adsmcp/testkit/stack';
import { toolCalls } from '@adsmcp/testkit/tool-calls';

let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
let agent: McpTestClient;
let otherAgent: McpTestClient;

const { ok, refused } = toolCalls(() => agent);

interface Item {
  item_id: string;
  kind: string;
  name: string;
  archived: boolean;
  revision: number;
}
interface Context {
  items: Item[];
  total: number;
  next_offset: number | null;
  brief: Item | null;
  references: { item_id: string; status: string; item: Item | null }[];
}
interface Variations {
  variations: { title: string; body: string; source_image_url: string; target_url: string }[];
  count: number;
}

const BRIEF = {
  product: 'Monstera deliciosa, 30 cm',
  audience: 'First-time plant owners',
  offer: '20% off the first order',
  objective: 'clicks',
  landing_page: 'https://shop.example/monstera',
  constraints: 'Mention free delivery only in the body.',
};
const BRAND = {
  voice: 'Warm, plain, a little playful.',
  audience: 'Urban gardeners aged 25 to 45.',
  approved_claims: 'Plants arrive healthy or we replace them.',
  restrictions: 'No medical claims.',
};

async function save(kind: string, name: string, data: Record<string, unknown>, c = agent): Promise<Item> {
  return (await ok<{ item: Item }>('ads_save_marketing_item', { kind, name, data }, c)).item;
}

const parts = {
  titles: ['Two for one', 'Spring plants'],
  bodies: ['Every plant, this week only.'],
  image_urls: ['https://cdn.example/spring.png'],
  target_urls: ['https://shop.example/spring', 'https://shop.example/sale'],
};

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '1000' } });
  ({ stack, seed } = e2e);
  const otherToken = (await newWorkspaceToken(stack, 'Other workspace')).token;
  agent = await connectClient('v2-2026', stack.mcpUrl, seed.token);
  otherAgent = await connectClient('v1', stack.mcpUrl, otherToken);
});

after(async () => {
  await agent?.close();
  await otherAgent?.close();
  await e2e?.stop();
});

describe('ads_get_marketing_context', () => {
  test('returns the saved guidance and brand voices, paginated, and a brief with its references resolved', async () => {
    const play = await save('playbook', 'Lead with the plant', {
      guidance: 'Lead with the plant, not the discount.',
      evidence: 'account_results',
    });
    const brand = await save('brand', 'House voice', BRAND);
    const gone = await save('playbook', 'Old advice', { guidance: 'Shout.', evidence: 'hypothesis' });
    await ok('ads_archive_marketing_item', { item_id: gone.item_id, expected_revision: gone.revision });
    await save('inspiration', 'Leafy ad', {
      brand: 'Leafy Co',
      source_url: 'https://leafy.example/ad',
      observed_at: '2026-03-01T09:30:00Z',
      status: 'observed',
      copy: 'Your windowsill deserves better.',
    });
    await save('playbook', 'Their advice', { guidance: 'Theirs.', evidence: 'hypothesis' }, otherAgent);
    const missing = randomUUID();
    const brief = await save('brief', 'Spring brief', {
      ...BRIEF,
      reference_ids: [brand.item_id, gone.item_id, missing],
    });

    const all = await ok<Context>('ads_get_marketing_context', {});
    assert.deepEqual(
      all.items.map((i) => i.name),
      ['Lead with the plant', 'House voice'],
    );
    assert.equal(all.total, 2);
    assert.equal(all.next_offset, null);

    const page = await ok<Context>('ads_get_marketing_context', { limit: 1 });
    assert.deepEqual(
      page.items.map((i) => i.item_id),
      [play.item_id],
    );
    assert.equal(page.next_offset, 1);
    const next = await ok<Context>('ads_get_marketing_context', { offset: 1, limit: 1 });
    assert.deepEqual(
      next.items.map((i) => i.item_id),
      [brand.item_id],
    );
    assert.equal(next.next_offset, null);

    const withBrief = await ok<Context>('ads_get_marketing_context', { brief_id: brief.item_id });
    assert.equal(withBrief.brief?.name, 'Spring brief');
    assert.deepEqual(
      withBrief.references.map((r) => [r.item_id, r.status, r.item?.name ?? null]),
      [
        [brand.item_id, 'found', 'House voice'],
        [gone.item_id, 'archived', 'Old advice'],
        [missing, 'missing', null],
      ],
    );

    const theirs = await ok<Context>('ads_get_marketing_context', {}, otherAgent);
    assert.deepEqual(
      theirs.items.map((i) => i.name),
      ['Their advice'],
    );
    const notTheirs = await refused('ads_get_marketing_context', { brief_id: brief.item_id }, otherAgent);
    assert.equal(notTheirs.code, 'not_found');
  });

  test('a brief_id that is not a brief is refused, naming the kind it is', async () => {
    const brand = await save('brand', 'Second voice', BRAND);
    const error = await refused('ads_get_marketing_context', { brief_id: brand.item_id });
    assert.equal(error.code, 'invalid_argument');
    assert.match(error.message, /brief_id .* is a brand item, not a brief/);
  });

  test('bad arguments are refused, naming the field and the rule', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ brief_id: 'brief-1' }, /`brief_id` must be a UUID/],
      [{ limit: 0 }, /`limit` must be an integer from 1 to 100 \(got 0\)/],
      [{ offset: 100_001 }, /`offset` must be an integer from 0 to 100000/],
      [{ kind: 'brief' }, /unknown argument `kind`/],
    ];
    for (const [args, message] of cases) {
      const error = await refused('ads_get_marketing_context', args);
      assert.equal(error.code, 'invalid_argument', JSON.stringify(args));
      assert.match(error.message, message);
    }
  });
});

describe('ads_build_variations', () => {
  test('returns every literal combination in a stable order, and writes nothing', async () => {
    const before = await ok<{ total: number }>('ads_list_marketing_items', {});
    const built = await ok<Variations>('ads_build_variations', parts);
    assert.equal(built.count, 4);
    assert.deepEqual(built.variations, [
      {
        title: 'Two for one',
        body: 'Every plant, this week only.',
        source_image_url: 'https://cdn.example/spring.png',
        target_url: 'https://shop.example/spring',
      },
      {
        title: 'Two for one',
        body: 'Every plant, this week only.',
        source_image_url: 'https://cdn.example/spring.png',
        target_url: 'https://shop.example/sale',
      },
      {
        title: 'Spring plants',
        body: 'Every plant, this week only.',
        source_image_url: 'https://cdn.example/spring.png',
        target_url: 'https://shop.example/spring',
      },
      {
        title: 'Spring plants',
        body: 'Every plant, this week only.',
        source_image_url: 'https://cdn.example/spring.png',
        target_url: 'https://shop.example/sale',
      },
    ]);
    assert.deepEqual(await ok<Variations>('ads_build_variations', parts), built);
    const afterwards = await ok<{ total: number }>('ads_list_marketing_items', {});
    assert.equal(afterwards.total, before.total);
  });

  test('the variations save as a batch item as they are', async () => {
    const built = await ok<Variations>('ads_build_variations', parts);
    const batch = await save('batch', 'Spring variants', { variants: built.variations });
    assert.equal(batch.kind, 'batch');
  });

  // 101 is prime, so no valid lists make exactly 101 combinations (101 titles break the titles
  // bound first): 51 × 2 = 102 is the smallest count over the limit the lists can reach.
  test('more than 100 combinations are refused, saying how many there would be and the limit', async () => {
    const titles = Array.from({ length: 51 }, (_, n) => `Spring title ${n}`);
    const error = await refused('ads_build_variations', { ...parts, titles });
    assert.equal(error.code, 'invalid_argument');
    assert.match(error.message, /would make 102 combinations \(51 × 1 × 1 × 2\); the limit is 100/);
    const exactly = await ok<Variations>('ads_build_variations', { ...parts, titles: titles.slice(0, 50) });
    assert.equal(exactly.count, 100);
  });

  test('101 titles are refused by the titles bound', async () => {
    const titles = Array.from({ length: 101 }, (_, n) => `Spring title ${n}`);
    const error = await refused('ads_build_variations', {
      ...parts,
      titles,
      target_urls: ['https://shop.example'],
    });
    assert.equal(error.code, 'invalid_argument');
    assert.match(error.message, /`titles` must have 1 to 100 items \(got 101\)/);
  });

  test('bad parts are refused, naming the field and the rule', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ ...parts, image_urls: ['http://cdn.example/spring.png'] }, /`image_urls\[0\]`/],
      [{ ...parts, target_urls: ['not a url'] }, /`target_urls\[0\]`/],
      [{ ...parts, titles: ['Hi'] }, /`titles\[0\]` must be 3 to 50 characters \(got 2\)/],
      [{ ...parts, titles: ['Sale\u200bnow'] }, /`titles\[0\]` must not contain the invisible character/],
      [{ ...parts, titles: ['   '] }, /`titles\[0\]` must contain a visible character/],
      [{ ...parts, bodies: [] }, /`bodies`/],
      [
        { titles: parts.titles, bodies: parts.bodies, image_urls: parts.image_urls },
        /`target_urls` is required/,
      ],
    ];
    for (const [args, message] of cases) {
      const error = await refused('ads_build_variations', args);
      assert.equal(error.code, 'invalid_argument', JSON.stringify(args));
      assert.match(error.message, message);
    }
  });
});
