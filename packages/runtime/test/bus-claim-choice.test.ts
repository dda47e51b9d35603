/**
 * A serial-by-key claim of the PostgreSQL bus reads only each key group's first due messages
 * (pg-transport.ts, DUE_ONE_PER_FREE_KEY; bus migration 0004), not the whole backlog. Whatever the
 * outbox holds (keys of a few groups or none, messages pending, delayed, running under a live
 * lease or a lapsed one, done), the messages one claim takes are the ones the rule gives when it
 * reads every message: the first due message of each key with no message running, taken in turns
 * by group (the group with the fewest running first, then the oldest), at most the claim's limit.
 * And a group whose first messages are many of one key still gives only first messages of keys,
 * never a later message of a key before an earlier one. Real PostgreSQL, the bus's own migrations.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { migrateBus } from '@adsmcp/runtime/bus/outbox';
import { serialClaimStatement } from '@adsmcp/runtime/bus/pg-transport';
import { createPool, type Pool } from '@adsmcp/runtime/db';
import { stopTestServer, type TestDatabase, testDatabase } from '@adsmcp/testkit/postgres';
import fc from 'fast-check';

let db: TestDatabase;
let pool: Pool;

before(async () => {
  db = await testDatabase();
  pool = createPool(db.url, 'claims', 4);
  await migrateBus(pool, 'claims');
});

after(async () => {
  await pool?.end();
  await db?.drop();
  await stopTestServer();
});

const TOPIC = 'claims.work';

interface Row {
  key: string;
  state: 'pending' | 'delayed' | 'running' | 'lapsed' | 'done';
}

const rowArb: fc.Arbitrary<Row> = fc.record({
  // Keys of three groups (`g1 a`) and keys that are their own group (`solo1`).
  key: fc.oneof(
    fc
      .tuple(fc.constantFrom('g1', 'g2', 'g3'), fc.constantFrom('a', 'b', 'c', 'd', 'e'))
      .map(([g, k]) => `${g} ${k}`),
    fc.constantFrom('solo1', 'solo2'),
  ),
  state: fc.constantFrom('pending', 'pending', 'pending', 'delayed', 'running', 'lapsed', 'done'),
});

/** Writes `rows` in order (their seq) and returns their ids in the same order. */
async function fill(rows: Row[]): Promise<string[]> {
  await pool.query('TRUNCATE bus_outbox');
  const ids: string[] = [];
  for (const r of rows) {
    const id = randomUUID();
    ids.push(id);
    await pool.query(
      `INSERT INTO bus_outbox (id, topic, key, payload, status, run_at, locked_by, locked_until, attempts)
       VALUES ($1, $2, $3, '{}',
               CASE $4 WHEN 'delayed' THEN 'pending' WHEN 'lapsed' THEN 'running' ELSE $4 END,
               now() + CASE WHEN $4 = 'delayed' THEN interval '1 hour' ELSE interval '-1 minute' END,
               CASE WHEN $4 IN ('running', 'lapsed') THEN gen_random_uuid() END,
               CASE $4 WHEN 'running' THEN now() + interval '1 hour' WHEN 'lapsed' THEN now() - interval '1 second' END,
               CASE WHEN $4 IN ('running', 'lapsed') THEN 1 ELSE 0 END)`,
      [id, TOPIC, r.key, r.state],
    );
  }
  return ids;
}

/** The rule, read from every message: what one claim of `limit` takes, by index into `rows`. */
function expected(rows: Row[], limit: number): number[] {
  const group = (key: string) => key.split(' ')[0] as string;
  const running = rows.filter((r) => r.state === 'running');
  const runningKeys = new Set(running.map((r) => r.key));
  const busy = new Map<string, number>();
  for (const r of running) busy.set(group(r.key), (busy.get(group(r.key)) ?? 0) + 1);
  const firstOfKey = new Map<string, number>();
  rows.forEach((r, i) => {
    const due = r.state === 'pending' || r.state === 'lapsed';
    if (due && !runningKeys.has(r.key) && !firstOfKey.has(r.key)) firstOfKey.set(r.key, i);
  });
  const seen = new Map<string, number>();
  const turns = [...firstOfKey.values()]
    .sort((a, b) => a - b)
    .map((i) => {
      const g = group((rows[i] as Row).key);
      const turn = (seen.get(g) ?? 0) + 1;
      seen.set(g, turn);
      return { i, turn: turn + (busy.get(g) ?? 0) };
    });
  return turns
    .sort((a, b) => a.turn - b.turn || a.i - b.i)
    .slice(0, limit)
    .map((t) => t.i)
    .sort((a, b) => a - b);
}

/** One claim of `limit`, rolled back: the indexes into `ids` of the messages it took. */
async function claim(ids: string[], limit: number): Promise<number[]> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query<{ id: string }>(serialClaimStatement(), [
      TOPIC,
      limit,
      randomUUID(),
      60_000,
      'bus-claim-choice',
    ]);
    await client.query('ROLLBACK');
    return rows.map((r) => ids.indexOf(r.id)).sort((a, b) => a - b);
  } finally {
    client.release();
  }
}

test('a claim takes what the rule gives when it reads every message, whatever the outbox holds', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(rowArb, { maxLength: 30 }),
      fc.integer({ min: 1, max: 8 }),
      async (rows, limit) => {
        const ids = await fill(rows);
        assert.deepEqual(await claim(ids, limit), expected(rows, limit));
      },
    ),
    { numRuns: 120 },
  );
});

test('a group led by many messages of one key still gives only first messages of keys, in order', async () => {
  // Sixty messages of `g1 a` first, then one each of `g1 b` to `g1 f`, and `g2 x` behind them.
  const rows: Row[] = [
    ...Array.from({ length: 60 }, (): Row => ({ key: 'g1 a', state: 'pending' })),
    ...['b', 'c', 'd', 'e', 'f'].map((k): Row => ({ key: `g1 ${k}`, state: 'pending' })),
    { key: 'g2 x', state: 'pending' },
  ];
  const ids = await fill(rows);
  const took = await claim(ids, 4);
  // Each message taken is the first of its key; none is a later message of `g1 a`.
  const keys = took.map((i) => (rows[i] as Row).key);
  assert.equal(new Set(keys).size, keys.length, `one message per key (took ${keys.join(', ')})`);
  for (const i of took)
    assert.equal(
      rows.findIndex((r) => r.key === (rows[i] as Row).key),
      i,
    );
  // The other group's turn is not lost behind the first group's backlog.
  assert.ok(keys.includes('g1 a') && keys.includes('g2 x'), `took ${keys.join(', ')}`);
});
