/**
 * A page of the proposals list deep into the history is found from the counts kept per day
 * (migration 0005) rather than by skipping every proposal before it. Whatever mix of new
 * proposals across days, status moves, moves to another day and deletions ran, in concurrent
 * transactions some of which rolled back, the page the list returns for every filter the day
 * counts serve (no filter, one optimizer, one account, each with or without a status, expired,
 * pending review and approved as shown at the time of reading by the proposals' deadlines), at any
 * offset and any time of reading (on or a millisecond before a deadline too), is the page a plain
 * OFFSET gives in the same snapshot. Real PostgreSQL, the service's own migrations.
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
import { PROPOSAL_STATUSES, type ProposalStatus } from '../src/domain/proposal.ts';
import { listProposals } from '../src/store/review-store.ts';

let db: TestDatabase;
let pool: Pool;

before(async () => {
  db = await testDatabase();
  pool = createPool(db.url, 'optimizer', 12);
  await migrate(pool, 'optimizer', fileURLToPath(new URL('../migrations', import.meta.url)));
});

after(async () => {
  await pool?.end();
  await db?.drop();
  await stopTestServer();
});

const createdAt = (w: When, n: number) => whenSql('proposal_day', w, n);

type Step =
  | {
      kind: 'insert';
      optimizer: number;
      status: ProposalStatus;
      when: When;
      count: number;
      /** Hours from creation to the review deadline and to the publish deadline (none: not set). */
      reviewHours: number | null;
      publishHours: number | null;
    }
  | { kind: 'move'; pick: number; status: ProposalStatus }
  | { kind: 'redate'; pick: number; when: When }
  | { kind: 'delete'; pick: number };

const status = fc.constantFrom(...PROPOSAL_STATUSES);
/** Whole half-days, so that a read some half-days after a midnight often falls on a deadline. */
const deadlineHours = fc.integer({ min: 0, max: 8 }).map((n) => n * 12);
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('insert' as const),
      optimizer: fc.integer({ min: 0, max: 2 }),
      status,
      when,
      // Several proposals at one time: their position orders them.
      count: fc.integer({ min: 1, max: 4 }),
      reviewHours: fc.option(deadlineHours, { nil: null, freq: 8 }),
      publishHours: fc.option(deadlineHours, { nil: null, freq: 8 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('move' as const), pick: fc.nat(), status }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('redate' as const), pick: fc.nat(), when }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }) },
);
const transaction = fc.record({
  steps: fc.array(step, { minLength: 1, maxLength: 5 }),
  rollback: fc.boolean(),
});

/** A workspace with three optimizers, two of them on one account, each with one completed run. */
async function workspace() {
  const workspaceId = randomUUID();
  const accounts = [randomUUID(), randomUUID()];
  const optimizers: { optimizerId: string; accountId: string; runId: string }[] = [];
  for (const accountId of [accounts[0], accounts[0], accounts[1]] as string[]) {
    const o = { optimizerId: randomUUID(), accountId, runId: randomUUID() };
    await pool.query(
      `INSERT INTO optimizers (optimizer_id, workspace_id, account_id, name, config, enabled, paused_at, revision, created_at, updated_at)
       VALUES ($1, $2, $3, 'Optimizer', '{}', false, now(), 1, now(), now())`,
      [o.optimizerId, workspaceId, o.accountId],
    );
    await pool.query(
      `INSERT INTO review_runs (run_id, workspace_id, optimizer_id, account_id, status, trigger, requested_by, outcome,
                                summary, completed_at, created_at, updated_at)
       VALUES ($1, $2, $3, $4, 'completed', 'request', 'agent', 'proposals', 'Run', now(), now(), now())`,
      [o.runId, workspaceId, o.optimizerId, o.accountId],
    );
    optimizers.push(o);
  }
  return { workspaceId, accounts, optimizers };
}

let position = 0;

async function run(
  ws: Awaited<ReturnType<typeof workspace>>,
  tx: { steps: Step[]; rollback: boolean },
  ids: string[],
): Promise<void> {
  await inTransaction(pool, tx.rollback, async (client) => {
    for (const s of tx.steps) {
      if (s.kind === 'insert') {
        const o = ws.optimizers[s.optimizer] as (typeof ws.optimizers)[number];
        const first = position;
        position += s.count;
        const at = createdAt(s.when, 7);
        const { rows } = await client.query<{ proposal_id: string }>(
          `INSERT INTO proposals (proposal_id, workspace_id, optimizer_id, account_id, run_id, position, status, revision,
                                  variant, created_at, updated_at, review_expires_at, publish_by)
           SELECT gen_random_uuid(), $1, $2, $3, $4, $5 + i, $6, 1, '{}', ${at.sql}, now(),
                  ${at.sql} + make_interval(hours => $9::int), ${at.sql} + make_interval(hours => $10::int)
             FROM generate_series(1, $8) AS i
           RETURNING proposal_id`,
          [
            ws.workspaceId,
            o.optimizerId,
            o.accountId,
            o.runId,
            first,
            s.status,
            at.value,
            s.count,
            s.reviewHours,
            s.publishHours,
          ],
        );
        ids.push(...rows.map((r) => r.proposal_id));
        continue;
      }
      const id = ids[s.pick % Math.max(1, ids.length)];
      if (id === undefined) continue;
      const { rows } = await client.query(
        'SELECT 1 FROM proposals WHERE proposal_id = $1 FOR UPDATE SKIP LOCKED',
        [id],
      );
      if (rows.length === 0) continue;
      if (s.kind === 'move')
        await client.query('UPDATE proposals SET status = $2 WHERE proposal_id = $1', [id, s.status]);
      else if (s.kind === 'redate') {
        const at = createdAt(s.when, 2);
        await client.query(`UPDATE proposals SET created_at = ${at.sql} WHERE proposal_id = $1`, [
          id,
          at.value,
        ]);
      } else await client.query('DELETE FROM proposals WHERE proposal_id = $1', [id]);
    }
  });
}

const HOUR = 3_600_000;

/**
 * When a page is read: some hours from now, or some hours after a UTC midnight (the proposals
 * created on it pass their deadlines on whole hours after it), or a millisecond before that.
 */
type ReadAt = { hoursFromNow: number } | { midnightsAgo: number; hours: number; early: boolean };
const readAt: fc.Arbitrary<ReadAt> = fc.oneof(
  fc.record({ hoursFromNow: fc.integer({ min: -24, max: 120 }) }),
  fc.record({
    midnightsAgo: fc.integer({ min: -1, max: 3 }),
    hours: deadlineHours,
    early: fc.boolean(),
  }),
);

function readTime(at: ReadAt): Date {
  if ('hoursFromNow' in at) return new Date(Date.now() + at.hoursFromNow * HOUR);
  const midnight = Math.floor(Date.now() / (24 * HOUR)) * 24 * HOUR - at.midnightsAgo * 24 * HOUR;
  return new Date(midnight + at.hours * HOUR - (at.early ? 1 : 0));
}

/**
 * A page to read: which optimizer or account, a status or none, an offset (modulo the matches, and
 * past them), a limit, the time of reading.
 */
const read = fc.record({
  narrow: fc.constantFrom('none', 'optimizer', 'account', 'optimizer and account'),
  optimizer: fc.nat({ max: 2 }),
  // Expired, read from the day counts less the proposals before their deadline, half the time.
  status: fc.oneof(
    fc.constant('expired'),
    fc.option(fc.constantFrom(...PROPOSAL_STATUSES), { nil: undefined }),
  ),
  at: readAt,
  offset: fc.nat(),
  limit: fc.integer({ min: 1, max: 4 }),
});

/**
 * The page a plain OFFSET gives: every match before it skipped. A proposal pending review or
 * approved is shown expired from its deadline on (a deadline not set never passes).
 */
async function plainPage(
  q: Pick<Pool, 'query'>,
  f: { workspaceId: string; optimizerId?: string; accountId?: string; status?: string },
  now: Date,
  offset: number,
  limit: number,
): Promise<{ ids: string[]; matches: number }> {
  const params: unknown[] = [f.workspaceId];
  const where = ['workspace_id = $1'];
  if (f.optimizerId !== undefined) where.push(`optimizer_id = $${params.push(f.optimizerId)}`);
  if (f.accountId !== undefined) where.push(`account_id = $${params.push(f.accountId)}`);
  const at = `$${params.push(now)}::timestamptz`;
  const passed = `((status = 'pending_review' AND review_expires_at <= ${at}) OR (status = 'approved' AND publish_by <= ${at}))`;
  if (f.status === 'expired') where.push(`(status = 'expired' OR ${passed})`);
  else if (f.status !== undefined)
    where.push(`status = $${params.push(f.status)} AND NOT coalesce(${passed}, false)`);
  else where.push(`${at} IS NOT NULL`);
  const page = await q.query<{ proposal_id: string }>(
    `SELECT proposal_id FROM proposals WHERE ${where.join(' AND ')}
      ORDER BY created_at DESC, position, proposal_id OFFSET $${params.length + 1} LIMIT $${params.length + 2}`,
    [...params, offset, limit],
  );
  const count = await q.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM proposals WHERE ${where.join(' AND ')}`,
    params,
  );
  return { ids: page.rows.map((r) => r.proposal_id), matches: count.rows[0]?.n ?? 0 };
}

test('a deep proposals page from the day counts is the page a plain OFFSET gives, for every filter and time of reading, in one snapshot while proposals are written', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.array(transaction, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 4 }),
      fc.array(read, { minLength: 1, maxLength: 8 }),
      async (rounds, reads) => {
        const ws = await workspace();
        const ids: string[] = [];
        // The last round's transactions commit while the pages are read, each pair in one snapshot.
        await readWhileWriting(
          pool,
          rounds,
          (tx) => run(ws, tx, ids),
          async (reader) => {
            for (const r of reads) {
              const o = ws.optimizers[r.optimizer] as (typeof ws.optimizers)[number];
              const f = {
                workspaceId: ws.workspaceId,
                ...(r.narrow.startsWith('optimizer') ? { optimizerId: o.optimizerId } : {}),
                ...(r.narrow.endsWith('account') ? { accountId: o.accountId } : {}),
                ...(r.status === undefined ? {} : { status: r.status }),
              };
              const now = readTime(r.at);
              const { matches } = await plainPage(reader, f, now, 0, 1);
              // Expired is read from day counts less the proposals before their deadline: a count off
              // by the few proposals of one day shows at only a few offsets, so it is read at each.
              const offsets =
                r.status === 'expired'
                  ? Array.from({ length: matches + 2 }, (_, i) => i)
                  : [r.offset % (matches + 3)];
              for (const offset of offsets) {
                const plain = await plainPage(reader, f, now, offset, r.limit);
                const listed = await listProposals(reader, { ...f, now, limit: r.limit, offset });
                assert.deepEqual(
                  listed.map((p) => p.proposalId),
                  plain.ids,
                  `page of ${JSON.stringify({ narrow: r.narrow, status: r.status, now, offset, limit: r.limit })} among ${matches}`,
                );
              }
            }
          },
        );
      },
    ),
    { numRuns: 200 },
  );
});

test('the proposal day counts equal count(*) per workspace, UTC day, optimizer and account (and every one), and status (and every one)', async () => {
  const kept = await pool.query(
    `SELECT workspace_id, day, optimizer_id, account_id, status, sum(n)::int AS n FROM proposal_day_counts
      GROUP BY 1, 2, 3, 4, 5 HAVING sum(n) <> 0 ORDER BY 1, 2, 3, 4, 5`,
  );
  const counted = await pool.query(
    `SELECT workspace_id, day, coalesce(optimizer_id, '00000000-0000-0000-0000-000000000000') AS optimizer_id,
            coalesce(account_id, '00000000-0000-0000-0000-000000000000') AS account_id,
            coalesce(status, '*') AS status, count(*)::int AS n
       FROM (SELECT workspace_id, date_trunc('day', created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day,
                    optimizer_id, account_id, status FROM proposals) p
      GROUP BY GROUPING SETS ((workspace_id, day, optimizer_id, account_id, status), (workspace_id, day, status),
                              (workspace_id, day, optimizer_id, account_id), (workspace_id, day))
      ORDER BY 1, 2, 3, 4, 5`,
  );
  assert.ok(counted.rows.length > 0, 'the property left proposals to count');
  assert.deepEqual(kept.rows, counted.rows);
});
