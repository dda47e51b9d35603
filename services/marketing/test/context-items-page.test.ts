/**
 * The guidance `ads_get_marketing_context` pages through (playbooks first, then brand items, each
 * most recently updated first) is read from each kind's listing index and its total from the kept
 * counts, not by reading and counting every guidance item. Whatever mix of kinds, update times
 * (ties included), archived items and other kinds the workspace holds, and whatever another
 * workspace holds, every page at every offset, and the total, are those of the plain query over
 * every live guidance item. Real PostgreSQL, the service's own migrations.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createPool, migrate, type Pool } from '@adsmcp/runtime/db';
import { stopTestServer, type TestDatabase, testDatabase } from '@adsmcp/testkit/postgres';
import fc from 'fast-check';
import { KINDS } from '../src/domain/item-data.ts';
import { listContextItems } from '../src/store/item-store.ts';

let db: TestDatabase;
let pool: Pool;

before(async () => {
  db = await testDatabase();
  pool = createPool(db.url, 'marketing', 4);
  await migrate(pool, 'marketing', fileURLToPath(new URL('../migrations', import.meta.url)));
});

after(async () => {
  await pool?.end();
  await db?.drop();
  await stopTestServer();
});

const item = fc.record({
  kind: fc.constantFrom(...KINDS),
  // A few minutes apart at most, so that times repeat and the ids order them.
  minute: fc.integer({ min: 0, max: 5 }),
  archived: fc.boolean(),
  otherWorkspace: fc.boolean(),
});

test('every page of the guidance and its total are those of the plain query over every guidance item', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(item, { maxLength: 25 }),
      fc.integer({ min: 1, max: 7 }),
      async (items, limit) => {
        const workspaceId = randomUUID();
        const otherId = randomUUID();
        for (const i of items)
          await pool.query(
            `INSERT INTO marketing_items (workspace_id, item_id, kind, name, data, revision, created_at, updated_at, archived_at)
             VALUES ($1, gen_random_uuid(), $2, 'An item', '{}', 1, now(), now() - $3 * interval '1 minute',
                     CASE WHEN $4 THEN now() END)`,
            [i.otherWorkspace ? otherId : workspaceId, i.kind, i.minute, i.archived],
          );
        const { rows: plain } = await pool.query<{ item_id: string }>(
          `SELECT item_id FROM marketing_items
            WHERE workspace_id = $1 AND archived_at IS NULL AND kind IN ('playbook', 'brand')
            ORDER BY (kind = 'brand'), updated_at DESC, item_id DESC`,
          [workspaceId],
        );
        for (let offset = 0; offset <= plain.length + 1; offset += limit) {
          const got = await listContextItems(pool, workspaceId, { offset, limit });
          assert.equal(got.total, plain.length, `the total at offset ${offset}`);
          assert.deepEqual(
            got.items.map((i) => i.itemId),
            plain.slice(offset, offset + limit).map((r) => r.item_id),
            `the page at offset ${offset}, limit ${limit}`,
          );
        }
      },
    ),
    { numRuns: 60 },
  );
});
