/**
 * dayHoldingOffset on its own, against real PostgreSQL: the day it finds and the matches newer
 * than it are the ones a plain walk of the day counts gives (whatever rows a day is split into,
 * whatever ranges are merged, whatever live counts are subtracted), and the statement reads the
 * day rows only down to that day, not the whole history's. The lists' own property tests check
 * the pages it leads to (services/*\/test/*-deep-pages.test.ts, deep-offset-pages.test.ts).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { stopTestServer, type TestDatabase, testDatabase } from '@adsmcp/testkit/postgres';
import fc from 'fast-check';
import { dayHoldingOffset } from '../src/day-pages.ts';
import { createPool, type Pool } from '../src/db.ts';

let db: TestDatabase;
let pool: Pool;

before(async () => {
  db = await testDatabase();
  pool = createPool(db.url, 'day_pages');
  await pool.query(`CREATE SCHEMA day_pages; SET search_path = day_pages;
    CREATE TABLE counts (key int NOT NULL, day timestamptz NOT NULL, n bigint NOT NULL);
    CREATE INDEX counts_key ON counts (key, day DESC) INCLUDE (n);
    CREATE TABLE live (key int NOT NULL, day timestamptz NOT NULL, n bigint NOT NULL)`);
});

after(async () => {
  await pool?.end();
  await db?.drop();
  await stopTestServer();
});

const DAY_MS = 86_400_000;
const FIRST = Date.UTC(2026, 0, 1);

/** A day's rows: the day (days after FIRST), its key (0 or 1) and counts (a day may be several rows). */
const dayRows = fc.array(
  fc.record({
    day: fc.integer({ min: 0, max: 60 }),
    key: fc.constantFrom(0, 1),
    n: fc.integer({ min: 1, max: 9 }),
  }),
  { minLength: 1, maxLength: 80 },
);
/** Live counts to subtract: each day's at most its smallest row, so that no day counts below zero. */
const liveRows = fc.array(
  fc.record({ day: fc.integer({ min: 0, max: 60 }), n: fc.integer({ min: 1, max: 2 }) }),
  {
    maxLength: 10,
  },
);

/** The day holding `offset` by a plain walk, newest first: its end, and the matches of the newer days. */
function walk(
  rows: { day: number; n: number }[],
  offset: number,
  spanMs: number,
): { ends: number; newer: number } | undefined {
  const perDay = new Map<number, number>();
  for (const r of rows) perDay.set(r.day, (perDay.get(r.day) ?? 0) + r.n);
  let newer = 0;
  for (const day of [...perDay.keys()].sort((a, b) => b - a)) {
    const n = perDay.get(day) ?? 0;
    if (newer + n > offset) return { ends: FIRST + day * DAY_MS + spanMs, newer };
    newer += n;
  }
  return undefined;
}

/** The day dayHoldingOffset finds for `offset` (parameter $1), reading at most 100,000 rows ($2). */
async function found(
  db: Pick<Pool, 'query'>,
  o: Parameters<typeof dayHoldingOffset>[0],
  offset: number,
): Promise<{ ends: number; newer: number } | undefined> {
  const { rows } = await db.query<{ ends: Date; newer: string }>(
    `WITH ${dayHoldingOffset(o)} SELECT ends, newer FROM day`,
    [offset, 100_000],
  );
  const r = rows[0];
  return r === undefined ? undefined : { ends: r.ends.getTime(), newer: Number(r.newer) };
}

test('the day found and the matches newer than it are a plain walk of the day counts, for one range, merged ranges and live counts subtracted', async () => {
  await fc.assert(
    fc.asyncProperty(
      dayRows,
      liveRows,
      fc.nat(400),
      fc.constantFrom('24 hours', '168 hours'),
      async (rows, live, at, span) => {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          await client.query('DELETE FROM counts');
          await client.query('DELETE FROM live');
          await client.query(
            `INSERT INTO counts (key, day, n)
           SELECT key, $1::timestamptz + day * interval '24 hours', n
             FROM jsonb_to_recordset($2::jsonb) AS x(key int, day int, n bigint)`,
            [new Date(FIRST), JSON.stringify(rows)],
          );
          // Live counts only on days a row of key 0 has, and no more than it holds there.
          const key0 = new Map<number, number>();
          for (const r of rows) if (r.key === 0) key0.set(r.day, (key0.get(r.day) ?? 0) + r.n);
          const seen = new Map<number, number>();
          const kept = live.filter((l) => {
            const total = (seen.get(l.day) ?? 0) + l.n;
            if (total > (key0.get(l.day) ?? 0)) return false;
            seen.set(l.day, total);
            return true;
          });
          await client.query(
            `INSERT INTO live (key, day, n)
           SELECT 0, $1::timestamptz + day * interval '24 hours', n FROM jsonb_to_recordset($2::jsonb) AS x(day int, n bigint)`,
            [new Date(FIRST), JSON.stringify(kept)],
          );
          const spanMs = span === '24 hours' ? DAY_MS : 7 * DAY_MS;
          const total = rows.reduce((s, r) => s + r.n, 0);
          const offset = at % (total + 2);
          const q = (o: Parameters<typeof dayHoldingOffset>[0]) => found(client, o, offset);
          const base = { counts: 'counts', limit: '$2', offset: '$1', span };
          assert.deepEqual(
            await q({ ...base, where: 'k.key = 0' }),
            walk(
              rows.filter((r) => r.key === 0),
              offset,
              spanMs,
            ),
            'one range',
          );
          assert.deepEqual(
            await q({ ...base, where: ['k.key = 0', 'k.key = 1'] }),
            walk(rows, offset, spanMs),
            'two ranges merged',
          );
          assert.deepEqual(
            await q({ ...base, where: 'k.key = 0', live: { subtract: 'SELECT day, n FROM live' } }),
            walk(
              [...rows.filter((r) => r.key === 0), ...kept.map((l) => ({ day: l.day, n: -l.n }))],
              offset,
              spanMs,
            ),
            'live counts subtracted',
          );
          await client.query('ROLLBACK');
        } finally {
          client.release();
        }
      },
    ),
    { numRuns: 150 },
  );
});

test('a page ten days deep into ten years of day counts reads about ten day rows, not the history', async () => {
  await pool.query('DELETE FROM counts');
  // Ten years of days, 100 matches a day, in two rows each (a key's count may span several rows).
  await pool.query(
    `INSERT INTO counts (key, day, n)
     SELECT 7, $1::timestamptz - d * interval '24 hours', 50 FROM generate_series(0, 3649) AS d, generate_series(1, 2)`,
    [new Date(FIRST)],
  );
  await pool.query('VACUUM ANALYZE counts');
  const o = { counts: 'counts', where: 'k.key = 7', limit: '$2', offset: '$1' };
  assert.deepEqual(await found(pool, o, 1_050), { ends: FIRST - 10 * DAY_MS + DAY_MS, newer: 1_000 });
  const { rows } = await pool.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
    `EXPLAIN (ANALYZE, FORMAT JSON) WITH ${dayHoldingOffset(o)} SELECT ends, newer FROM day`,
    [1_050, 100_000],
  );
  const plan = rows[0]?.['QUERY PLAN'][0].Plan;
  assert.ok(plan);
  const scans = nodes(plan).filter((n) => n['Index Name'] === 'counts_key');
  assert.equal(scans.length, 1, 'one read of the counts index');
  const read = scans[0]?.['Actual Rows'] ?? Number.NaN;
  // Eleven days of two rows, and a row of the next day to close the found day's peers.
  assert.ok(read <= 24, `the day rows read (${read}) follow the offset, not the 7,300 rows of the history`);
});

interface PlanNode {
  'Index Name'?: string;
  'Actual Rows'?: number;
  Plans?: PlanNode[];
}

function nodes(p: PlanNode): PlanNode[] {
  return [p, ...(p.Plans ?? []).flatMap(nodes)];
}
