import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { stopTestServer, type TestDatabase, testDatabase } from '@adsmcp/testkit/postgres';
import { pino } from 'pino';
import { enqueue, migrateBus, startPruning } from '../src/bus/index.ts';
import { createPool, type Pool } from '../src/db.ts';

const HOUR_MS = 60 * 60 * 1000;
let db: TestDatabase;
let pool: Pool;

before(async () => {
  db = await testDatabase();
  pool = createPool(db.url, 'bus_pruning');
  await migrateBus(pool, 'bus_pruning');
});

after(async () => {
  await pool.end();
  await db.drop();
  await stopTestServer();
});

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** A logger whose lines are kept in `lines`. */
function capturingLogger() {
  const lines: { level: number; msg: string }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { logger, lines };
}

/** message enqueues a message into `p`'s schema with `status`, last changed `ageMs` ago. */
async function message(
  p: Pool,
  status: 'pending' | 'running' | 'done' | 'dead',
  ageMs: number,
): Promise<string> {
  const id = await enqueue(p, { topic: 'pruned', key: 'k', payload: {} });
  await p.query(
    `UPDATE bus_outbox
        SET status = $2, updated_at = now() - $3 * interval '1 millisecond',
            locked_until = CASE WHEN $2 = 'running' THEN now() ELSE NULL END
      WHERE id = $1`,
    [id, status, ageMs],
  );
  return id;
}

async function inboxRecord(p: Pool, ageMs: number): Promise<string> {
  const { rows } = await p.query<{ message_id: string }>(
    `INSERT INTO bus_inbox (consumer, message_id, processed_at)
     VALUES ('pruned', gen_random_uuid(), now() - $1 * interval '1 millisecond') RETURNING message_id`,
    [ageMs],
  );
  assert.ok(rows[0]);
  return rows[0].message_id;
}

/** delivery records a count of deliveries of a message to a consumer, last changed `ageMs` ago. */
async function delivery(p: Pool, ageMs: number): Promise<string> {
  const { rows } = await p.query<{ message_id: string }>(
    `INSERT INTO bus_deliveries (consumer, message_id, attempts, updated_at)
     VALUES ('pruned', gen_random_uuid(), 1, now() - $1 * interval '1 millisecond') RETURNING message_id`,
    [ageMs],
  );
  assert.ok(rows[0]);
  return rows[0].message_id;
}

async function deliveryIds(p: Pool): Promise<Set<string>> {
  const { rows } = await p.query<{ message_id: string }>('SELECT message_id FROM bus_deliveries');
  return new Set(rows.map((r) => r.message_id));
}

async function messageIds(p: Pool): Promise<Set<string>> {
  const { rows } = await p.query<{ id: string }>('SELECT id FROM bus_outbox');
  return new Set(rows.map((r) => r.id));
}

async function inboxIds(p: Pool): Promise<Set<string>> {
  const { rows } = await p.query<{ message_id: string }>('SELECT message_id FROM bus_inbox');
  return new Set(rows.map((r) => r.message_id));
}

test('pruning removes done messages, inbox records and delivery counts older than the cutoff on every run, and keeps recent ones and messages not done', async (t) => {
  const { logger, lines } = capturingLogger();
  const kept = [
    await message(pool, 'done', 10 * 60 * 1000),
    await message(pool, 'pending', 2 * HOUR_MS),
    await message(pool, 'running', 2 * HOUR_MS),
    await message(pool, 'dead', 2 * HOUR_MS),
  ];
  const keptInbox = await inboxRecord(pool, 10 * 60 * 1000);
  const oldDone = await message(pool, 'done', 2 * HOUR_MS);
  const oldInbox = await inboxRecord(pool, 2 * HOUR_MS);
  const keptDelivery = await delivery(pool, 10 * 60 * 1000);
  const oldDelivery = await delivery(pool, 2 * HOUR_MS);

  const stop = startPruning({ pool, logger, everyMs: 50, olderThanMs: HOUR_MS });
  t.after(stop);
  // Delivery counts go last in a run: once they are gone, the run is over.
  await waitFor('the first run', async () => !(await deliveryIds(pool)).has(oldDelivery));
  assert.equal((await messageIds(pool)).has(oldDone), false);
  assert.equal((await inboxIds(pool)).has(oldInbox), false);
  assert.deepEqual(
    await deliveryIds(pool),
    new Set([keptDelivery]),
    'old delivery counts go, recent ones stay',
  );
  assert.ok(oldDelivery);

  // Later runs find what aged since.
  const laterDone = await message(pool, 'done', 3 * HOUR_MS);
  const laterInbox = await inboxRecord(pool, 3 * HOUR_MS);
  await waitFor('a later run', async () => {
    const [ids, inbox] = [await messageIds(pool), await inboxIds(pool)];
    return !ids.has(laterDone) && !inbox.has(laterInbox);
  });
  await stop();

  // Stopped: nothing more goes.
  const afterStop = await message(pool, 'done', 2 * HOUR_MS);
  await sleep(200);

  assert.deepEqual(await messageIds(pool), new Set([...kept, afterStop]));
  assert.deepEqual(await inboxIds(pool), new Set([keptInbox]));
  assert.ok(lines.some((l) => l.msg === 'bus pruned done messages and inbox records'));
  await pool.query('DELETE FROM bus_outbox');
  await pool.query('DELETE FROM bus_inbox');
  await pool.query('DELETE FROM bus_deliveries');
});

test('a failed pruning run is logged, not thrown, and the next run tries again', async (t) => {
  // A schema whose bus tables do not exist yet: every run fails until they do.
  const late = createPool(db.url, 'bus_pruning_late');
  t.after(() => late.end());
  const { logger, lines } = capturingLogger();
  const stop = startPruning({ pool: late, logger, everyMs: 50, olderThanMs: HOUR_MS });
  t.after(stop);
  await waitFor('a failure to be logged', async () =>
    lines.some((l) => l.level === 50 && l.msg === 'bus pruning failed; the next run tries again'),
  );

  await migrateBus(late, 'bus_pruning_late');
  const oldDone = await message(late, 'done', 2 * HOUR_MS);
  await waitFor('a run after the failures to prune', async () => !(await messageIds(late)).has(oldDone));
  await stop();
});
