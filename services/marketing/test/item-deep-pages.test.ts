/**
 * A page of the marketing items list deep into the history is found from the counts kept per day
 * of the last update (migration 0013) rather than by skipping every item before it. Whatever mix
 * of saves across days, updates that move an item to another day, kind, collection or tags,
 * archives, restores and deletions ran, in concurrent transactions some of which rolled back, the
 * page the list returns for every filter without free text (none, kind, collection, tag and their
 * combinations), at any offset, is the page a plain OFFSET gives in the same snapshot. Real
 * PostgreSQL, the service's own migrations.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createPool, migrate, type Pool } from '@adsmcp/runtime/db';
import { type When, when, whenSql } from '@adsmcp/testkit/day-boundaries';
import { stopTestServer, type TestDatabase, testDatabase } from '@adsmcp/testkit/postgres';
import { inTransaction, readWhileWriting } from '@adsmcp/testkit/snapshot-reads';
import fc from 'fast-check';
import type { Kind } from '../src/domain/item-data.ts';
import { listItems } from '../src/store/item-store.ts';

let db: TestDatabase;
let pool: Pool;

const KINDS = ['brief', 'playbook'] as const satisfies readonly Kind[];
const COLLECTIONS = ['', 'spring'] as const;
const TAGS = ['sale', 'video'] as const;

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

const at = (w: When, n: number) => whenSql('marketing_item_day', w, n);

// A tag may repeat within an item: the tag filter matches such an item once.
const tags = fc.array(fc.constantFrom(...TAGS), { maxLength: 3 });

type Step =
  | { op: 'save'; kind: Kind; collection: string; tags: string[]; when: When; count: number }
  | { op: 'move'; pick: number; kind: Kind; collection: string; tags: string[]; when: When }
  | { op: 'touch'; pick: number; when: When }
  | { op: 'archive'; pick: number; when: When }
  | { op: 'restore'; pick: number }
  | { op: 'delete'; pick: number };

const kind = fc.constantFrom(...KINDS);
const collection = fc.constantFrom(...COLLECTIONS);
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('save' as const),
      kind,
      collection,
      tags,
      when,
      // Several items at one time: their ids order them.
      count: fc.integer({ min: 1, max: 4 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('move' as const), pick: fc.nat(), kind, collection, tags, when }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('touch' as const), pick: fc.nat(), when }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('archive' as const), pick: fc.nat(), when }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('restore' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('delete' as const), pick: fc.nat() }) },
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
        const t = at(s.when, 5);
        const { rows } = await client.query<{ item_id: string }>(
          `INSERT INTO marketing_items (workspace_id, item_id, kind, name, collection, tags, data, revision, created_at, updated_at)
           SELECT $1, gen_random_uuid(), $2, 'An item', $3, $4, '{}', 1, ${t.sql}, ${t.sql} FROM generate_series(1, $6)
           RETURNING item_id`,
          [workspaceId, s.kind, s.collection, s.tags, t.value, s.count],
        );
        ids.push(...rows.map((r) => r.item_id));
        continue;
      }
      const id = ids[s.pick % Math.max(1, ids.length)];
      if (id === undefined) continue;
      const { rows } = await client.query(
        'SELECT 1 FROM marketing_items WHERE workspace_id = $1 AND item_id = $2 FOR UPDATE SKIP LOCKED',
        [workspaceId, id],
      );
      if (rows.length === 0) continue;
      const where = 'WHERE workspace_id = $1 AND item_id = $2';
      if (s.op === 'move') {
        const t = at(s.when, 6);
        await client.query(
          `UPDATE marketing_items SET kind = $3, collection = $4, tags = $5, updated_at = ${t.sql},
                  revision = revision + 1 ${where}`,
          [workspaceId, id, s.kind, s.collection, s.tags, t.value],
        );
      } else if (s.op === 'touch') {
        // A save of the name alone: the item moves to its new update time, maybe another day.
        const t = at(s.when, 3);
        await client.query(
          `UPDATE marketing_items SET name = 'Saved', updated_at = ${t.sql}, revision = revision + 1 ${where}`,
          [workspaceId, id, t.value],
        );
      } else if (s.op === 'archive') {
        const t = at(s.when, 3);
        await client.query(
          `UPDATE marketing_items SET archived_at = coalesce(archived_at, now()), updated_at = ${t.sql},
                  revision = revision + 1 ${where}`,
          [workspaceId, id, t.value],
        );
      } else if (s.op === 'restore')
        await client.query(`UPDATE marketing_items SET archived_at = NULL ${where}`, [workspaceId, id]);
      else await client.query(`DELETE FROM marketing_items ${where}`, [workspaceId, id]);
    }
  });
}

/** A page to read: a kind, collection and tag or none of each, an offset (modulo the matches, and past them), a limit. */
const read = fc.record({
  kind: fc.option(kind, { nil: undefined }),
  collection: fc.option(collection, { nil: undefined }),
  tag: fc.option(fc.constantFrom(...TAGS), { nil: undefined }),
  offset: fc.nat(),
  limit: fc.integer({ min: 1, max: 4 }),
});

/** The page a plain OFFSET gives: every match before it skipped. */
async function plainPage(
  q: Pick<Pool, 'query'>,
  workspaceId: string,
  f: { kind?: string; collection?: string; tag?: string },
  offset: number,
  limit: number,
): Promise<{ ids: string[]; matches: number }> {
  const params: unknown[] = [workspaceId];
  const where = ['workspace_id = $1', 'archived_at IS NULL'];
  if (f.kind !== undefined) where.push(`kind = $${params.push(f.kind)}`);
  if (f.collection !== undefined) where.push(`collection = $${params.push(f.collection)}`);
  if (f.tag !== undefined) where.push(`$${params.push(f.tag)} = ANY(tags)`);
  const page = await q.query<{ item_id: string }>(
    `SELECT item_id FROM marketing_items WHERE ${where.join(' AND ')}
      ORDER BY updated_at DESC, item_id DESC OFFSET $${params.length + 1} LIMIT $${params.length + 2}`,
    [...params, offset, limit],
  );
  const count = await q.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM marketing_items WHERE ${where.join(' AND ')}`,
    params,
  );
  return { ids: page.rows.map((r) => r.item_id), matches: count.rows[0]?.n ?? 0 };
}

test('a deep marketing items page from the day counts is the page a plain OFFSET gives, for every filter without a query, in one snapshot while items are saved', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.array(transaction, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 4 }),
      fc.array(read, { minLength: 1, maxLength: 8 }),
      async (rounds, reads) => {
        const workspaceId = randomUUID();
        const ids: string[] = [];
        // The last round's transactions commit while the pages are read, each pair in one snapshot.
        await readWhileWriting(
          pool,
          rounds,
          (tx) => run(workspaceId, tx, ids),
          async (reader) => {
            for (const r of reads) {
              const f = {
                ...(r.kind === undefined ? {} : { kind: r.kind }),
                ...(r.collection === undefined ? {} : { collection: r.collection }),
                ...(r.tag === undefined ? {} : { tag: r.tag }),
              };
              const { matches } = await plainPage(reader, workspaceId, f, 0, 1);
              const offset = r.offset % (matches + 3);
              const plain = await plainPage(reader, workspaceId, f, offset, r.limit);
              const listed = await listItems(reader, workspaceId, { ...f, limit: r.limit, offset });
              const what = `page of ${JSON.stringify({ ...f, offset, limit: r.limit })} among ${matches}`;
              assert.deepEqual(
                listed.items.map((item) => item.itemId),
                plain.ids,
                what,
              );
              assert.equal(listed.total, matches, `total of the ${what}`);
            }
          },
        );
      },
    ),
    { numRuns: 60 },
  );
});

test('the item day counts equal count(*) of the live items per workspace, UTC day of the last update, kind (and every one), collection (and every one) and tag (and none)', async () => {
  const kept = await pool.query(
    `SELECT workspace_id, key, day, sum(n)::int AS n FROM marketing_item_day_counts
      GROUP BY 1, 2, 3 HAVING sum(n) <> 0 ORDER BY 1, 2, 3`,
  );
  const counted = await pool.query(
    `SELECT workspace_id, jsonb_build_array(kind, collection, tag)::text AS key, day, count(*)::int AS n
       FROM (SELECT i.workspace_id, date_trunc('day', i.updated_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day,
                    i.kind, i.collection, t.tag
               FROM marketing_items i
                    CROSS JOIN LATERAL (SELECT NULL::text AS tag UNION ALL SELECT DISTINCT u FROM unnest(i.tags) AS u) t
              WHERE i.archived_at IS NULL) p
      GROUP BY GROUPING SETS ((workspace_id, day, kind, collection, tag), (workspace_id, day, collection, tag),
                              (workspace_id, day, kind, tag), (workspace_id, day, tag))
      ORDER BY 1, 2, 3`,
  );
  assert.ok(counted.rows.length > 0, 'the property left items to count');
  assert.deepEqual(kept.rows, counted.rows);
});
