/**
 * A page of the changes list deep into the history is found from the counts kept per day
 * (migration 0019) rather than by skipping every change before it. Whatever mix of inserts across
 * days, status moves, moves to another day and deletions ran, in concurrent transactions some of
 * which rolled back, the page the list returns for every filter (no filter, each status as shown,
 * expired, prepared and approved by the expiry settings and the time of the read, unknown
 * outcomes, each with or without one account), at any offset, with any expiry settings and a
 * time of reading on or a millisecond before the instant a day's changes expire, is the page a
 * plain OFFSET gives in the same snapshot. Real PostgreSQL, the service's own migrations.
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
import { listChanges } from '../src/store/change-store.ts';

let db: TestDatabase;
let pool: Pool;

const STATUSES = ['prepared', 'approved', 'rejected', 'applying', 'applied', 'failed'] as const;
type Stored = (typeof STATUSES)[number];

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

const preparedAt = (w: When, n: number) => whenSql('change_day', w, n);

type Step =
  | {
      kind: 'insert';
      account: number;
      status: Stored;
      when: When;
      count: number;
      /** Hours from prepare to approval. */
      approvedAfter: number;
    }
  | { kind: 'move'; pick: number; status: Stored; sent: boolean; resolution: string | null }
  | { kind: 'redate'; pick: number; when: When }
  | { kind: 'delete'; pick: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('insert' as const),
      account: fc.integer({ min: 0, max: 2 }),
      status: fc.constantFrom(...STATUSES),
      when,
      // Several changes at one time: the change id orders them.
      count: fc.integer({ min: 1, max: 4 }),
      // Every change has an approval time, as every approved change has (approveChange sets both).
      approvedAfter: fc.integer({ min: 0, max: 96 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('move' as const),
      pick: fc.nat(),
      status: fc.constantFrom(...STATUSES),
      sent: fc.boolean(),
      resolution: fc.constantFrom(null, 'send_again', 'not_applied'),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('redate' as const), pick: fc.nat(), when }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }) },
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
        const at = preparedAt(s.when, 4);
        const { rows } = await client.query<{ change_id: string }>(
          `INSERT INTO changes (change_id, workspace_id, account_id, tool, status, summary, method, path, body_json,
                               digest, target_path, target_before_json, prepared_by, prepared_at, approved_at)
           SELECT gen_random_uuid(), $1, $2, 'ads_update_ad', $3, 'A change', 'POST', '/ads/1', '{}',
                  repeat('a', 64), '/ads/1', '{}', 'agent', ${at.sql}, ${at.sql} + make_interval(hours => $6::int)
             FROM generate_series(1, $5)
           RETURNING change_id`,
          [workspaceId, accounts[s.account], s.status, at.value, s.count, s.approvedAfter],
        );
        ids.push(...rows.map((r) => r.change_id));
        continue;
      }
      const id = ids[s.pick % Math.max(1, ids.length)];
      if (id === undefined) continue;
      const { rows } = await client.query(
        'SELECT 1 FROM changes WHERE change_id = $1 FOR UPDATE SKIP LOCKED',
        [id],
      );
      if (rows.length === 0) continue;
      if (s.kind === 'move')
        await client.query(
          `UPDATE changes SET status = $2, sent_at = CASE WHEN $3 THEN now() END, resolution = $4
            WHERE change_id = $1`,
          [id, s.status, s.sent, s.resolution],
        );
      else if (s.kind === 'redate') {
        const at = preparedAt(s.when, 2);
        await client.query(`UPDATE changes SET prepared_at = ${at.sql} WHERE change_id = $1`, [id, at.value]);
      } else await client.query('DELETE FROM changes WHERE change_id = $1', [id]);
    }
  });
}

/** The filters. */
const FILTERS: { status?: string; outcomeUnknown?: boolean }[] = [
  {},
  { status: 'expired' },
  { status: 'prepared' },
  { status: 'approved' },
  { outcomeUnknown: true },
  { status: 'rejected' },
  { status: 'applying' },
  { status: 'applied' },
  { status: 'failed' },
];

const HOUR = 3_600_000;

/** The last UTC midnight. */
const MIDNIGHT = Math.floor(Date.now() / (24 * HOUR)) * 24 * HOUR;

/**
 * When a page is read: some hours from now, or on (or a millisecond before) the instant the
 * changes prepared on a UTC midnight expire (their hours after prepare, after approval, or both,
 * from the midnight), where a day's changes move from prepared or approved to expired.
 */
type ReadAt =
  | { hoursFromNow: number }
  | { midnightsAgo: number; after: 'prepare' | 'approval' | 'both'; early: boolean };
const readAt: fc.Arbitrary<ReadAt> = fc.oneof(
  fc.record({ hoursFromNow: fc.integer({ min: -24, max: 120 }) }),
  fc.record({
    midnightsAgo: fc.integer({ min: -1, max: 3 }),
    after: fc.constantFrom('prepare' as const, 'approval' as const, 'both' as const),
    early: fc.boolean(),
  }),
);

function readTime(at: ReadAt, hours: { preparedValidHours: number; approvalValidHours: number }): Date {
  if ('hoursFromNow' in at) return new Date(Date.now() + at.hoursFromNow * HOUR);
  const midnight = Math.floor(Date.now() / (24 * HOUR)) * 24 * HOUR - at.midnightsAgo * 24 * HOUR;
  const after =
    (at.after === 'approval' ? 0 : hours.preparedValidHours) +
    (at.after === 'prepare' ? 0 : hours.approvalValidHours);
  return new Date(midnight + after * HOUR - (at.early ? 1 : 0));
}

/**
 * A page to read: a filter, an account or none, an offset (taken modulo the matches, and past
 * them), a limit, the workspace's expiry settings and the time of reading.
 */
const read = fc.record({
  filter: fc.nat({ max: FILTERS.length - 1 }),
  preparedValidHours: fc.integer({ min: 1, max: 96 }),
  approvalValidHours: fc.integer({ min: 1, max: 96 }),
  at: readAt,
  account: fc.nat({ max: 3 }),
  offset: fc.nat(),
  limit: fc.integer({ min: 1, max: 4 }),
});

/**
 * The page a plain OFFSET gives: every match before it skipped. A prepared change is shown expired
 * from its hours after prepare on, an approved one from its hours after approval on.
 */
async function plainPage(
  db: Pick<Pool, 'query'>,
  workspaceId: string,
  accountId: string | undefined,
  filter: { status?: string; outcomeUnknown?: boolean },
  shown: { preparedValidHours: number; approvalValidHours: number; now: Date },
  offset: number,
  limit: number,
): Promise<{ ids: string[]; matches: number }> {
  const params: unknown[] = [workspaceId];
  const where = [`workspace_id = $1`];
  if (accountId !== undefined) where.push(`account_id = $${params.push(accountId)}`);
  const preparedUntil = `$${params.push(new Date(shown.now.getTime() - shown.preparedValidHours * HOUR))}::timestamptz`;
  const approvedUntil = `$${params.push(new Date(shown.now.getTime() - shown.approvalValidHours * HOUR))}::timestamptz`;
  const stillPrepared = `(status = 'prepared' AND prepared_at > ${preparedUntil})`;
  const stillApproved = `(status = 'approved' AND approved_at > ${approvedUntil})`;
  if (filter.outcomeUnknown)
    where.push('change_outcome_unknown(status, sent_at, upstream_status, resolution)');
  else if (filter.status === 'prepared') where.push(stillPrepared);
  else if (filter.status === 'approved') where.push(stillApproved);
  else if (filter.status === 'expired')
    where.push(
      `((status = 'prepared' AND prepared_at <= ${preparedUntil}) OR (status = 'approved' AND approved_at <= ${approvedUntil}))`,
    );
  else if (filter.status !== undefined) where.push(`status = $${params.push(filter.status)}`);
  // Typed even where a filter does not read them.
  where.push(`${preparedUntil} IS NOT NULL AND ${approvedUntil} IS NOT NULL`);
  const page = await db.query<{ change_id: string }>(
    `SELECT change_id FROM changes WHERE ${where.join(' AND ')}
      ORDER BY prepared_at DESC, change_id OFFSET $${params.length + 1} LIMIT $${params.length + 2}`,
    [...params, offset, limit],
  );
  const count = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM changes WHERE ${where.join(' AND ')}`,
    params,
  );
  return { ids: page.rows.map((r) => r.change_id), matches: count.rows[0]?.n ?? 0 };
}

test('a deep page from the day counts is the page a plain OFFSET gives, for every filter, expiry setting and time of reading, in one snapshot while changes are written', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.array(transaction, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 4 }),
      fc.array(read, { minLength: 1, maxLength: 8 }),
      async (rounds, reads) => {
        const workspaceId = randomUUID();
        const accounts = [randomUUID(), randomUUID(), randomUUID()];
        const ids: string[] = [];
        // The last round's transactions commit while the pages are read, each pair in one
        // snapshot (repeatable read): the list and the plain OFFSET see the same changes.
        await readWhileWriting(
          pool,
          rounds,
          (tx) => run(workspaceId, accounts, tx, ids),
          async (reader) => {
            for (const r of reads) {
              const filter = FILTERS[r.filter] ?? {};
              const accountId = accounts[r.account];
              const expiry = {
                preparedValidHours: r.preparedValidHours,
                approvalValidHours: r.approvalValidHours,
              };
              const now = readTime(r.at, expiry);
              const shown = { ...expiry, now };
              const { matches } = await plainPage(reader, workspaceId, accountId, filter, shown, 0, 1);
              // Expired is read from day counts less the changes still in their window: a count off
              // by the few changes of one day shows at only a few offsets, so it is read at each.
              const offsets =
                filter.status === 'expired'
                  ? Array.from({ length: matches + 2 }, (_, i) => i)
                  : [r.offset % (matches + 3)];
              for (const offset of offsets) {
                const plain = await plainPage(reader, workspaceId, accountId, filter, shown, offset, r.limit);
                // Expired pages are read both ways: from the day counts (from offset 0 here,
                // though the store starts at a deeper one), and by the offset alone.
                for (const expiredDaysFrom of filter.status === 'expired' ? [0, Infinity] : [0]) {
                  const { rows } = await listChanges(reader, {
                    workspaceId,
                    accountId,
                    ...filter,
                    expiry,
                    now,
                    limit: r.limit,
                    offset,
                    expiredDaysFrom,
                  });
                  assert.deepEqual(
                    rows.map((c) => c.change_id),
                    plain.ids,
                    `page of ${JSON.stringify({ accountId, ...filter, ...expiry, now, offset, limit: r.limit, expiredDaysFrom })} among ${matches}`,
                  );
                }
              }
            }
          },
        );
      },
    ),
    { numRuns: 200 },
  );
});

test('the day counts equal count(*) of the changes per workspace, UTC day, account (and every one), status (and every one) and unknown outcome', async () => {
  const kept = await pool.query(
    `SELECT workspace_id, day, account_id, status, outcome_unknown, sum(n)::int AS n FROM change_day_counts
      GROUP BY 1, 2, 3, 4, 5 HAVING sum(n) <> 0 ORDER BY 1, 2, 3, 4, 5`,
  );
  const counted = await pool.query(
    `SELECT workspace_id, day, coalesce(account_id, '00000000-0000-0000-0000-000000000000') AS account_id,
            coalesce(status, '*') AS status, coalesce(outcome_unknown, false) AS outcome_unknown, count(*)::int AS n
       FROM (SELECT workspace_id, date_trunc('day', prepared_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day,
                    account_id, status, change_outcome_unknown(status, sent_at, upstream_status, resolution) AS outcome_unknown
               FROM changes) c
      GROUP BY GROUPING SETS ((workspace_id, day, account_id, status, outcome_unknown),
                              (workspace_id, day, status, outcome_unknown), (workspace_id, day, account_id), (workspace_id, day))
      ORDER BY 1, 2, 3, 4, 5`,
  );
  assert.ok(counted.rows.length > 0, 'the property left changes to count');
  assert.deepEqual(kept.rows, counted.rows);
});

test('expired changes over thirty days, some of each stored status and some still in their windows: every page from the day counts, and by the offset alone, is the plain OFFSET page', async () => {
  // A fixed history where every day holds expired changes of both stored statuses (prepared past
  // its window, approved past its approval's) beside changes still in their windows and every
  // other status, so that a day walk that leaves out either status, or subtracts the windows
  // wrongly, moves the pages at most offsets. The changes are 97 minutes apart back from a UTC
  // midnight (the first, prepared, on it), and each read is at one of these instants: the
  // midnight; the instant the midnight's prepared change leaves its window (the window then
  // starts on a UTC midnight), and a millisecond before; the instant a prepared change in the
  // middle of a day leaves its window, and a millisecond before.
  const workspaceId = randomUUID();
  const accountId = randomUUID();
  const statuses: Stored[] = [
    'prepared',
    'approved',
    'applied',
    'prepared',
    'rejected',
    'approved',
    'failed',
  ];
  await pool.query(
    `INSERT INTO changes (change_id, workspace_id, account_id, tool, status, summary, method, path, body_json,
                          digest, target_path, target_before_json, prepared_by, prepared_at, approved_at)
     SELECT gen_random_uuid(), $1, $2, 'ads_update_ad', ($3::text[])[1 + i % cardinality($3::text[])], 'A change',
            'POST', '/ads/1', '{}', repeat('a', 64), '/ads/1', '{}', 'agent', $4::timestamptz - i * interval '97 minutes',
            CASE WHEN ($3::text[])[1 + i % cardinality($3::text[])] <> 'prepared'
                 THEN least($4::timestamptz, $4::timestamptz - i * interval '97 minutes' + (i % 5) * interval '7 hours') END
       FROM generate_series(0, 445) AS i`,
    [workspaceId, accountId, statuses, new Date(MIDNIGHT)],
  );
  const expiry = { preparedValidHours: 48, approvalValidHours: 12 };
  const window = expiry.preparedValidHours * HOUR;
  // One connection that plans each statement once, as the changes service's second pool does.
  const generic = createPool(db.url, 'changes', 1, undefined, { genericPlans: true });
  after(() => generic.end());
  // Change 42 is prepared (42 % 7 = 0), at 04:06 UTC.
  const midDay = MIDNIGHT - 42 * 97 * 60_000 + window;
  const reads = [MIDNIGHT, MIDNIGHT + window, MIDNIGHT + window - 1, midDay, midDay - 1];
  for (const now of reads.map((t) => new Date(t)))
    for (const account of [undefined, accountId]) {
      const { matches } = await plainPage(
        pool,
        workspaceId,
        account,
        { status: 'expired' },
        { ...expiry, now },
        0,
        1,
      );
      assert.ok(matches > 100, `expired changes on most days (${matches})`);
      for (let offset = 0; offset <= matches; offset++) {
        const plain = await plainPage(
          pool,
          workspaceId,
          account,
          { status: 'expired' },
          { ...expiry, now },
          offset,
          3,
        );
        // From the day counts, planned for the values and planned once; by the offset alone.
        for (const [expiredDaysFrom, genericPlans] of [
          [0, undefined],
          [0, generic],
          [Infinity, undefined],
        ] as const) {
          const { rows, total } = await listChanges(pool, {
            workspaceId,
            accountId: account,
            status: 'expired',
            expiry,
            now,
            limit: 3,
            offset,
            expiredDaysFrom,
            ...(genericPlans ? { genericPlans } : {}),
          });
          assert.deepEqual(
            rows.map((c) => c.change_id),
            plain.ids,
            `expired page at ${offset} of ${matches}${account ? ' of one account' : ''} at ${now.toISOString()}, day counts from ${expiredDaysFrom}${genericPlans ? ', planned once' : ''}`,
          );
          assert.equal(total, matches);
        }
      }
    }
  // The pages planned once were: one generic plan a statement (with an account and without),
  // used for every read after its first, and no plan made for a read's values.
  const { rows: plans } = await generic.query<{ generic_plans: number; custom_plans: number }>(
    'SELECT generic_plans::int, custom_plans::int FROM pg_prepared_statements ORDER BY name',
  );
  assert.equal(plans.length, 2, 'one statement with an account, one without');
  for (const p of plans) {
    assert.equal(p.custom_plans, 0);
    assert.ok(p.generic_plans > 100, `each used for every read (${p.generic_plans})`);
  }
});
