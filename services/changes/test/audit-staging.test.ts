/**
 * The audit log's two-step append (store/audit-store.ts): a state change stages its event in its
 * own transaction without waiting on the workspace's head, and folds chain the committed events.
 * Whatever mix of writers ran at once, some rolled back, with folds running beside them, the chain
 * verifies and holds exactly the committed events, each once, each writer's in its order; an event
 * whose transaction commits after a later one's is chained after it, not lost. Real PostgreSQL,
 * the service's own migrations, a connection per writer.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { createPool, inTransaction, migrate, type Pool, type PoolClient } from '@adsmcp/runtime/db';
import { stopTestServer, type TestDatabase, testDatabase } from '@adsmcp/testkit/postgres';
import fc from 'fast-check';
import {
  appendAuditEvent,
  appendChainedAuditEvents,
  chainStagedEvents,
  listAuditEvents,
  verifyAuditChain,
} from '../src/store/audit-store.ts';
import { sweepStagedAuditEvents } from '../src/work/audit-chainer.ts';

let db: TestDatabase;
let pool: Pool;

before(async () => {
  db = await testDatabase();
  pool = createPool(db.url, 'changes', 16);
  await migrate(pool, 'changes', fileURLToPath(new URL('../migrations', import.meta.url)));
});

after(async () => {
  await pool?.end();
  await db?.drop();
  await stopTestServer();
});

/** An event of writer `w`, its `n`th: the details name it, so the chain's rows can be told apart. */
const event = (workspaceId: string, w: number, n: number) => ({
  workspaceId,
  actor: `writer:${w}`,
  kind: 'test.written',
  subject: `${w}:${n}`,
  details: { writer: w, n },
});

/** A transaction begun by hand: no after-commit fold, as when a process dies right after its commit. */
async function openTransaction(): Promise<PoolClient> {
  const client = await pool.connect();
  await client.query('BEGIN');
  return client;
}

async function end(client: PoolClient, how: 'COMMIT' | 'ROLLBACK'): Promise<void> {
  try {
    await client.query(how);
  } finally {
    client.release();
  }
}

/** The whole chain, oldest first, as a reader sees it. */
async function chain(workspaceId: string): Promise<string[]> {
  const rows = await listAuditEvents(pool, { workspaceId, afterSeq: 0n, limit: 10_000 });
  return rows.map((r) => r.subject);
}

async function staged(workspaceId: string): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM audit_staged WHERE workspace_id = $1',
    [workspaceId],
  );
  return rows[0]?.n ?? 0;
}

const writer = fc.record({
  events: fc.integer({ min: 1, max: 3 }),
  rollback: fc.boolean(),
  // How long the transaction stays open after its last event: folds run meanwhile.
  holdMs: fc.integer({ min: 0, max: 15 }),
  // Begun by hand (chained by a fold or a reader only) or by inTransaction (chained after its commit).
  byHand: fc.boolean(),
});

test('concurrent writers, some rolled back, with folds beside them: the chain verifies and holds exactly the committed events, each once, in each writer order', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(writer, { minLength: 2, maxLength: 10 }),
      fc.integer({ min: 1, max: 4 }),
      async (writers, folds) => {
        const ws = randomUUID();
        const run = async (w: (typeof writers)[number], i: number): Promise<void> => {
          const write = async (tx: PoolClient) => {
            for (let n = 0; n < w.events; n++) await appendAuditEvent(tx, event(ws, i, n));
            await sleep(w.holdMs);
          };
          if (w.byHand) {
            const tx = await openTransaction();
            await write(tx).catch(async (err: unknown) => {
              await end(tx, 'ROLLBACK');
              throw err;
            });
            await end(tx, w.rollback ? 'ROLLBACK' : 'COMMIT');
            return;
          }
          await inTransaction(pool, async (tx) => {
            await write(tx);
            if (w.rollback) throw new Error('rolled back');
          }).catch((err: unknown) => {
            if (!(err instanceof Error && err.message === 'rolled back')) throw err;
          });
        };
        const folding = async (): Promise<void> => {
          for (let k = 0; k < 5; k++) {
            await chainStagedEvents(pool, ws, false);
            await sleep(3);
          }
        };
        await Promise.all([
          ...writers.map(run),
          ...Array.from({ length: folds }, folding),
          // A source-keyed append (another service's event) holds the head while it chains.
          inTransaction(pool, (tx) =>
            appendChainedAuditEvents(tx, ws, [
              { actor: 'gateway', kind: 'test.relayed', subject: 'g', details: {}, sourceKey: 'g:1' },
            ]),
          ),
        ]);
        const subjects = await chain(ws);
        const expected = writers.flatMap((w, i) =>
          w.rollback ? [] : Array.from({ length: w.events }, (_, n) => `${i}:${n}`),
        );
        assert.deepEqual(
          subjects.filter((s) => s !== 'g').sort(),
          [...expected].sort(),
          'exactly the committed events, each once',
        );
        assert.equal(subjects.filter((s) => s === 'g').length, 1);
        for (const [i] of writers.entries()) {
          const mine = subjects.filter((s) => s.startsWith(`${i}:`));
          assert.deepEqual(mine, [...mine].sort(), `writer ${i}'s events in the order it wrote them`);
        }
        const verified = await verifyAuditChain(pool, ws);
        assert.deepEqual([verified.broken, verified.rows], [undefined, expected.length + 1]);
        assert.equal(await staged(ws), 0, 'nothing left staged');
      },
    ),
    { numRuns: 12 },
  );
});

test('an event whose transaction commits after a later one is chained after it, not lost', async () => {
  const ws = randomUUID();
  const early = await openTransaction();
  await appendAuditEvent(early, event(ws, 1, 0));
  const late = await openTransaction();
  await appendAuditEvent(late, event(ws, 2, 0));
  await end(late, 'COMMIT');
  // The fold sees the later id committed and the earlier one not yet.
  assert.equal(await chainStagedEvents(pool, ws, false), 1);
  await end(early, 'COMMIT');
  assert.equal(await chainStagedEvents(pool, ws, false), 1);
  assert.deepEqual(await chain(ws), ['2:0', '1:0']);
  const verified = await verifyAuditChain(pool, ws);
  assert.deepEqual([verified.broken, verified.rows], [undefined, 2]);
});

test("a state change's event does not wait for a transaction holding the workspace's head", async () => {
  const ws = randomUUID();
  await inTransaction(pool, (tx) => appendAuditEvent(tx, event(ws, 0, 0)));
  const holder = await openTransaction();
  // Another service's append holds the head until its transaction ends.
  await appendChainedAuditEvents(holder, ws, [
    { actor: 'gateway', kind: 'test.relayed', subject: 'g', details: {}, sourceKey: 'g:1' },
  ]);
  try {
    await inTransaction(pool, async (tx) => {
      await tx.query(`SET LOCAL lock_timeout = '2s'`);
      await appendAuditEvent(tx, event(ws, 1, 0));
    });
  } finally {
    await end(holder, 'COMMIT');
  }
  assert.deepEqual(await chain(ws), ['0:0', 'g', '1:0']);
});

test('an event committed without its fold (its process gone) is chained by the sweep, and a reader never misses it', async () => {
  const ws = randomUUID();
  const tx = await openTransaction();
  await appendAuditEvent(tx, event(ws, 1, 0));
  await end(tx, 'COMMIT');
  assert.equal(await staged(ws), 1, 'staged, not chained yet');
  assert.ok((await sweepStagedAuditEvents(pool)) >= 1);
  assert.equal(await staged(ws), 0);
  const { rows } = await pool.query<{ subject: string }>(
    'SELECT subject FROM audit_log WHERE workspace_id = $1',
    [ws],
  );
  assert.deepEqual(
    rows.map((r) => r.subject),
    ['1:0'],
  );

  const other = randomUUID();
  const unswept = await openTransaction();
  await appendAuditEvent(unswept, event(other, 1, 0));
  await end(unswept, 'COMMIT');
  assert.deepEqual(await chain(other), ['1:0'], 'the reader chained it before reading');
});

test('gathered events (the apply worker outcomes) are chained by one later fold, not each at its commit', async () => {
  const ws = randomUUID();
  const events = 10;
  await Promise.all(
    Array.from({ length: events }, (_, n) =>
      inTransaction(pool, (tx) => appendAuditEvent(tx, event(ws, n, 0), 'gathered')),
    ),
  );
  assert.equal(await staged(ws), events, 'committed, staged, not chained at the commit');
  // No reader and no sweep here: only the gathered fold can chain them.
  const deadline = Date.now() + 5000;
  while ((await staged(ws)) > 0 && Date.now() < deadline) await sleep(25);
  assert.equal(await staged(ws), 0, 'chained by the gathered fold');
  const { rows } = await pool.query<{ folds: number; n: number }>(
    'SELECT count(DISTINCT xmin::text)::int AS folds, count(*)::int AS n FROM audit_log WHERE workspace_id = $1',
    [ws],
  );
  // Each fold is one transaction: the rows it inserted share its xmin.
  assert.equal(rows[0]?.n, events);
  assert.ok((rows[0]?.folds ?? events) <= events / 2, `${rows[0]?.folds} folds for ${events} events`);
  assert.equal((await verifyAuditChain(pool, ws)).broken, undefined);
});
