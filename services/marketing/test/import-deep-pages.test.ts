/**
 * The performance imports list's total and its deep pages come from the counts kept per UTC week
 * of creation (migration 0014) rather than from counting and skipping every import. Whatever mix
 * of imports created around week boundaries and deleted, in concurrent transactions some of which
 * rolled back, the page the list returns at any offset is the page a plain OFFSET gives in the same
 * snapshot, and its total is count(*). Real PostgreSQL, the service's own migrations.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createPool, migrate, type Pool } from '@adsmcp/runtime/db';
import { stopTestServer, type TestDatabase, testDatabase } from '@adsmcp/testkit/postgres';
import { inTransaction, readWhileWriting } from '@adsmcp/testkit/snapshot-reads';
import fc from 'fast-check';
import { listImports } from '../src/store/import-store.ts';

let db: TestDatabase;
let pool: Pool;

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

/**
 * When an import is created: some hours ago, or on one of the last few UTC week starts or a
 * microsecond before one, where the week it is counted in turns over.
 */
type When = { hoursAgo: number } | { weeksAgo: number; justBefore: boolean };
const when: fc.Arbitrary<When> = fc.oneof(
  { weight: 1, arbitrary: fc.record({ hoursAgo: fc.integer({ min: 0, max: 24 * 21 }) }) },
  { weight: 2, arbitrary: fc.record({ weeksAgo: fc.integer({ min: 0, max: 3 }), justBefore: fc.boolean() }) },
);

function whenSql(w: When): { sql: string; value: number } {
  return 'hoursAgo' in w
    ? { sql: 'now() - make_interval(hours => $2::int)', value: w.hoursAgo }
    : {
        sql: `performance_import_week(now()) - make_interval(days => 7 * $2::int)${w.justBefore ? " - interval '1 microsecond'" : ''}`,
        value: w.weeksAgo,
      };
}

type Step = { op: 'create'; when: When; count: number } | { op: 'delete'; pick: number };
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    // Several imports at one time: their ids order them.
    arbitrary: fc.record({ op: fc.constant('create' as const), when, count: fc.integer({ min: 1, max: 6 }) }),
  },
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
      if (s.op === 'create') {
        const t = whenSql(s.when);
        const { rows } = await client.query<{ import_id: string }>(
          `INSERT INTO performance_imports (workspace_id, import_id, source, name, currency, timezone, attribution,
             since, until, format, content_hash, status, created_by, created_at)
           SELECT $1, gen_random_uuid(), 'other', 'An import', 'USD', 'UTC', 'last click', date '2026-01-01',
                  date '2026-01-31', 'rows', encode(sha256(gen_random_uuid()::text::bytea), 'hex'), 'completed',
                  'user:test', ${t.sql}
             FROM generate_series(1, $3)
           RETURNING import_id`,
          [workspaceId, t.value, s.count],
        );
        ids.push(...rows.map((r) => r.import_id));
        continue;
      }
      const id = ids[s.pick % Math.max(1, ids.length)];
      if (id === undefined) continue;
      await client.query(
        `DELETE FROM performance_imports WHERE workspace_id = $1 AND import_id IN (
           SELECT import_id FROM performance_imports WHERE workspace_id = $1 AND import_id = $2 FOR UPDATE SKIP LOCKED)`,
        [workspaceId, id],
      );
    }
  });
}

test('a deep performance imports page from the week counts is the page a plain OFFSET gives, and its total count(*), in one snapshot while imports are created', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.array(transaction, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 4 }),
      fc.array(fc.record({ offset: fc.nat(), limit: fc.integer({ min: 1, max: 4 }) }), {
        minLength: 1,
        maxLength: 8,
      }),
      async (rounds, reads) => {
        const workspaceId = randomUUID();
        const ids: string[] = [];
        await readWhileWriting(
          pool,
          rounds,
          (tx) => run(workspaceId, tx, ids),
          async (reader) => {
            const counted = await reader.query<{ n: number }>(
              'SELECT count(*)::int AS n FROM performance_imports WHERE workspace_id = $1',
              [workspaceId],
            );
            const matches = counted.rows[0]?.n ?? 0;
            for (const r of reads) {
              const offset = r.offset % (matches + 3);
              const plain = await reader.query<{ import_id: string }>(
                `SELECT import_id FROM performance_imports WHERE workspace_id = $1
                  ORDER BY created_at DESC, import_id DESC OFFSET $2 LIMIT $3`,
                [workspaceId, offset, r.limit],
              );
              const listed = await listImports(reader, workspaceId, offset, r.limit);
              const what = `page at ${offset} of ${r.limit} among ${matches}`;
              assert.deepEqual(
                listed.imports.map((i) => i.import_id),
                plain.rows.map((row) => row.import_id),
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

test('a page a hundred weeks deep is read from the week counts, not by skipping the imports before it', async () => {
  const workspaceId = randomUUID();
  // An import an hour for 100 weeks, as the benchmark's workspaces have.
  await pool.query(
    `INSERT INTO performance_imports (workspace_id, import_id, source, name, currency, timezone, attribution,
       since, until, format, content_hash, status, created_by, created_at)
     SELECT $1, gen_random_uuid(), 'other', 'Import ' || i, 'USD', 'UTC', 'last click', date '2026-01-01',
            date '2026-01-31', 'rows', encode(sha256(gen_random_uuid()::text::bytea), 'hex'), 'completed',
            'user:test', now() - i * interval '1 hour'
       FROM generate_series(1, 16800) AS i`,
    [workspaceId],
  );
  const offset = 16_790;
  const listed = await listImports(pool, workspaceId, offset, 5);
  assert.equal(listed.total, 16_800);
  assert.deepEqual(
    listed.imports.map((i) => i.name),
    ['Import 16791', 'Import 16792', 'Import 16793', 'Import 16794', 'Import 16795'],
  );
  // The buffers the page read: with the week counts, at most two weeks of the newest-first index
  // and a hundred week rows; the plain offset reads every entry before it (some hundred pages).
  const client = await pool.connect();
  try {
    const plan = async (sql: string, params: unknown[]) => {
      const { rows } = await client.query<{
        'QUERY PLAN': [{ Plan: { 'Shared Hit Blocks': number; 'Shared Read Blocks': number } }];
      }>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`, params);
      const p = rows[0]?.['QUERY PLAN'][0].Plan;
      return (p?.['Shared Hit Blocks'] ?? 0) + (p?.['Shared Read Blocks'] ?? 0);
    };
    await client.query('VACUUM ANALYZE performance_imports');
    await client.query('VACUUM ANALYZE performance_import_week_counts');
    const { rows: idx } = await client.query<{ pages: number }>(
      "SELECT relpages AS pages FROM pg_class WHERE relname = 'performance_imports_newest'",
    );
    const plainBlocks = await plan(
      `SELECT import_id FROM performance_imports WHERE workspace_id = $1
        ORDER BY created_at DESC, import_id DESC OFFSET $2 LIMIT 5`,
      [workspaceId, offset],
    );
    const indexPages = idx[0]?.pages ?? 0;
    assert.ok(
      plainBlocks >= indexPages / 2,
      `the plain offset reads the index (${plainBlocks} blocks of ${indexPages})`,
    );
    // listImports' own statement, as the store sends it, through a client that records it.
    let sent: { text: string; values: unknown[] } | undefined;
    await listImports(
      {
        query: (text: string, values: unknown[]) => {
          sent = { text, values };
          return client.query(text, values);
        },
      } as never,
      workspaceId,
      offset,
      5,
    );
    assert.ok(sent, 'listImports sent its statement');
    const weekBlocks = await plan(sent.text, sent.values);
    assert.ok(
      weekBlocks * 4 < plainBlocks,
      `the week counts' page reads ${weekBlocks} blocks, against ${plainBlocks} for the plain offset`,
    );
  } finally {
    client.release();
  }
});
