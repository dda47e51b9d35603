/**
 * The proposals list's `total` comes from counts the store keeps (migration 0004), not from a
 * count of every match. Whatever mix of new proposals, status moves, deadlines passing and
 * deletions ran, in concurrent transactions some of which rolled back, the total of every filter
 * the list has (each status as readers see it, `expired` included, one optimizer, one account, one
 * run) equals the number of proposals the list itself returns for it. Real PostgreSQL, the
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
import { PROPOSAL_STATUSES, type ProposalStatus } from '../src/domain/proposal.ts';
import { countProposals, listProposals } from '../src/store/review-store.ts';

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

type Step =
  | { kind: 'insert'; optimizer: number; status: ProposalStatus; hoursLeft: number; count: number }
  | { kind: 'move'; pick: number; status: ProposalStatus; hoursLeft: number }
  | { kind: 'delete'; pick: number };

const status = fc.constantFrom(...PROPOSAL_STATUSES);
// A deadline passed or still ahead.
const hoursLeft = fc.constantFrom(-5, 5);
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant('insert' as const),
    optimizer: fc.integer({ min: 0, max: 1 }),
    status,
    hoursLeft,
    count: fc.integer({ min: 1, max: 3 }),
  }),
  fc.record({ kind: fc.constant('move' as const), pick: fc.nat(), status, hoursLeft }),
  fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }),
);
const transaction = fc.record({
  steps: fc.array(step, { minLength: 1, maxLength: 5 }),
  rollback: fc.boolean(),
});

/** A workspace with two optimizers (of two accounts), each with one completed run. */
async function workspace() {
  const workspaceId = randomUUID();
  const optimizers: { optimizerId: string; accountId: string; runId: string }[] = [];
  for (let i = 0; i < 2; i++) {
    const o = { optimizerId: randomUUID(), accountId: randomUUID(), runId: randomUUID() };
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
  return { workspaceId, optimizers };
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
        const { rows } = await client.query<{ proposal_id: string }>(
          `INSERT INTO proposals (proposal_id, workspace_id, optimizer_id, account_id, run_id, position, status, revision,
                                  variant, review_expires_at, publish_by, created_at, updated_at)
           SELECT gen_random_uuid(), $1, $2, $3, $4, $5 + i, $6, 1, '{}',
                  now() + make_interval(hours => $7), now() + make_interval(hours => $7), now(), now()
             FROM generate_series(1, $8) AS i
           RETURNING proposal_id`,
          [ws.workspaceId, o.optimizerId, o.accountId, o.runId, first, s.status, s.hoursLeft, s.count],
        );
        ids.push(...rows.map((r) => r.proposal_id));
        continue;
      }
      const id = ids[s.pick % Math.max(1, ids.length)];
      if (id === undefined) continue;
      // Only proposals no other transaction holds: waiting on another's row is not what this measures.
      const { rows } = await client.query(
        'SELECT 1 FROM proposals WHERE proposal_id = $1 FOR UPDATE SKIP LOCKED',
        [id],
      );
      if (rows.length === 0) continue;
      if (s.kind === 'move')
        await client.query(
          `UPDATE proposals SET status = $2, review_expires_at = now() + make_interval(hours => $3),
                  publish_by = now() + make_interval(hours => $3) WHERE proposal_id = $1`,
          [id, s.status, s.hoursLeft],
        );
      else await client.query('DELETE FROM proposals WHERE proposal_id = $1', [id]);
    }
  });
}

test('the total of every proposals list filter equals the proposals listed, after concurrent writes and deadlines passing', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.array(transaction, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 4 }),
      async (rounds) => {
        const ws = await workspace();
        const ids: string[] = [];
        for (const round of rounds) await Promise.all(round.map((tx) => run(ws, tx, ids)));
        const now = new Date();
        const o = ws.optimizers[0] as (typeof ws.optimizers)[number];
        for (const narrow of [
          {},
          { optimizerId: o.optimizerId },
          { accountId: o.accountId },
          { runId: o.runId },
        ])
          for (const st of [undefined, ...PROPOSAL_STATUSES]) {
            const filter = { workspaceId: ws.workspaceId, ...narrow, status: st, now };
            const [listed, total] = await Promise.all([
              listProposals(pool, { ...filter, limit: 100_000, offset: 0 }),
              countProposals(pool, filter),
            ]);
            assert.equal(
              total,
              listed.length,
              `total of ${JSON.stringify({ ...narrow, status: st })} is ${total}, the list has ${listed.length}`,
            );
          }
      },
    ),
    { numRuns: 15 },
  );
});
