import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { MarketingItem } from '@adsmcp/proto/marketing/v1/marketing_pb';
import type { Principal } from '@adsmcp/runtime/principal';
import { validData } from '@adsmcp/testkit/marketing-items';
import { assertRefused } from '@adsmcp/testkit/service-harness';
import type { JsonObject } from '@bufbuild/protobuf';
import { Code } from '@connectrpc/connect';
import type { Kind } from '../src/domain/item-data.ts';
import { principal, type RunningService, startService } from './service.ts';

let svc: RunningService;

before(async () => {
  svc = await startService();
});

after(async () => {
  await svc?.stop();
});

async function save(
  who: Principal,
  kind: Kind,
  name: string,
  data = validData(kind),
): Promise<MarketingItem> {
  const { item } = await svc.client.saveMarketingItem({ kind, name, data: data as JsonObject }, svc.as(who));
  assert.ok(item);
  return item;
}

async function archive(who: Principal, item: MarketingItem): Promise<void> {
  await svc.client.archiveMarketingItem(
    { itemId: item.itemId, expectedRevision: item.revision },
    svc.as(who),
  );
}

const names = (items: readonly MarketingItem[]) => items.map((i) => i.name);

describe('the marketing context', () => {
  test('lists only live playbook and brand items, playbooks first, newest first within each kind', async () => {
    const who = principal();
    await save(who, 'brand', 'Brand A');
    await save(who, 'playbook', 'Play A');
    await save(who, 'playbook', 'Play B');
    await save(who, 'brand', 'Brand B');
    await save(who, 'brief', 'A brief');
    await save(who, 'inspiration', 'An inspiration');
    await save(who, 'batch', 'A batch');
    await save(who, 'creative', 'A creative');
    await archive(who, await save(who, 'playbook', 'Archived play'));
    await archive(who, await save(who, 'brand', 'Archived brand'));

    const res = await svc.client.getMarketingContext({}, svc.as(who));
    assert.deepEqual(names(res.items), ['Play B', 'Play A', 'Brand B', 'Brand A']);
    assert.equal(res.total, 4);
    assert.equal(res.nextOffset, undefined);
    assert.equal(res.brief, undefined);
    assert.deepEqual(res.references, []);
  });

  test('pages with offset and limit, giving the total and where the next page starts', async () => {
    const who = principal();
    for (let n = 1; n <= 5; n++) await save(who, 'playbook', `Play ${n}`);
    const first = await svc.client.getMarketingContext({ limit: 2 }, svc.as(who));
    assert.deepEqual(names(first.items), ['Play 5', 'Play 4']);
    assert.equal(first.total, 5);
    assert.equal(first.nextOffset, 2);
    const last = await svc.client.getMarketingContext({ offset: 4, limit: 2 }, svc.as(who));
    assert.deepEqual(names(last.items), ['Play 1']);
    assert.equal(last.nextOffset, undefined);
    const past = await svc.client.getMarketingContext({ offset: 10 }, svc.as(who));
    assert.deepEqual(past.items, []);
    assert.equal(past.total, 5);
  });

  test('without a limit a page holds 20 items', async () => {
    const who = principal();
    for (let n = 1; n <= 21; n++) await save(who, 'brand', `Brand ${n}`);
    const res = await svc.client.getMarketingContext({}, svc.as(who));
    assert.equal(res.items.length, 20);
    assert.equal(res.nextOffset, 20);
  });

  test('a brief comes back with its references resolved in order: found, archived and missing', async () => {
    const who = principal();
    const play = await save(who, 'playbook', 'Play');
    const gone = await save(who, 'inspiration', 'Old example');
    await archive(who, gone);
    const missing = randomUUID();
    const brief = await save(who, 'brief', 'Spring brief', {
      ...validData('brief'),
      reference_ids: [missing, play.itemId.toUpperCase(), gone.itemId],
    });

    const res = await svc.client.getMarketingContext({ briefId: brief.itemId }, svc.as(who));
    assert.equal(res.brief?.itemId, brief.itemId);
    assert.equal(res.brief?.name, 'Spring brief');
    assert.deepEqual(
      res.references.map((r) => [r.itemId, r.status, r.item?.name]),
      [
        [missing, 'missing', undefined],
        [play.itemId, 'found', 'Play'],
        [gone.itemId, 'archived', 'Old example'],
      ],
    );
    assert.equal(res.references[2]?.item?.archived, true);
    assert.deepEqual(names(res.items), ['Play']);
  });

  test('a brief that lists one item twice in reference_ids is refused at save, naming the index', async () => {
    const who = principal();
    const play = await save(who, 'playbook', 'Play');
    const other = randomUUID();
    await assertRefused(
      svc.client.saveMarketingItem(
        {
          kind: 'brief',
          name: 'Twice',
          data: { ...validData('brief'), reference_ids: [play.itemId, other, play.itemId.toUpperCase()] },
        },
        svc.as(who),
      ),
      Code.InvalidArgument,
      /data\.reference_ids\[2\] repeats data\.reference_ids\[0\] .*: list each referenced item once/,
    );
    assert.equal((await svc.client.listMarketingItems({ kind: 'brief' }, svc.as(who))).total, 0);
  });

  test('a brief saved before with a repeated reference lists every entry, in order', async () => {
    const who = principal();
    const play = await save(who, 'playbook', 'Play');
    const missing = randomUUID();
    const brief = await save(who, 'brief', 'Old brief', {
      ...validData('brief'),
      reference_ids: [play.itemId],
    });
    // As saved before repeats were refused.
    const repeated = [play.itemId, missing, play.itemId.toUpperCase(), missing];
    await svc.pool.query(
      `UPDATE marketing_items SET data = jsonb_set(data, '{reference_ids}', $2::jsonb) WHERE item_id = $1`,
      [brief.itemId, JSON.stringify(repeated)],
    );
    const res = await svc.client.getMarketingContext({ briefId: brief.itemId }, svc.as(who));
    assert.deepEqual(
      res.references.map((r) => [r.itemId, r.status, r.item?.name]),
      [
        [play.itemId, 'found', 'Play'],
        [missing, 'missing', undefined],
        [play.itemId, 'found', 'Play'],
        [missing, 'missing', undefined],
      ],
    );
  });

  test('a brief without reference_ids comes back with no references', async () => {
    const who = principal();
    const { reference_ids: _, ...data } = validData('brief');
    const brief = await save(who, 'brief', 'Plain brief', data);
    const res = await svc.client.getMarketingContext({ briefId: brief.itemId }, svc.as(who));
    assert.equal(res.brief?.itemId, brief.itemId);
    assert.deepEqual(res.references, []);
  });

  test('a brief_id that names an item of another kind is refused', async () => {
    const who = principal();
    const play = await save(who, 'playbook', 'Play');
    await assertRefused(
      svc.client.getMarketingContext({ briefId: play.itemId }, svc.as(who)),
      Code.InvalidArgument,
      /brief_id .* is a playbook item, not a brief/,
    );
  });

  test('a brief_id that is not a UUID, or names no item, is refused', async () => {
    const who = principal();
    await assertRefused(
      svc.client.getMarketingContext({ briefId: 'not-a-uuid' }, svc.as(who)),
      Code.InvalidArgument,
      /`brief_id` must be a UUID/,
    );
    await assertRefused(
      svc.client.getMarketingContext({ briefId: randomUUID() }, svc.as(who)),
      Code.NotFound,
      /brief_id .* no marketing item of this workspace/,
    );
  });

  test("another workspace's items are never seen: not listed, not as a brief, not as a reference", async () => {
    const mine = principal();
    const theirs = principal();
    const theirPlay = await save(theirs, 'playbook', 'Their play');
    const theirBrief = await save(theirs, 'brief', 'Their brief');
    await save(mine, 'brand', 'My brand');
    const myBrief = await save(mine, 'brief', 'My brief', {
      ...validData('brief'),
      reference_ids: [theirPlay.itemId],
    });

    const res = await svc.client.getMarketingContext({ briefId: myBrief.itemId }, svc.as(mine));
    assert.deepEqual(names(res.items), ['My brand']);
    assert.equal(res.total, 1);
    assert.deepEqual(
      res.references.map((r) => [r.itemId, r.status, r.item]),
      [[theirPlay.itemId, 'missing', undefined]],
    );
    await assertRefused(
      svc.client.getMarketingContext({ briefId: theirBrief.itemId }, svc.as(mine)),
      Code.NotFound,
      /no marketing item of this workspace/,
    );
  });

  test('needs the read scope', async () => {
    await assertRefused(
      svc.client.getMarketingContext({}, svc.as(principal({ scopes: [] }))),
      Code.PermissionDenied,
      /read scope/,
    );
  });
});
