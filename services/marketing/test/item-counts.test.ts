/**
 * The marketing items list's `total` comes from counts the store keeps (migration 0012) when the
 * filters hold no free text. Whatever mix of saves, updates that move an item's kind, collection
 * or tags, archives, restores and deletions ran, in concurrent transactions some of which rolled
 * back, the total of every filter without a query (none, kind, collection, tag and their
 * combinations) equals the number of items the list itself returns for it. Real PostgreSQL, the
 * service's own migrations.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createPool, migrate, type Pool } from '@adsmcp/runtime/db';
import { stopTestServer, type TestDatabase, testDatabase } from '@adsmcp/testkit/postgres';
import { inTransaction } from '@adsmcp/testkit/snapshot-reads';
import fc from 'fast-check';
import type { Kind } from '../src/domain/item-data.ts';
import { listItems } from '../src/store/item-store.ts';

let db: TestDatabase;
let pool: Pool;

const KINDS = ['brief', 'playbook'] as const satisfies readonly Kind[];
const COLLECTIONS = ['', 'spring', 'summer'] as const;
const TAGS = ['sale', 'video', 'q3'] as const;

before(async () => {
  db = await testDatabase();
  pool = createPool(db.url, 'marketing', 12);
  await migrate(pool, 'marketing', fileURLToPath(new URL('../migrations', import.meta.url)));
});

after(async () => {
  await pool?.end();
  await db?.drop();
  await stopTestServer();
});

// A tag may repeat within an item: the tag filter matches such an item once.
const tags = fc.array(fc.constantFrom(...TAGS), { maxLength: 4 });

/** One step of a transaction, on the items it saved or on items saved before. */
type Step =
  | { op: 'save'; kind: Kind; collection: string; tags: string[]; count: number }
  | { op: 'move'; pick: number; kind: Kind; collection: string; tags: string[] }
  | { op: 'rename'; pick: number }
  | { op: 'archive'; pick: number }
  | { op: 'restore'; pick: number }
  | { op: 'delete'; pick: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    op: fc.constant('save' as const),
    kind: fc.constantFrom(...KINDS),
    collection: fc.constantFrom(...COLLECTIONS),
    tags,
    count: fc.integer({ min: 1, max: 3 }),
  }),
  fc.record({
    op: fc.constant('move' as const),
    pick: fc.nat(),
    kind: fc.constantFrom(...KINDS),
    collection: fc.constantFrom(...COLLECTIONS),
    tags,
  }),
  fc.record({ op: fc.constant('rename' as const), pick: fc.nat() }),
  fc.record({ op: fc.constant('archive' as const), pick: fc.nat() }),
  fc.record({ op: fc.constant('restore' as const), pick: fc.nat() }),
  fc.record({ op: fc.constant('delete' as const), pick: fc.nat() }),
);

const transaction = fc.record({
  steps: fc.array(step, { minLength: 1, maxLength: 5 }),
  rollback: fc.boolean(),
});

async function run(
  workspaceId: string,
  tx: { steps: Step[]; rollback: boolean },
  ids: string[],
): Promise<void> {
  await inTransaction(pool, tx.rollback, async (client) => {
    for (const s of tx.steps) {
      if (s.op === 'save') {
        const { rows } = await client.query<{ item_id: string }>(
          `INSERT INTO marketing_items (workspace_id, item_id, kind, name, collection, tags, data, revision)
           SELECT $1, gen_random_uuid(), $2, 'An item', $3, $4, '{}', 1 FROM generate_series(1, $5)
           RETURNING item_id`,
          [workspaceId, s.kind, s.collection, s.tags, s.count],
        );
        ids.push(...rows.map((r) => r.item_id));
        continue;
      }
      const id = ids[s.pick % Math.max(1, ids.length)];
      if (id === undefined) continue;
      // Each transaction writes only the items it picks without waiting on another's rows: one
      // holding an item's row until it ends is not what this measures.
      const { rows } = await client.query(
        'SELECT 1 FROM marketing_items WHERE workspace_id = $1 AND item_id = $2 FOR UPDATE SKIP LOCKED',
        [workspaceId, id],
      );
      if (rows.length === 0) continue;
      const where = 'WHERE workspace_id = $1 AND item_id = $2';
      if (s.op === 'move')
        await client.query(
          `UPDATE marketing_items SET kind = $3, collection = $4, tags = $5, revision = revision + 1 ${where}`,
          [workspaceId, id, s.kind, s.collection, s.tags],
        );
      else if (s.op === 'rename')
        await client.query(`UPDATE marketing_items SET name = 'Renamed', revision = revision + 1 ${where}`, [
          workspaceId,
          id,
        ]);
      else if (s.op === 'archive')
        await client.query(
          `UPDATE marketing_items SET archived_at = coalesce(archived_at, now()), revision = revision + 1 ${where}`,
          [workspaceId, id],
        );
      else if (s.op === 'restore')
        await client.query(`UPDATE marketing_items SET archived_at = NULL ${where}`, [workspaceId, id]);
      else await client.query(`DELETE FROM marketing_items ${where}`, [workspaceId, id]);
    }
  });
}

/** Every filter without free text, and their combinations: its total against the items it lists. */
async function assertTotalsMatchTheList(workspaceId: string): Promise<void> {
  for (const kind of [undefined, ...KINDS])
    for (const collection of [undefined, ...COLLECTIONS])
      for (const tag of [undefined, ...TAGS]) {
        const filter = {
          ...(kind === undefined ? {} : { kind }),
          ...(collection === undefined ? {} : { collection }),
          ...(tag === undefined ? {} : { tag }),
        };
        const { items, total } = await listItems(pool, workspaceId, { ...filter, offset: 0, limit: 100_000 });
        assert.equal(
          total,
          items.length,
          `total of ${JSON.stringify(filter)} is ${total}, the list has ${items.length}`,
        );
      }
}

test('the total of every list filter equals the items listed, after concurrent saves, moves, archives and deletions', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.array(transaction, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 4 }),
      async (rounds) => {
        const workspaceId = randomUUID();
        const ids: string[] = [];
        // Each round's transactions run at once, on their own connections.
        for (const round of rounds) await Promise.all(round.map((tx) => run(workspaceId, tx, ids)));
        await assertTotalsMatchTheList(workspaceId);
      },
    ),
    { numRuns: 30 },
  );
});

test('a query still counts its matches, and archived items are in no total', async () => {
  const workspaceId = randomUUID();
  await pool.query(
    `INSERT INTO marketing_items (workspace_id, item_id, kind, name, collection, tags, data, revision, archived_at)
     VALUES ($1, gen_random_uuid(), 'brief', 'Spring sale', 'spring', '{sale}', '{}', 1, NULL),
            ($1, gen_random_uuid(), 'brief', 'Spring video', 'spring', '{video}', '{}', 1, NULL),
            ($1, gen_random_uuid(), 'brief', 'Spring sale, old', 'spring', '{sale}', '{}', 2, now())`,
    [workspaceId],
  );
  const page = { offset: 0, limit: 20 };
  assert.equal((await listItems(pool, workspaceId, { ...page })).total, 2);
  assert.equal((await listItems(pool, workspaceId, { tag: 'sale', ...page })).total, 1);
  assert.equal((await listItems(pool, workspaceId, { query: 'sale', ...page })).total, 1);
  assert.equal(
    (await listItems(pool, workspaceId, { query: 'spring', collection: 'spring', ...page })).total,
    2,
  );
});

test('the kept counts equal count(*) of the live items per workspace, kind, collection and tag', async () => {
  // The same grouping as the migration's backfill, over every workspace the tests left.
  const kept = await pool.query(
    `SELECT workspace_id, kind, collection, sum(n)::int AS n FROM marketing_item_counts
      GROUP BY 1, 2, 3 HAVING sum(n) <> 0 ORDER BY 1, 2, 3`,
  );
  const counted = await pool.query(
    `SELECT workspace_id, kind, collection, count(*)::int AS n FROM marketing_items
      WHERE archived_at IS NULL GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
  );
  assert.ok(counted.rows.length > 0, 'the tests left items to count');
  assert.deepEqual(kept.rows, counted.rows);
  const keptTags = await pool.query(
    `SELECT workspace_id, tag, kind, collection, sum(n)::int AS n FROM marketing_item_tag_counts
      GROUP BY 1, 2, 3, 4 HAVING sum(n) <> 0 ORDER BY 1, 2, 3, 4`,
  );
  const countedTags = await pool.query(
    `SELECT workspace_id, t AS tag, kind, collection, count(*)::int AS n
       FROM marketing_items CROSS JOIN LATERAL (SELECT DISTINCT t FROM unnest(tags) AS t) AS u
      WHERE archived_at IS NULL GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`,
  );
  assert.ok(countedTags.rows.length > 0, 'the tests left tagged items to count');
  assert.deepEqual(keptTags.rows, countedTags.rows);
});
