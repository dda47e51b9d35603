/**
 * The approved changes' list is read from the approval window's index (the changes approved within
 * the window), not by walking the list index past every change stored approved whose approval
 * expired long ago. The pages are those of the plain rule: stored approved, approved within the
 * workspace's hours before now, newest prepare first; a change approved minutes inside the window
 * is listed and one approved minutes before it is not, whatever their prepare times. Real
 * PostgreSQL, the service's own migrations.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createPool, migrate, type Pool } from '@adsmcp/runtime/db';
import { stopTestServer, type TestDatabase, testDatabase } from '@adsmcp/testkit/postgres';
import { listChanges } from '../src/store/change-store.ts';

let db: TestDatabase;
let pool: Pool;

before(async () => {
  db = await testDatabase();
  pool = createPool(db.url, 'changes', 4);
  await migrate(pool, 'changes', fileURLToPath(new URL('../migrations', import.meta.url)));
});

after(async () => {
  await pool?.end();
  await db?.drop();
  await stopTestServer();
});

test('approved pages hold the changes approved within the window, at its edge too, in prepare order', async () => {
  const workspaceId = randomUUID();
  const accountId = randomUUID();
  const now = new Date();
  const expiry = { preparedValidHours: 72, approvalValidHours: 24 };
  // [minutes before now it was prepared, minutes before now it was approved, status]
  const made: [number, number, string][] = [
    [30, 20, 'approved'], // in the window
    [24 * 60 + 100, 24 * 60 - 10, 'approved'], // approved 10 minutes inside the window's edge
    [24 * 60 + 50, 24 * 60 - 5, 'approved'], // and 5 minutes inside
    [24 * 60 + 40, 24 * 60 + 10, 'approved'], // 10 minutes past it: expired
    [10, 5, 'applied'],
    ...Array.from({ length: 60 }, (_, i): [number, number, string] => [
      3 * 24 * 60 + i,
      3 * 24 * 60 + i - 1,
      'approved',
    ]), // long expired
  ];
  const ids = new Map<string, number>();
  for (const [i, [preparedAgo, approvedAgo, status]] of made.entries()) {
    const id = randomUUID();
    ids.set(id, i);
    await pool.query(
      `INSERT INTO changes (change_id, workspace_id, account_id, tool, status, summary, method, path, body_json, digest,
                            target_path, target_before_json, prepared_by, prepared_at, approved_by, approved_at)
       VALUES ($1, $2, $3, 'ads_update_ad', $4, 'A change', 'POST', '/v1/ads/1', '{}', repeat('a', 64),
               '/v1/ads/1', '{}', 'user:a', $5::timestamptz - $6 * interval '1 minute', 'user:b',
               $5::timestamptz - $7 * interval '1 minute')`,
      [id, workspaceId, accountId, status, now, preparedAgo, approvedAgo],
    );
  }
  const shown = [0, 2, 1]; // in the window, newest prepare first
  for (const limit of [1, 2, 5])
    for (let offset = 0; offset <= shown.length; offset++) {
      const { rows, total } = await listChanges(pool, {
        workspaceId,
        status: 'approved',
        expiry,
        now,
        limit,
        offset,
      });
      assert.deepEqual(
        rows.map((r) => ids.get(r.change_id)),
        shown.slice(offset, offset + limit),
        `approved, limit ${limit}, offset ${offset}`,
      );
      assert.equal(total, shown.length);
    }
  const { rows: expired } = await listChanges(pool, {
    workspaceId,
    status: 'expired',
    expiry,
    now,
    limit: 100,
    offset: 0,
  });
  assert.equal(expired.length, 61, 'the change approved 10 minutes past the window and the 60 older ones');
});
