import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { MarketingItem, SaveMarketingItemRequestSchema } from '@adsmcp/proto/marketing/v1/marketing_pb';
import type { Principal } from '@adsmcp/runtime/principal';
import { validData, variant } from '@adsmcp/testkit/marketing-items';
import { assertRefused } from '@adsmcp/testkit/service-harness';
import type { JsonObject, MessageInitShape } from '@bufbuild/protobuf';
import { Code, type ConnectError } from '@connectrpc/connect';
import { KINDS, type Kind } from '../src/domain/item-data.ts';
import { principal, type RunningService, startService } from './service.ts';

let svc: RunningService;

before(async () => {
  svc = await startService();
});

after(async () => {
  await svc?.stop();
});

type SaveRequest = MessageInitShape<typeof SaveMarketingItemRequestSchema>;

/** What a test varies in a save. */
interface SaveFields {
  itemId?: string;
  expectedRevision?: number;
  name?: string;
  collection?: string;
  tags?: string[];
  data?: Record<string, unknown>;
}

function saveRequest(kind: Kind, fields: SaveFields = {}): SaveRequest {
  const { data, ...rest } = fields;
  return { kind, name: `A ${kind}`, ...rest, data: (data ?? validData(kind)) as JsonObject };
}

async function save(who: Principal, req: SaveRequest): Promise<MarketingItem> {
  const { item } = await svc.client.saveMarketingItem(req, svc.as(who));
  assert.ok(item);
  return item;
}

/** Asserts that `call` fails with `code` and a message matching `message`. */
describe('saving and reading items', () => {
  test('a save without item_id creates the item at revision 1 with a new id, and get returns it', async () => {
    const admin = principal();
    const { item, created } = await svc.client.saveMarketingItem(
      saveRequest('brief', { collection: 'Spring', tags: ['spring', 'plants'] }),
      svc.as(admin),
    );
    assert.equal(created, true);
    assert.ok(item);
    assert.match(item.itemId, /^[0-9a-f-]{36}$/);
    assert.equal(item.revision, 1);
    assert.equal(item.archived, false);
    assert.equal(item.archivedAt, undefined);
    assert.equal(item.createdAt, item.updatedAt);
    const { item: got } = await svc.client.getMarketingItem({ itemId: item.itemId }, svc.as(admin));
    assert.deepEqual(
      {
        kind: got?.kind,
        name: got?.name,
        collection: got?.collection,
        tags: got?.tags,
        data: got?.data,
        revision: got?.revision,
      },
      {
        kind: 'brief',
        name: 'A brief',
        collection: 'Spring',
        tags: ['spring', 'plants'],
        data: validData('brief'),
        revision: 1,
      },
    );
  });

  test('every kind of item is stored with its data exactly as sent', async () => {
    const admin = principal();
    for (const kind of KINDS) {
      const item = await save(admin, saveRequest(kind));
      const { item: got } = await svc.client.getMarketingItem({ itemId: item.itemId }, svc.as(admin));
      assert.equal(got?.kind, kind);
      assert.deepEqual(got?.data, validData(kind), kind);
    }
  });

  test('a save with an unused item_id and no expected_revision creates the item with that id', async () => {
    const admin = principal();
    const itemId = randomUUID();
    const item = await save(admin, saveRequest('playbook', { itemId }));
    assert.equal(item.itemId, itemId);
    assert.equal(item.revision, 1);
  });

  test('an update at the current revision replaces the content and moves to the next revision', async () => {
    const admin = principal();
    const first = await save(admin, saveRequest('batch', { collection: 'Spring', tags: ['a'] }));
    const data = { variants: [variant(7)] };
    const { item, created } = await svc.client.saveMarketingItem(
      saveRequest('batch', { itemId: first.itemId, expectedRevision: 1, name: 'Renamed', data }),
      svc.as(admin),
    );
    assert.equal(created, false);
    assert.equal(item?.revision, 2);
    assert.equal(item?.name, 'Renamed');
    assert.deepEqual(item?.data, data);
    // A save replaces the whole item: what it leaves out is no longer there.
    assert.equal(item?.collection, '');
    assert.deepEqual(item?.tags, []);
    assert.equal(item?.createdAt, first.createdAt);
    assert.ok(Date.parse(item?.updatedAt ?? '') >= Date.parse(first.updatedAt));
  });

  test('an update without expected_revision is refused, naming the current revision', async () => {
    const admin = principal();
    const item = await save(admin, saveRequest('brand'));
    await assertRefused(
      svc.client.saveMarketingItem(saveRequest('brand', { itemId: item.itemId }), svc.as(admin)),
      Code.InvalidArgument,
      `expected_revision is required when updating: marketing item ${item.itemId} exists, at revision 1`,
    );
  });

  test('a stale revision is refused with the current revision, and nothing changes', async () => {
    const admin = principal();
    const item = await save(admin, saveRequest('brand'));
    await save(admin, saveRequest('brand', { itemId: item.itemId, expectedRevision: 1, name: 'Second' }));
    await assertRefused(
      svc.client.saveMarketingItem(
        saveRequest('brand', { itemId: item.itemId, expectedRevision: 1, name: 'Lost update' }),
        svc.as(admin),
      ),
      Code.Aborted,
      'expected_revision is stale: the marketing item is at revision 2; read it again and retry with expected_revision 2',
    );
    const { item: got } = await svc.client.getMarketingItem({ itemId: item.itemId }, svc.as(admin));
    assert.equal(got?.name, 'Second');
    assert.equal(got?.revision, 2);
  });

  test('of two concurrent updates at the same revision, exactly one wins', async () => {
    const admin = principal();
    const item = await save(admin, saveRequest('creative'));
    const results = await Promise.allSettled(
      ['One', 'Two', 'Three'].map((name) =>
        svc.client.saveMarketingItem(
          saveRequest('creative', { itemId: item.itemId, expectedRevision: 1, name }),
          svc.as(admin),
        ),
      ),
    );
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    assert.equal(won.length, 1);
    for (const r of lost) assert.equal((r.reason as ConnectError).code, Code.Aborted);
    const { item: got } = await svc.client.getMarketingItem({ itemId: item.itemId }, svc.as(admin));
    assert.equal(got?.revision, 2);
  });

  test('an expected_revision for an item that does not exist is not found', async () => {
    const itemId = randomUUID();
    await assertRefused(
      svc.client.saveMarketingItem(
        saveRequest('brief', { itemId, expectedRevision: 1 }),
        svc.as(principal()),
      ),
      Code.NotFound,
      `marketing item ${itemId} does not exist; to create it, send no expected_revision`,
    );
  });

  test('the kind of a saved item cannot change', async () => {
    const admin = principal();
    const item = await save(admin, saveRequest('brief'));
    await assertRefused(
      svc.client.saveMarketingItem(
        saveRequest('brand', { itemId: item.itemId, expectedRevision: 1 }),
        svc.as(admin),
      ),
      Code.InvalidArgument,
      'kind cannot change from brief to brand; save a new item for a brand',
    );
  });

  test('values outside the table’s bounds are invalid arguments, not internal errors, and nothing is stored', async () => {
    // The gateway refuses these first; this is a caller that skipped it.
    const admin = principal();
    for (const patch of [{ name: 'n'.repeat(201) }, { kind: 'memo' }, { collection: 'c'.repeat(201) }]) {
      await assertRefused(
        svc.client.saveMarketingItem({ ...saveRequest('brand'), ...patch }, svc.as(admin)),
        Code.InvalidArgument,
        /^`(name|kind|collection)` must be /,
      );
    }
    const { total } = await svc.client.listMarketingItems({}, svc.as(admin));
    assert.equal(total, 0);
  });

  test('a save without data is refused', async () => {
    await assertRefused(
      svc.client.saveMarketingItem({ kind: 'brand', name: 'No data' }, svc.as(principal())),
      Code.InvalidArgument,
      '`data` is required',
    );
  });

  test('get of an unknown item is not found; a malformed id is an invalid argument', async () => {
    const itemId = randomUUID();
    await assertRefused(
      svc.client.getMarketingItem({ itemId }, svc.as(principal())),
      Code.NotFound,
      `marketing item ${itemId} does not exist`,
    );
    await assertRefused(
      svc.client.getMarketingItem({ itemId: 'nope' }, svc.as(principal())),
      Code.InvalidArgument,
      '`item_id` must be a UUID (got "nope")',
    );
  });
});

describe('archiving', () => {
  test('archive needs the current revision, flags the item and moves it to the next revision', async () => {
    const admin = principal();
    const item = await save(admin, saveRequest('inspiration'));
    await assertRefused(
      svc.client.archiveMarketingItem({ itemId: item.itemId, expectedRevision: 2 }, svc.as(admin)),
      Code.Aborted,
      /the marketing item is at revision 1; .*expected_revision 1$/,
    );
    const { item: archived } = await svc.client.archiveMarketingItem(
      { itemId: item.itemId, expectedRevision: 1 },
      svc.as(admin),
    );
    assert.equal(archived?.archived, true);
    assert.equal(archived?.revision, 2);
    assert.ok(!Number.isNaN(Date.parse(archived?.archivedAt ?? '')));

    const { item: got } = await svc.client.getMarketingItem({ itemId: item.itemId }, svc.as(admin));
    assert.equal(got?.archived, true);
    assert.equal(got?.archivedAt, archived?.archivedAt);
    assert.deepEqual(got?.data, validData('inspiration'));
  });

  test('an archived item is not listed, cannot be updated, and cannot be archived again', async () => {
    const admin = principal();
    const item = await save(admin, saveRequest('brand'));
    await svc.client.archiveMarketingItem({ itemId: item.itemId, expectedRevision: 1 }, svc.as(admin));
    const listed = await svc.client.listMarketingItems({}, svc.as(admin));
    assert.equal(listed.total, 0);
    assert.deepEqual(listed.items, []);
    await assertRefused(
      svc.client.saveMarketingItem(
        saveRequest('brand', { itemId: item.itemId, expectedRevision: 2 }),
        svc.as(admin),
      ),
      Code.FailedPrecondition,
      `marketing item ${item.itemId} is archived and cannot be updated; save a new item instead`,
    );
    await assertRefused(
      svc.client.archiveMarketingItem({ itemId: item.itemId, expectedRevision: 2 }, svc.as(admin)),
      Code.FailedPrecondition,
      `marketing item ${item.itemId} is already archived (at revision 2)`,
    );
  });

  test('archive without the current revision is refused as stale, naming the current one', async () => {
    const admin = principal();
    const item = await save(admin, saveRequest('brand'));
    await assertRefused(
      svc.client.archiveMarketingItem({ itemId: item.itemId }, svc.as(admin)),
      Code.Aborted,
      /the marketing item is at revision 1/,
    );
  });
});

describe('listing', () => {
  const admin = principal();
  const ids: Record<string, string> = {};

  before(async () => {
    const items: [string, Kind, SaveFields][] = [
      ['voice', 'brand', { name: 'House voice', collection: 'Core', tags: ['brand'] }],
      ['brief', 'brief', { name: 'Monstera launch', collection: 'Spring', tags: ['spring', 'plants'] }],
      ['playbook', 'playbook', { name: 'Plant playbook', tags: ['plants'] }],
      [
        'inspiration',
        'inspiration',
        { name: 'Leafy ad', data: { ...validData('inspiration'), copy: 'Save 100% of the fuss' } },
      ],
      ['batch', 'batch', { name: 'Spring batch', collection: 'Spring', tags: ['spring'] }],
      ['creative', 'creative', { name: 'ad_123 label' }],
    ];
    // Saved in order, so the last is the most recently updated.
    for (const [key, kind, overrides] of items)
      ids[key] = (await save(admin, saveRequest(kind, overrides))).itemId;
  });

  const names = (items: MarketingItem[]) => items.map((i) => i.name);
  const list = (req: Parameters<RunningService['client']['listMarketingItems']>[0]) =>
    svc.client.listMarketingItems(req, svc.as(admin));

  test('lists live items most recently updated first, 20 to a page, with the total', async () => {
    const res = await list({});
    assert.deepEqual(names(res.items), [
      'ad_123 label',
      'Spring batch',
      'Leafy ad',
      'Plant playbook',
      'Monstera launch',
      'House voice',
    ]);
    assert.equal(res.total, 6);
    assert.equal(res.nextOffset, undefined);
  });

  test('an update moves an item to the front', async () => {
    const other = principal();
    const a = await save(other, saveRequest('brand', { name: 'First' }));
    await save(other, saveRequest('brand', { name: 'Second' }));
    await save(other, saveRequest('brand', { itemId: a.itemId, expectedRevision: 1, name: 'First, edited' }));
    const res = await svc.client.listMarketingItems({}, svc.as(other));
    assert.deepEqual(names(res.items), ['First, edited', 'Second']);
  });

  test('pages with offset and limit, pointing to the next page until the last', async () => {
    const first = await list({ limit: 4 });
    assert.deepEqual(names(first.items), ['ad_123 label', 'Spring batch', 'Leafy ad', 'Plant playbook']);
    assert.equal(first.total, 6);
    assert.equal(first.nextOffset, 4);
    const second = await list({ limit: 4, offset: first.nextOffset ?? -1 });
    assert.deepEqual(names(second.items), ['Monstera launch', 'House voice']);
    assert.equal(second.total, 6);
    assert.equal(second.nextOffset, undefined);
    const past = await list({ offset: 50 });
    assert.deepEqual(past.items, []);
    assert.equal(past.total, 6);
  });

  test('filters by kind, collection and tag, each exactly', async () => {
    assert.deepEqual(names((await list({ kind: 'brief' })).items), ['Monstera launch']);
    assert.deepEqual(names((await list({ collection: 'Spring' })).items), [
      'Spring batch',
      'Monstera launch',
    ]);
    assert.deepEqual(names((await list({ collection: 'spring' })).items), []);
    assert.deepEqual(names((await list({ collection: '' })).items), [
      'ad_123 label',
      'Leafy ad',
      'Plant playbook',
    ]);
    assert.deepEqual(names((await list({ tag: 'plants' })).items), ['Plant playbook', 'Monstera launch']);
    const combined = await list({ tag: 'spring', kind: 'batch', collection: 'Spring' });
    assert.deepEqual(names(combined.items), ['Spring batch']);
    assert.equal(combined.total, 1);
  });

  test('query finds text in the name or the data values, ignoring case, but not property names', async () => {
    assert.deepEqual(names((await list({ query: 'MONSTERA' })).items), ['Monstera launch']);
    // In the brand data only: "Urban gardeners aged 25 to 45."
    assert.deepEqual(names((await list({ query: 'urban garden' })).items), ['House voice']);
    // In a nested value: the batch's variants.
    assert.deepEqual(names((await list({ query: 'two for one' })).items), ['Spring batch']);
    // "approved_claims" is a property of the brand data, not a value.
    assert.deepEqual(names((await list({ query: 'approved_claims' })).items), []);
  });

  test('query treats % and _ as themselves', async () => {
    assert.deepEqual(names((await list({ query: '100%' })).items), ['Leafy ad']);
    // Only the items whose text holds a literal % (the offers say "20% off").
    assert.deepEqual(names((await list({ query: '%' })).items), [
      'ad_123 label',
      'Leafy ad',
      'Monstera launch',
    ]);
    assert.deepEqual(names((await list({ query: 'ad_1' })).items), ['ad_123 label']);
    assert.deepEqual(names((await list({ query: 'ad_' })).items), ['ad_123 label']);
  });

  test('query matches the text values themselves: quotes and backslashes as written, never JSON syntax', async () => {
    const own = principal();
    const voice = {
      ...validData('brand'),
      voice: 'Say "wow" now; 50% off_sale \\ back',
      audience: 'alpha',
      restrictions: 'beta',
    };
    await save(own, saveRequest('brand', { name: 'Quoted', data: voice }));
    const lines = { ...validData('brand'), voice: 'line one\nline two' };
    await save(own, saveRequest('brand', { name: 'Two lines', data: lines }));
    const found = async (query: string) =>
      names((await svc.client.listMarketingItems({ query }, svc.as(own))).items);
    assert.deepEqual(await found('"wow"'), ['Quoted']);
    assert.deepEqual(await found('Say "wow" now; 50% off_sale \\ back'), ['Quoted']);
    // Only the item whose text holds a backslash, not the one whose line break JSON writes as \n.
    assert.deepEqual(await found('\\'), ['Quoted']);
    assert.deepEqual(await found('\\n'), []);
    // The JSON between two values matches nothing, and a query never spans two values.
    assert.deepEqual(await found('", "'), []);
    assert.deepEqual(await found('alpha", "beta'), []);
    assert.deepEqual(await found('alpha beta'), []);
    assert.deepEqual(await found('["'), []);
    assert.deepEqual(await found('LINE ONE'), ['Two lines']);
  });

  test('query is still served by a trigram index on the searched text', async () => {
    const { rows } = await svc.pool.query(
      "SELECT indexdef FROM pg_indexes WHERE tablename = 'marketing_items' AND indexname = 'marketing_items_search'",
    );
    assert.equal(rows.length, 1);
    assert.match(
      rows[0].indexdef,
      /USING gin \(search_text (\S+\.)?gin_trgm_ops\) WHERE \(archived_at IS NULL\)/,
    );
  });
});

describe('workspaces and access', () => {
  test('another workspace’s item is not found for get, update and archive, and is never listed', async () => {
    const owner = principal();
    const stranger = principal();
    const item = await save(owner, saveRequest('brief', { name: 'Secret plan' }));
    const notFound = `marketing item ${item.itemId} does not exist`;
    await assertRefused(
      svc.client.getMarketingItem({ itemId: item.itemId }, svc.as(stranger)),
      Code.NotFound,
      notFound,
    );
    await assertRefused(
      svc.client.saveMarketingItem(
        saveRequest('brief', { itemId: item.itemId, expectedRevision: 1, name: 'Hijacked' }),
        svc.as(stranger),
      ),
      Code.NotFound,
      `${notFound}; to create it, send no expected_revision`,
    );
    await assertRefused(
      svc.client.archiveMarketingItem({ itemId: item.itemId, expectedRevision: 1 }, svc.as(stranger)),
      Code.NotFound,
      notFound,
    );
    const listed = await svc.client.listMarketingItems({ query: 'Secret' }, svc.as(stranger));
    assert.equal(listed.total, 0);

    const { item: untouched } = await svc.client.getMarketingItem({ itemId: item.itemId }, svc.as(owner));
    assert.equal(untouched?.name, 'Secret plan');
    assert.equal(untouched?.revision, 1);
    assert.equal(untouched?.archived, false);
  });

  test('the same item_id in another workspace is a separate item', async () => {
    const owner = principal();
    const stranger = principal();
    const item = await save(owner, saveRequest('brief', { name: 'Original' }));
    const theirs = await save(stranger, saveRequest('brief', { itemId: item.itemId, name: 'Theirs' }));
    assert.equal(theirs.revision, 1);
    const { item: mine } = await svc.client.getMarketingItem({ itemId: item.itemId }, svc.as(owner));
    assert.equal(mine?.name, 'Original');
    const listed = await svc.client.listMarketingItems({}, svc.as(owner));
    assert.deepEqual(
      listed.items.map((i) => i.name),
      ['Original'],
    );
  });

  test('a viewer reads but may not save or archive; an editor may', async () => {
    const admin = principal();
    const viewer = principal({ workspaceId: admin.workspaceId, role: 'viewer', scopes: ['read', 'write'] });
    const editor = principal({ workspaceId: admin.workspaceId, role: 'editor' });
    const item = await save(admin, saveRequest('brand'));
    const { item: read } = await svc.client.getMarketingItem({ itemId: item.itemId }, svc.as(viewer));
    assert.equal(read?.itemId, item.itemId);
    await assertRefused(
      svc.client.saveMarketingItem(saveRequest('brand'), svc.as(viewer)),
      Code.PermissionDenied,
      /needs the write scope and the admin or editor role; this caller has role viewer/,
    );
    await assertRefused(
      svc.client.archiveMarketingItem({ itemId: item.itemId, expectedRevision: 1 }, svc.as(viewer)),
      Code.PermissionDenied,
      /admin or editor role/,
    );
    const edited = await save(editor, saveRequest('brand', { itemId: item.itemId, expectedRevision: 1 }));
    assert.equal(edited.revision, 2);
  });

  test('a credential without the write scope may not save, even an admin’s', async () => {
    const readOnly = principal({ scopes: ['read'] });
    await assertRefused(
      svc.client.saveMarketingItem(saveRequest('brand'), svc.as(readOnly)),
      Code.PermissionDenied,
      /this caller has role admin and scopes \[read\]/,
    );
  });

  test('a call without a principal token is unauthenticated', async () => {
    await assertRefused(
      svc.anonymous.listMarketingItems({}),
      Code.Unauthenticated,
      'missing principal token',
    );
    await assertRefused(
      svc.anonymous.getMarketingItem(
        { itemId: randomUUID() },
        { headers: { authorization: 'Bearer forged' } },
      ),
      Code.Unauthenticated,
      'invalid principal token',
    );
  });
});
