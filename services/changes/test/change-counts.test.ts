/**
 * The changes list's `total` comes from counts the store keeps (migration 0017), not from a count
 * of every match. Whatever mix of inserts, status moves, expiries and deletions ran, in concurrent
 * transactions some of which rolled back, the total of every filter the list has (each status as
 * readers see it, `expired` included, one account, unknown outcomes) equals the number of changes
 * the list itself returns for it. Real PostgreSQL, the service's own migrations.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createPool, migrate, type Pool } from '@adsmcp/runtime/db';
import { stopTestServer, type TestDatabase, testDatabase } from '@adsmcp/testkit/postgres';
import { inTransaction } from '@adsmcp/testkit/snapshot-reads';
import fc from 'fast-check';
import { CHANGE_COLUMNS, listChanges } from '../src/store/change-store.ts';

let db: TestDatabase;
let pool: Pool;

const STATUSES = ['prepared', 'approved', 'rejected', 'applying', 'applied', 'failed'] as const;
type Stored = (typeof STATUSES)[number];
const SHOWN = [...STATUSES, 'expired'] as const;
const expiry = { preparedValidHours: 72, approvalValidHours: 24 };

before(async () => {
  db = await testDatabase();
  pool = createPool(db.url, 'changes', 12);
  await migrate(pool, 'changes', fileURLToPath(new URL('../migrations', import.meta.url)));
});

after(async () => {
  await pool?.end();
  await db?.drop();
  await stopTestServer();
});

/** One step of a transaction, on the changes it made or on changes made before. */
type Step =
  | { kind: 'insert'; account: number; status: Stored; hoursAgo: number; count: number }
  | { kind: 'move'; pick: number; status: Stored; sent: boolean; resolution: string | null }
  | { kind: 'age'; pick: number; hours: number }
  | { kind: 'delete'; pick: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant('insert' as const),
    account: fc.integer({ min: 0, max: 2 }),
    status: fc.constantFrom(...STATUSES),
    // Either side of both expiry windows (24 h after approval, 72 h after prepare).
    hoursAgo: fc.constantFrom(1, 30, 100),
    count: fc.integer({ min: 1, max: 3 }),
  }),
  fc.record({
    kind: fc.constant('move' as const),
    pick: fc.nat(),
    status: fc.constantFrom(...STATUSES),
    sent: fc.boolean(),
    resolution: fc.constantFrom(null, 'send_again', 'applied', 'not_applied'),
  }),
  fc.record({ kind: fc.constant('age' as const), pick: fc.nat(), hours: fc.constantFrom(30, 80) }),
  fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }),
);

const transaction = fc.record({
  steps: fc.array(step, { minLength: 1, maxLength: 5 }),
  rollback: fc.boolean(),
});

async function run(
  workspaceId: string,
  accounts: string[],
  tx: { steps: Step[]; rollback: boolean },
  ids: string[],
): Promise<void> {
  await inTransaction(pool, tx.rollback, async (client) => {
    for (const s of tx.steps) {
      if (s.kind === 'insert') {
        const { rows } = await client.query<{ change_id: string }>(
          `INSERT INTO changes (change_id, workspace_id, account_id, tool, status, summary, method, path, body_json,
                               digest, target_path, target_before_json, prepared_by, prepared_at, approved_at)
           SELECT gen_random_uuid(), $1, $2, 'ads_update_ad', $3, 'A change', 'POST', '/ads/1', '{}',
                  repeat('a', 64), '/ads/1', '{}', 'agent', now() - make_interval(hours => $4),
                  CASE WHEN $3 <> 'prepared' THEN now() - make_interval(hours => $4) + interval '1 minute' END
             FROM generate_series(1, $5)
           RETURNING change_id`,
          [workspaceId, accounts[s.account], s.status, s.hoursAgo, s.count],
        );
        ids.push(...rows.map((r) => r.change_id));
        continue;
      }
      const id = ids[s.pick % Math.max(1, ids.length)];
      if (id === undefined) continue;
      // Each transaction moves only the changes it picks without waiting on another's rows: one
      // holding a change's row until it ends is not what this measures.
      const { rows } = await client.query(
        'SELECT 1 FROM changes WHERE change_id = $1 FOR UPDATE SKIP LOCKED',
        [id],
      );
      if (rows.length === 0) continue;
      if (s.kind === 'move')
        await client.query(
          `UPDATE changes SET status = $2, approved_at = coalesce(approved_at, now()),
                  sent_at = CASE WHEN $3 THEN now() END, resolution = $4
            WHERE change_id = $1`,
          [id, s.status, s.sent, s.resolution],
        );
      else if (s.kind === 'age')
        await client.query(
          `UPDATE changes SET prepared_at = prepared_at - make_interval(hours => $2),
                  approved_at = approved_at - make_interval(hours => $2) WHERE change_id = $1`,
          [id, s.hours],
        );
      else await client.query('DELETE FROM changes WHERE change_id = $1', [id]);
    }
  });
}

/** Every filter of the list: its total against the changes it lists. */
async function assertTotalsMatchTheList(workspaceId: string, accounts: string[]): Promise<void> {
  const now = new Date();
  for (const accountId of [undefined, ...accounts])
    for (const filter of [{}, { outcomeUnknown: true }, ...SHOWN.map((status) => ({ status }))] as {
      status?: string;
      outcomeUnknown?: boolean;
    }[]) {
      const { rows, total } = await listChanges(pool, {
        workspaceId,
        accountId,
        ...filter,
        expiry,
        now,
        limit: 100_000,
        offset: 0,
        // Expired read the day counts' way too, as deep pages are.
        expiredDaysFrom: 0,
      });
      assert.equal(
        total,
        rows.length,
        `total of ${JSON.stringify({ accountId, ...filter })} is ${total}, the list has ${rows.length}`,
      );
    }
}

test('the total of every list filter equals the changes listed, after concurrent inserts, moves, expiries and deletions', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.array(transaction, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 4 }),
      async (rounds) => {
        const workspaceId = randomUUID();
        const accounts = [randomUUID(), randomUUID(), randomUUID()];
        const ids: string[] = [];
        // Each round's transactions run at once, on their own connections.
        for (const round of rounds) await Promise.all(round.map((tx) => run(workspaceId, accounts, tx, ids)));
        await assertTotalsMatchTheList(workspaceId, accounts);
      },
    ),
    { numRuns: 40 },
  );
});

test('the kept counts equal count(*) of the changes per workspace, account, status and unknown outcome', async () => {
  // The same grouping as the migration's backfill, over every workspace the property left.
  const before = await pool.query(
    `SELECT workspace_id, account_id, status, outcome_unknown, sum(n)::int AS n FROM change_counts
      GROUP BY 1, 2, 3, 4 HAVING sum(n) <> 0 ORDER BY 1, 2, 3, 4`,
  );
  const counted = await pool.query(
    `SELECT workspace_id, account_id, status,
            change_outcome_unknown(status, sent_at, upstream_status, resolution) AS outcome_unknown, count(*)::int AS n
       FROM changes GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`,
  );
  assert.ok(counted.rows.length > 0, 'the property left changes to count');
  assert.deepEqual(before.rows, counted.rows);
});

test("CHANGE_COLUMNS, what the apply path's prepared statements return, is every column of the changes table in order", async () => {
  const { rows } = await pool.query<{ column_name: string }>(
    `SELECT column_name FROM information_schema.columns
      WHERE table_schema = 'changes' AND table_name = 'changes' ORDER BY ordinal_position`,
  );
  assert.deepEqual(
    rows.map((r) => r.column_name),
    [...CHANGE_COLUMNS],
  );
});
