/**
 * Saved marketing items end to end: every process running, driven through the official MCP
 * clients with workspace tokens, as an agent would use them.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { newWorkspaceToken, type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { CLIENT_KINDS, connectClient, type McpTestClient, rawPost } from '@adsmcp/testkit/mcp-clients';
import type { SeedResult, Stack } from '@adsmcp/testkit/stack';

let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
let client: McpTestClient;
let otherClient: McpTestClient;
let viewerToken: string;

const ACCOUNT_ID = '5b1f1c7e-4f7e-4c0e-9a55-0d3e6f1b2c3d';

const variant = (n: number, title = `Spring offer ${n}`) => ({
  title,
  body: 'Two for one on every plant this week.',
  target_url: `https://shop.example/spring?v=${n}`,
  source_image_url: `https://cdn.example/images/${n}.png`,
});

/** One valid data object per kind. */
const DATA: Record<string, Record<string, unknown>> = {
  brand: {
    voice: 'Warm, plain, a little playful.',
    audience: 'Urban gardeners aged 25 to 45.',
    approved_claims: 'Plants arrive healthy or we replace them.',
    restrictions: 'No medical claims.',
    website: 'https://shop.example',
  },
  brief: {
    product: 'Monstera deliciosa, 30 cm',
    audience: 'First-time plant owners',
    offer: '20% off the first order',
    objective: 'clicks',
    landing_page: 'https://shop.example/monstera',
    constraints: 'Mention free delivery only in the body.',
  },
  playbook: { guidance: 'Lead with the plant, not the discount.', evidence: 'hypothesis' },
  inspiration: {
    brand: 'Leafy Co',
    source_url: 'https://leafy.example/ad',
    observed_at: '2026-03-01T09:30:00Z',
    status: 'observed',
    copy: 'Your windowsill deserves better.',
  },
  batch: { variants: [variant(1), variant(2)] },
  creative: { account_id: ACCOUNT_ID, ad_id: 'ad_123', hook: 'Windowsill guilt', offer: '20% off' },
};

interface Item {
  item_id: string;
  kind: string;
  name: string;
  collection: string;
  tags: string[];
  data: Record<string, unknown>;
  revision: number;
  archived: boolean;
  archived_at: string | null;
}

interface ToolError {
  code: string;
  message: string;
}

async function call(c: McpTestClient, tool: string, args: Record<string, unknown>) {
  const res = await c.callTool(tool, args);
  return { isError: res.isError === true, data: res.structuredContent ?? {} };
}

/** Calls a tool that must succeed and returns its structured result. */
async function ok<T>(c: McpTestClient, tool: string, args: Record<string, unknown>): Promise<T> {
  const res = await call(c, tool, args);
  assert.equal(res.isError, false, `${tool} failed: ${JSON.stringify(res.data)}`);
  return res.data as T;
}

/** Calls a tool that must fail and returns its error. */
async function fails(c: McpTestClient, tool: string, args: Record<string, unknown>): Promise<ToolError> {
  const res = await call(c, tool, args);
  assert.equal(res.isError, true, `${tool} should have failed: ${JSON.stringify(res.data)}`);
  return (res.data as { error: ToolError }).error;
}

const saveItem = (c: McpTestClient, args: Record<string, unknown>) =>
  ok<{ item: Item; created: boolean }>(c, 'ads_save_marketing_item', args).then((r) => r.item);
const getItem = (c: McpTestClient, itemId: string) =>
  ok<{ item: Item }>(c, 'ads_get_marketing_item', { item_id: itemId }).then((r) => r.item);
const listItems = (c: McpTestClient, args: Record<string, unknown> = {}) =>
  ok<{ items: Item[]; total: number; next_offset: number | null }>(c, 'ads_list_marketing_items', args);

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '1000' } });
  ({ stack, seed } = e2e);
  await stack.admin([
    'add-user',
    '--workspace',
    seed.workspaceId,
    '--email',
    'viewer@demo.example',
    '--password',
    'viewer-password-1',
    '--role',
    'viewer',
  ]);
  viewerToken = (
    JSON.parse(
      await stack.admin(['create-token', '--workspace', seed.workspaceId, '--user', 'viewer@demo.example']),
    ) as { token: string }
  ).token;
  const otherToken = (await newWorkspaceToken(stack, 'Other workspace')).token;
  client = await connectClient('v2-2026', stack.mcpUrl, seed.token);
  otherClient = await connectClient('v1', stack.mcpUrl, otherToken);
});

after(async () => {
  await client?.close();
  await otherClient?.close();
  await e2e?.stop();
});

describe('every client generation', () => {
  for (const kind of CLIENT_KINDS) {
    test(`${kind}: saves a marketing item and reads it back`, async () => {
      const c = await connectClient(kind, stack.mcpUrl, seed.token);
      try {
        const saved = await saveItem(c, {
          kind: 'playbook',
          name: `Playbook via ${kind}`,
          data: DATA.playbook,
        });
        const got = await getItem(c, saved.item_id);
        assert.equal(got.name, `Playbook via ${kind}`);
        assert.deepEqual(got.data, DATA.playbook);
      } finally {
        await c.close();
      }
    });
  }
});

describe('marketing items through MCP', () => {
  test('each of the six kinds is saved at revision 1 and read back with its data', async () => {
    for (const [kind, data] of Object.entries(DATA)) {
      const res = await ok<{ item: Item; created: boolean }>(client, 'ads_save_marketing_item', {
        kind,
        name: `Six kinds: ${kind}`,
        collection: 'Six kinds',
        tags: ['six', kind],
        data,
      });
      assert.equal(res.created, true);
      assert.equal(res.item.revision, 1);
      assert.equal(res.item.archived, false);
      assert.equal(res.item.archived_at, null);
      const got = await getItem(client, res.item.item_id);
      assert.equal(got.kind, kind);
      assert.deepEqual(got.data, data, kind);
      assert.deepEqual(got.tags, ['six', kind]);
      assert.equal(got.collection, 'Six kinds');
    }
  });

  test('lists with filters, search and pages', async () => {
    const collection = `Listing ${randomUUID()}`;
    for (const [kind, data] of Object.entries(DATA)) {
      await saveItem(client, {
        kind,
        name: `Listed ${kind}`,
        collection,
        tags: [`${kind}-${collection}`],
        data,
      });
    }
    const all = await listItems(client, { collection });
    assert.equal(all.total, 6);
    assert.equal(all.next_offset, null);
    assert.deepEqual(
      all.items.map((i) => i.kind),
      ['creative', 'batch', 'inspiration', 'playbook', 'brief', 'brand'],
    );
    const briefs = await listItems(client, { collection, kind: 'brief' });
    assert.deepEqual(
      briefs.items.map((i) => i.name),
      ['Listed brief'],
    );
    const tagged = await listItems(client, { tag: `batch-${collection}` });
    assert.deepEqual(
      tagged.items.map((i) => i.name),
      ['Listed batch'],
    );
    const found = await listItems(client, { query: 'WINDOWSILL', collection });
    assert.deepEqual(found.items.map((i) => i.kind).sort(), ['creative', 'inspiration']);
    const page1 = await listItems(client, { collection, limit: 4 });
    assert.equal(page1.items.length, 4);
    assert.equal(page1.next_offset, 4);
    const page2 = await listItems(client, { collection, limit: 4, offset: 4 });
    assert.deepEqual(
      page2.items.map((i) => i.kind),
      ['brief', 'brand'],
    );
    assert.equal(page2.total, 6);
    assert.equal(page2.next_offset, null);
  });

  test('an update needs the current revision; a stale one is a stale_revision error naming it', async () => {
    const item = await saveItem(client, { kind: 'brief', name: 'Launch brief', data: DATA.brief });
    const updated = await saveItem(client, {
      item_id: item.item_id,
      expected_revision: 1,
      kind: 'brief',
      name: 'Launch brief, v2',
      data: { ...DATA.brief, offer: '25% off' },
    });
    assert.equal(updated.revision, 2);
    assert.equal((updated.data as { offer: string }).offer, '25% off');

    const stale = await fails(client, 'ads_save_marketing_item', {
      item_id: item.item_id,
      expected_revision: 1,
      kind: 'brief',
      name: 'Launch brief, lost',
      data: DATA.brief,
    });
    assert.equal(stale.code, 'stale_revision');
    assert.match(stale.message, /at revision 2; .*expected_revision 2/);

    const missing = await fails(client, 'ads_save_marketing_item', {
      item_id: item.item_id,
      kind: 'brief',
      name: 'No revision',
      data: DATA.brief,
    });
    assert.equal(missing.code, 'invalid_argument');
    assert.match(missing.message, /^expected_revision is required when updating/);
    assert.equal((await getItem(client, item.item_id)).name, 'Launch brief, v2');
  });

  test('archive needs the current revision, hides the item from lists and ends its updates', async () => {
    const item = await saveItem(client, { kind: 'creative', name: 'To archive', data: DATA.creative });
    const stale = await fails(client, 'ads_archive_marketing_item', {
      item_id: item.item_id,
      expected_revision: 7,
    });
    assert.equal(stale.code, 'stale_revision');
    assert.match(stale.message, /at revision 1/);

    const { item: archived } = await ok<{ item: Item }>(client, 'ads_archive_marketing_item', {
      item_id: item.item_id,
      expected_revision: 1,
    });
    assert.equal(archived.archived, true);
    assert.equal(archived.revision, 2);
    assert.ok(archived.archived_at !== null && !Number.isNaN(Date.parse(archived.archived_at)));

    assert.equal((await getItem(client, item.item_id)).archived, true);
    const listed = await listItems(client, { query: 'To archive' });
    assert.equal(listed.total, 0);
    const again = await fails(client, 'ads_archive_marketing_item', {
      item_id: item.item_id,
      expected_revision: 2,
    });
    assert.equal(again.code, 'failed_precondition');
    const update = await fails(client, 'ads_save_marketing_item', {
      item_id: item.item_id,
      expected_revision: 2,
      kind: 'creative',
      name: 'Revived',
      data: DATA.creative,
    });
    assert.equal(update.code, 'failed_precondition');
    assert.match(update.message, /is archived/);
  });

  test('invalid arguments are tool errors that name the argument and the rule', async () => {
    const cases: [string, Record<string, unknown>, RegExp][] = [
      [
        'ads_save_marketing_item',
        {
          kind: 'batch',
          name: 'Bad batch',
          data: { variants: [variant(0), variant(1), variant(2), variant(3, 'ab')] },
        },
        /`data\.variants\[3\]\.title` must be 3 to 50 characters \(got 2\)/,
      ],
      [
        'ads_save_marketing_item',
        { kind: 'brief', name: 'Wrong shape', data: DATA.brand },
        /`data` has the shape for `kind` "brand", but `kind` is "brief"/,
      ],
      [
        'ads_save_marketing_item',
        { kind: 'playbook', name: 'x'.repeat(201), data: DATA.playbook },
        /`name` must be 1 to 200 characters \(got 201\)/,
      ],
      [
        'ads_save_marketing_item',
        { kind: 'playbook', name: 'Extra', data: { ...DATA.playbook, colour: 'green' } },
        /unknown property of `data` `colour`/,
      ],
      [
        'ads_save_marketing_item',
        { kind: 'memo', name: 'Memo', data: DATA.playbook },
        /`kind` must be one of brand, brief, playbook, inspiration, batch, creative/,
      ],
      [
        // No kind to choose the shape by: data is held to the shape it comes closest to.
        'ads_save_marketing_item',
        { kind: 'memo', name: 'Memo', data: { guidance: '', evidence: 'hypothesis' } },
        /`kind` must be one of .*; `data\.guidance` must be 1 to 20000 characters \(got 0\)$/,
      ],
      ['ads_get_marketing_item', { item_id: 'item-1' }, /`item_id` must be a UUID/],
      ['ads_list_marketing_items', { limit: 101 }, /`limit` must be an integer from 1 to 100 \(got 101\)/],
      ['ads_list_marketing_items', { offset: 100_001 }, /`offset` must be an integer from 0 to 100000/],
      ['ads_list_marketing_items', { sort: 'name' }, /unknown argument `sort`/],
      ['ads_archive_marketing_item', { item_id: randomUUID() }, /`expected_revision` is required/],
    ];
    for (const [tool, args, message] of cases) {
      const error = await fails(client, tool, args);
      assert.equal(error.code, 'invalid_argument', `${tool} ${JSON.stringify(args)}`);
      assert.match(error.message, message);
    }
  });

  test('another workspace’s token can neither see nor change the item', async () => {
    const item = await saveItem(client, {
      kind: 'brand',
      name: 'Private voice',
      collection: 'Private',
      data: DATA.brand,
    });
    const got = await fails(otherClient, 'ads_get_marketing_item', { item_id: item.item_id });
    assert.equal(got.code, 'not_found');
    const listed = await listItems(otherClient, { collection: 'Private' });
    assert.equal(listed.total, 0);
    const changed = await fails(otherClient, 'ads_save_marketing_item', {
      item_id: item.item_id,
      expected_revision: 1,
      kind: 'brand',
      name: 'Hijacked',
      data: DATA.brand,
    });
    assert.equal(changed.code, 'not_found');
    const archived = await fails(otherClient, 'ads_archive_marketing_item', {
      item_id: item.item_id,
      expected_revision: 1,
    });
    assert.equal(archived.code, 'not_found');

    const mine = await getItem(client, item.item_id);
    assert.equal(mine.name, 'Private voice');
    assert.equal(mine.revision, 1);
    assert.equal(mine.archived, false);
  });

  test('a viewer may read items but not save or archive them (HTTP 403)', async () => {
    const item = await saveItem(client, { kind: 'playbook', name: 'Viewer can read', data: DATA.playbook });
    const viewer = await connectClient('v2-2025', stack.mcpUrl, viewerToken);
    try {
      assert.equal((await getItem(viewer, item.item_id)).name, 'Viewer can read');
    } finally {
      await viewer.close();
    }
    const body = (name: string, args: object) => ({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name, arguments: args },
    });
    const save = await rawPost(
      stack.mcpUrl,
      body('ads_save_marketing_item', { kind: 'playbook', name: 'Nope', data: DATA.playbook }),
      { authorization: `Bearer ${viewerToken}` },
    );
    assert.equal(save.status, 403);
    assert.match(save.text, /role \\"viewer\\" may not call ads_save_marketing_item/);
    const archive = await rawPost(
      stack.mcpUrl,
      body('ads_archive_marketing_item', { item_id: item.item_id, expected_revision: 1 }),
      { authorization: `Bearer ${viewerToken}` },
    );
    assert.equal(archive.status, 403);
    assert.equal((await getItem(client, item.item_id)).archived, false);
  });

  test('tools/list publishes the four marketing tools with their annotations and bounds', async () => {
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    for (const name of ['ads_list_marketing_items', 'ads_get_marketing_item']) {
      assert.equal(byName.get(name)?.annotations?.readOnlyHint, true, name);
    }
    for (const name of ['ads_save_marketing_item', 'ads_archive_marketing_item']) {
      assert.equal(byName.get(name)?.annotations?.readOnlyHint, false, name);
      assert.equal(byName.get(name)?.annotations?.openWorldHint, false, name);
    }
    const list = byName.get('ads_list_marketing_items')?.inputSchema as {
      properties: Record<string, { minimum?: number; maximum?: number }>;
      additionalProperties: boolean;
    };
    assert.deepEqual([list.properties.limit?.minimum, list.properties.limit?.maximum], [1, 100]);
    assert.equal(list.additionalProperties, false);
    const save = byName.get('ads_save_marketing_item')?.inputSchema as {
      required: string[];
      properties: { data: { anyOf: { title: string }[] } };
    };
    assert.deepEqual(save.required, ['kind', 'name', 'data']);
    assert.equal(save.properties.data.anyOf.length, 6);
  });
});
