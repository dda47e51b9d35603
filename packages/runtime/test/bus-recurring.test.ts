/**
 * A recurring job on the bus (recurring.ts), on the PostgreSQL queue: two processes of one
 * service run it once a period between them, never at once, and the schedule outlives a process.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { stopTestServer, type TestDatabase, testDatabase } from '@adsmcp/testkit/postgres';
import { createPgTransport, migrateBus } from '../src/bus/index.ts';
import { startRecurring } from '../src/bus/recurring.ts';
import { createPool, type Pool } from '../src/db.ts';
import { createLogger } from '../src/log.ts';

const SCHEMA = 'bus_recurring';
const logger = createLogger('bus-test', 'silent');
let db: TestDatabase;
let pool: Pool;
let pool2: Pool;

before(async () => {
  db = await testDatabase();
  pool = createPool(db.url, SCHEMA);
  pool2 = createPool(db.url, SCHEMA);
  await migrateBus(pool, SCHEMA);
});

after(async () => {
  await pool.end();
  await pool2.end();
  await db.drop();
  await stopTestServer();
});

test('two processes run a recurring job once a period between them, one at a time, and the one left keeps the schedule', async (t) => {
  const everyMs = 400;
  const runs: { at: number; by: string }[] = [];
  let running = 0;
  let overlapped = false;
  const processes = ['a', 'b'].map((by) => {
    const bus = createPgTransport({ pool: by === 'a' ? pool : pool2, logger });
    t.after(() => bus.stop());
    return { by, bus };
  });
  const started = Date.now();
  const consumers = await Promise.all(
    processes.map(({ by, bus }) =>
      startRecurring({
        bus,
        pool: by === 'a' ? pool : pool2,
        logger,
        topic: 'look-for-due-work',
        everyMs,
        run: async () => {
          running++;
          overlapped ||= running > 1;
          runs.push({ at: Date.now() - started, by });
          await sleep(30);
          running--;
        },
      }),
    ),
  );
  await sleep(everyMs * 4);
  await consumers[0]?.stop();
  const beforeStop = runs.length;
  await sleep(everyMs * 3);

  // A timer in each process would have run about twice a period; the bus runs it about once.
  assert.ok(beforeStop >= 3 && beforeStop <= 6, `runs in four periods: ${JSON.stringify(runs)}`);
  assert.ok((runs[0]?.at ?? Infinity) < everyMs, `the first run is at start: ${JSON.stringify(runs)}`);
  assert.equal(overlapped, false, 'never two runs at once');
  const afterStop = runs.slice(beforeStop);
  assert.ok(afterStop.length >= 2, `the schedule went on in the other process: ${JSON.stringify(runs)}`);
  assert.ok(
    afterStop.every((r) => r.by === 'b'),
    `only the process left ran it: ${JSON.stringify(afterStop)}`,
  );
});

test('a tick that arrives before its period by the process clock still enqueues the next one, so the schedule goes on', async (t) => {
  const everyMs = 100;
  const bus = createPgTransport({ pool, logger });
  t.after(() => bus.stop());
  // A clock standing still 50 ms before a period ends: the first tick's successor, due 50 ms on,
  // arrives while this clock still reads the first period, as a tick does when the database's
  // clock runs ahead of the service's, or when its delay was measured from the start of a slow
  // enqueuing transaction.
  const stillAt = (Math.floor(Date.now() / everyMs) + 1) * everyMs - 50;
  let runs = 0;
  const consumer = await startRecurring({
    bus,
    pool,
    logger,
    topic: 'early-ticks',
    everyMs,
    now: () => stillAt,
    run: async () => {
      runs++;
    },
  });
  t.after(() => consumer.stop());
  // By this clock the ticks fall due 50, 150, 250 and 350 ms apart: five runs within a second.
  const deadline = Date.now() + 10_000;
  while (runs < 4 && Date.now() < deadline) await sleep(50);
  assert.ok(runs >= 4, `the schedule stopped after ${runs} runs`);
});
