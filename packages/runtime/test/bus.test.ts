import assert from 'node:assert/strict';
import { after, before, type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { stopTestServer, type TestDatabase, testDatabase } from '@adsmcp/testkit/postgres';
import {
  AlreadyProcessedError,
  type BusTransport,
  createPgTransport,
  type Delivery,
  deterministicId,
  enqueue,
  listDead,
  migrateBus,
  requeue,
} from '../src/bus/index.ts';
import { createPool, inTransaction, type Pool } from '../src/db.ts';
import { createLogger, currentRequestId, withRequestId } from '../src/log.ts';

const SCHEMA = 'bus_test';
const logger = createLogger('bus-test', 'silent');
let db: TestDatabase;
let pool: Pool;
let pool2: Pool;

before(async () => {
  db = await testDatabase();
  pool = createPool(db.url, SCHEMA);
  pool2 = createPool(db.url, SCHEMA);
  await migrateBus(pool, SCHEMA);
  // What handlers do in their inbox transaction; no key, so a double effect would show as a row.
  await pool.query('CREATE TABLE effects (message_id uuid NOT NULL, consumer text NOT NULL)');
});

after(async () => {
  await pool.end();
  await pool2.end();
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

interface Row {
  status: string;
  attempts: number;
  last_error: string | null;
}

async function row(id: string): Promise<Row | undefined> {
  const { rows } = await pool.query<Row>(
    'SELECT status, attempts, last_error FROM bus_outbox WHERE id = $1',
    [id],
  );
  return rows[0];
}

const isDone = (id: string) => async () => (await row(id))?.status === 'done';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** A transport on `p` that is stopped when test `t` ends, passed or not, so the file always exits. */
function transportFor(t: TestContext, p: Pool): BusTransport {
  const transport = createPgTransport({ pool: p, logger });
  t.after(() => transport.stop());
  return transport;
}

test('a message enqueued in a rolled-back transaction never exists; a committed one is delivered once', async (t) => {
  const topic = 'commit-or-not';
  await assert.rejects(
    inTransaction(pool, async (c) => {
      await enqueue(c, { topic, key: 'k', payload: { n: 1 } });
      throw new Error('state change refused');
    }),
  );
  const id = await inTransaction(pool, (c) => enqueue(c, { topic, key: 'k', payload: { n: 2 } }));

  const seen: Delivery[] = [];
  const transport = transportFor(t, pool);
  await transport.consume({
    name: 'commit',
    topic,
    pollIntervalMs: 100,
    handler: async (m) => void seen.push(m),
  });
  await waitFor('delivery', isDone(id));
  await sleep(300); // a few more polls, which must not deliver again
  await transport.stop();

  assert.deepEqual(
    seen.map((m) => [m.id, m.key, m.payload, m.attempt]),
    [[id, 'k', { n: 2 }, 1]],
  );
  const { rows } = await pool.query('SELECT id FROM bus_outbox WHERE topic = $1', [topic]);
  assert.deepEqual(rows, [{ id }]);
});

test('a message enqueued while the consumer is idle is delivered at once by notification, not by polling', async (t) => {
  const topic = 'notified';
  const seen: string[] = [];
  const transport = transportFor(t, pool);
  await transport.consume({
    name: 'notified',
    topic,
    pollIntervalMs: 60_000,
    handler: async (m) => void seen.push(m.id),
  });
  await sleep(100); // the first look has found nothing
  const started = Date.now();
  const id = await inTransaction(pool, (c) => enqueue(c, { topic, key: 'k', payload: null }));
  await waitFor('delivery', isDone(id), 2000);
  const latency = Date.now() - started;
  await transport.stop();
  assert.deepEqual(seen, [id]);
  assert.ok(latency < 1000, `delivered after ${latency} ms`);
});

test('the producer request id travels in the headers and is the current request id in the handler', async (t) => {
  const topic = 'request-id';
  const id = await withRequestId('req-42', () =>
    inTransaction(pool, (c) => enqueue(c, { topic, key: 'k', payload: {}, headers: { origin: 'test' } })),
  );
  let inHandler: { current: string | undefined; headers: Record<string, string> } | undefined;
  const transport = transportFor(t, pool);
  await transport.consume({
    name: 'request-id',
    topic,
    pollIntervalMs: 100,
    handler: async (m) => {
      inHandler = { current: currentRequestId(), headers: m.headers };
    },
  });
  await waitFor('delivery', isDone(id));
  await transport.stop();
  assert.deepEqual(inHandler, { current: 'req-42', headers: { origin: 'test', 'x-request-id': 'req-42' } });
});

test('the same message id enqueued twice is stored once and delivered once', async (t) => {
  const topic = 'dedupe';
  const id = deterministicId('apply', 'change-7', '3');
  assert.equal(id, deterministicId('apply', 'change-7', '3'));
  assert.notEqual(id, deterministicId('apply', 'change-7', '4'));
  assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);

  const first = await inTransaction(pool, (c) => enqueue(c, { id, topic, key: 'k', payload: { v: 1 } }));
  const second = await inTransaction(pool, (c) => enqueue(c, { id, topic, key: 'k', payload: { v: 2 } }));
  assert.equal(first, id);
  assert.equal(second, id);

  const seen: Delivery[] = [];
  const transport = transportFor(t, pool);
  await transport.consume({
    name: 'dedupe',
    topic,
    pollIntervalMs: 100,
    handler: async (m) => void seen.push(m),
  });
  await waitFor('delivery', isDone(id));
  // Enqueued again after it was handled: still nothing new to deliver.
  await inTransaction(pool, (c) => enqueue(c, { id, topic, key: 'k', payload: { v: 3 } }));
  await sleep(300);
  await transport.stop();
  assert.deepEqual(
    seen.map((m) => [m.id, m.payload]),
    [[id, { v: 1 }]],
  );
});

test('a failing handler is retried with exponential backoff, succeeds later and its attempts are counted', async (t) => {
  const topic = 'flaky';
  const calls: { attempt: number; at: number }[] = [];
  const transport = transportFor(t, pool);
  await transport.consume({
    name: 'flaky',
    topic,
    maxAttempts: 5,
    backoff: { baseMs: 150, capMs: 10_000 },
    random: () => 1, // no jitter: waits are exactly 150 ms then 300 ms
    pollIntervalMs: 60_000, // only the retry timer can bring the message back this soon
    handler: async (m) => {
      calls.push({ attempt: m.attempt, at: Date.now() });
      if (calls.length < 3) throw new Error(`flaky failure ${calls.length}`);
    },
  });
  const id = await inTransaction(pool, (c) => enqueue(c, { topic, key: 'k', payload: {} }));
  await waitFor('success', isDone(id));
  await transport.stop();

  assert.deepEqual(
    calls.map((c) => c.attempt),
    [1, 2, 3],
  );
  const [c1, c2, c3] = calls.map((c) => c.at) as [number, number, number];
  assert.ok(c2 - c1 >= 145, `first retry after ${c2 - c1} ms`);
  assert.ok(c3 - c2 >= 295, `second retry after ${c3 - c2} ms`);
  assert.ok(c3 - c1 < 2000, `retries took ${c3 - c1} ms`);
  assert.deepEqual(await row(id), { status: 'done', attempts: 3, last_error: 'flaky failure 2' });
});

test('a handler that always fails is parked as dead after max attempts with its error kept; requeue delivers it again', async (t) => {
  const topic = 'poison';
  let failing = true;
  let calls = 0;
  const transport = transportFor(t, pool);
  await transport.consume({
    name: 'poison',
    topic,
    maxAttempts: 3,
    backoff: { baseMs: 10, capMs: 20 },
    pollIntervalMs: 60_000,
    handler: async () => {
      calls++;
      if (failing) throw new Error('upstream refused: 422 invalid budget');
    },
  });
  const id = await inTransaction(pool, (c) => enqueue(c, { topic, key: 'camp-1', payload: { budget: -1 } }));
  await waitFor('dead letter', async () => (await row(id))?.status === 'dead');
  await sleep(100); // nothing more happens to a dead message
  assert.equal(calls, 3);

  const dead = await listDead(pool, { topic });
  assert.equal(dead.length, 1);
  assert.deepEqual(
    dead.map((d) => [d.id, d.key, d.payload, d.attempts, d.lastError]),
    [[id, 'camp-1', { budget: -1 }, 3, 'upstream refused: 422 invalid budget']],
  );
  assert.deepEqual(await listDead(pool, { topic: 'another-topic' }), []);

  failing = false;
  assert.equal(await requeue(pool, id), true);
  assert.equal(await requeue(pool, id), false, 'only a dead message can be requeued');
  await waitFor('delivery after requeue', isDone(id));
  await transport.stop();
  assert.equal(calls, 4);
  assert.equal((await row(id))?.attempts, 1);
  assert.deepEqual(await listDead(pool, { topic }), []);
});

test('one consumer handles the messages of its topic in the order they were enqueued', async (t) => {
  const topic = 'ordered';
  for (let i = 0; i < 10; i++) await enqueue(pool, { topic, key: 'k', payload: i });
  const seen: number[] = [];
  const transport = transportFor(t, pool);
  await transport.consume<number>({
    name: 'ordered',
    topic,
    pollIntervalMs: 100,
    handler: async (m) => void seen.push(m.payload),
  });
  await waitFor('all ten', async () => seen.length === 10);
  assert.deepEqual(seen, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
});

test('two consumers in two pools share 50 messages and each is processed exactly once', async (t) => {
  const topic = 'many';
  const handled = { a: 0, b: 0 };
  const consumeAs = async (who: 'a' | 'b', p: Pool) => {
    const transport = transportFor(t, p);
    await transport.consume({
      name: 'counter',
      topic,
      concurrency: 3,
      pollIntervalMs: 100,
      handler: async (m, ctx) => {
        await sleep(5);
        await ctx.inTx((c) =>
          c.query('INSERT INTO effects (message_id, consumer) VALUES ($1, $2)', [m.id, who]),
        );
        handled[who]++;
      },
    });
    return transport;
  };
  const transports = [await consumeAs('a', pool), await consumeAs('b', pool2)];
  const ids = await inTransaction(pool, async (c) => {
    const out: string[] = [];
    for (let i = 0; i < 50; i++) out.push(await enqueue(c, { topic, key: `k${i % 5}`, payload: { i } }));
    return out;
  });
  await waitFor('all 50 handled', async () => {
    const { rows } = await pool.query<{ n: number }>(
      `SELECT count(*) AS n FROM bus_outbox WHERE topic = $1 AND status = 'done'`,
      [topic],
    );
    return rows[0]?.n === 50;
  });
  await Promise.all(transports.map((t) => t.stop()));

  const { rows } = await pool.query<{ total: number; distinct_ids: number; max_attempts: number }>(
    `SELECT count(*) AS total, count(DISTINCT e.message_id) AS distinct_ids, max(o.attempts) AS max_attempts
       FROM effects e JOIN bus_outbox o ON o.id = e.message_id WHERE o.topic = $1`,
    [topic],
  );
  assert.deepEqual(rows[0], { total: 50, distinct_ids: 50, max_attempts: 1 });
  assert.equal(handled.a + handled.b, 50, 'no message reached a handler twice');
  assert.ok(handled.a > 0 && handled.b > 0, `work was shared: ${JSON.stringify(handled)}`);
  assert.equal(ids.length, 50);
});

test('a message whose consumer died mid-handler is retried by another after the lease expires, and the inbox stops a double effect when the first finishes late', async (t) => {
  const topic = 'crash';
  const leaseMs = 400;
  const firstMayFinish = deferred();
  t.after(firstMayFinish.resolve);
  const firstRunning = deferred();
  let firstOutcome: Promise<string> | undefined;
  let firstSignal: AbortSignal | undefined;
  let firstAt = 0;

  const first = transportFor(t, pool);
  await first.consume({
    name: 'applier',
    topic,
    leaseMs,
    pollIntervalMs: 50,
    stopTimeoutMs: 50,
    handler: (m, ctx) => {
      firstAt = Date.now();
      firstSignal = ctx.signal;
      firstRunning.resolve();
      // Hangs as if the process froze; when let go, it tries to record its effect.
      firstOutcome = firstMayFinish.promise.then(() =>
        ctx
          .inTx((c) => c.query('INSERT INTO effects (message_id, consumer) VALUES ($1, $2)', [m.id, 'first']))
          .then(
            () => 'applied',
            (err: unknown) => (err instanceof AlreadyProcessedError ? 'already processed' : String(err)),
          ),
      );
      return firstOutcome.then(() => undefined);
    },
  });
  const id = await inTransaction(pool, (c) => enqueue(c, { topic, key: 'change-1', payload: {} }));
  await firstRunning.promise;

  const stopStarted = Date.now();
  await first.stop();
  assert.ok(Date.now() - stopStarted < 1000, 'stop gives up on a hung handler after stopTimeoutMs');
  assert.equal(firstSignal?.aborted, true, 'the abandoned handler is told to give up');
  assert.deepEqual(await row(id), { status: 'running', attempts: 1, last_error: null });

  let secondAt = 0;
  let secondAttempt = 0;
  const second = transportFor(t, pool2);
  await second.consume({
    name: 'applier',
    topic,
    leaseMs,
    pollIntervalMs: 50,
    handler: async (m, ctx) => {
      secondAt = Date.now();
      secondAttempt = m.attempt;
      await ctx.inTx((c) =>
        c.query('INSERT INTO effects (message_id, consumer) VALUES ($1, $2)', [m.id, 'second']),
      );
    },
  });
  await waitFor('the second consumer to handle it', isDone(id));
  assert.ok(secondAt - firstAt >= leaseMs - 20, `taken over ${secondAt - firstAt} ms after the first claim`);
  assert.equal(secondAttempt, 2);

  firstMayFinish.resolve();
  assert.equal(await firstOutcome, 'already processed');
  await second.stop();

  const { rows } = await pool.query('SELECT consumer FROM effects WHERE message_id = $1', [id]);
  assert.deepEqual(rows, [{ consumer: 'second' }]);
  assert.equal((await row(id))?.status, 'done');
});

test('stop waits for a running handler and leaves no connection checked out or listening', async (t) => {
  const topic = 'stopping';
  const listening = async () => {
    const { rows } = await pool.query<{ n: number }>(
      `SELECT count(*) AS n FROM pg_stat_activity
        WHERE datname = current_database() AND query = 'LISTEN bus_outbox'`,
    );
    return rows[0]?.n ?? 0;
  };
  const own = createPool(db.url, SCHEMA, 3);
  const running = deferred();
  const transport = transportFor(t, own);
  t.after(async () => {
    if (!own.ending) await own.end();
  });
  await transport.consume({
    name: 'stopping',
    topic,
    pollIntervalMs: 100,
    handler: async () => {
      running.resolve();
      await sleep(200);
    },
  });
  assert.equal(await listening(), 1);
  const id = await inTransaction(pool, (c) => enqueue(c, { topic, key: 'k', payload: {} }));
  await running.promise;

  await transport.stop();
  assert.equal((await row(id))?.status, 'done', 'the in-flight handler finished before stop resolved');
  assert.equal(own.totalCount, own.idleCount, 'no client is still checked out');
  await own.end();
  await waitFor('the listening session to end', async () => (await listening()) === 0, 2000);
  await assert.rejects(transport.consume({ name: 'late', topic, handler: async () => undefined }));
});

test('a message whose handler outlived its lease on the last attempt is parked as dead, not run again', async (t) => {
  const topic = 'killer';
  const running = deferred();
  const hang = deferred();
  t.after(hang.resolve);
  const first = transportFor(t, pool);
  await first.consume({
    name: 'killer',
    topic,
    maxAttempts: 1,
    leaseMs: 200,
    pollIntervalMs: 50,
    stopTimeoutMs: 20,
    handler: async () => {
      running.resolve();
      await hang.promise; // as if it took the process down with it
    },
  });
  const id = await enqueue(pool, { topic, key: 'k', payload: {} });
  await running.promise;
  await first.stop();

  let secondCalls = 0;
  const second = transportFor(t, pool2);
  await second.consume({
    name: 'killer',
    topic,
    maxAttempts: 1,
    leaseMs: 200,
    pollIntervalMs: 50,
    handler: async () => {
      secondCalls++;
    },
  });
  await waitFor('dead letter', async () => (await row(id))?.status === 'dead');
  assert.equal(secondCalls, 0);
  const dead = await listDead(pool, { topic });
  assert.deepEqual(
    dead.map((d) => [d.id, d.attempts, d.lastError]),
    [[id, 2, 'lease expired on attempt 1 before the handler finished']],
  );
});

test('a handler that runs three times its lease keeps its message: it completes once and a second consumer on the topic never receives it meanwhile', async (t) => {
  const topic = 'slow';
  // Long enough that a beat delayed by a loaded machine still lands well inside the lease.
  const leaseMs = 1500; // a beat every 500 ms
  const running = deferred();
  let firstCalls = 0;
  let firstSignal: AbortSignal | undefined;
  const first = transportFor(t, pool);
  await first.consume({
    name: 'slow',
    topic,
    leaseMs,
    pollIntervalMs: 50,
    handler: async (m, ctx) => {
      firstCalls++;
      firstSignal = ctx.signal;
      running.resolve();
      await sleep(3 * leaseMs);
      await ctx.inTx((c) =>
        c.query('INSERT INTO effects (message_id, consumer) VALUES ($1, $2)', [m.id, 'first']),
      );
    },
  });
  const id = await enqueue(pool, { topic, key: 'k', payload: {} });
  await running.promise;

  let secondCalls = 0;
  const second = transportFor(t, pool2);
  await second.consume({
    name: 'slow',
    topic,
    leaseMs,
    pollIntervalMs: 50, // looks for expired leases many times while the first handler runs
    handler: async () => {
      secondCalls++;
    },
  });
  await waitFor('the slow handler to finish', isDone(id));
  await sleep(200);
  await Promise.all([first.stop(), second.stop()]);

  assert.equal(firstCalls, 1);
  assert.equal(secondCalls, 0, 'the second consumer never received the message');
  assert.equal(firstSignal?.aborted, false, 'a renewed lease does not abort the handler');
  assert.deepEqual(await row(id), { status: 'done', attempts: 1, last_error: null });
  const { rows } = await pool.query('SELECT consumer FROM effects WHERE message_id = $1', [id]);
  assert.deepEqual(rows, [{ consumer: 'first' }]);
});

test('a consumer whose claim was taken by another sees its signal aborted within about a beat, well before its lease would lapse, and stops renewing', async (t) => {
  const topic = 'stolen';
  // A beat every second; without beats the signal would abort only when the lease lapsed.
  const leaseMs = 3000;
  const running = deferred();
  const letGo = deferred();
  t.after(letGo.resolve);
  let signal: AbortSignal | undefined;
  let abortedAt = 0;
  const transport = transportFor(t, pool);
  await transport.consume({
    name: 'stolen',
    topic,
    leaseMs,
    pollIntervalMs: 60_000,
    handler: async (_m, ctx) => {
      signal = ctx.signal;
      ctx.signal.addEventListener('abort', () => {
        abortedAt = Date.now();
      });
      running.resolve();
      await letGo.promise; // keeps running after the abort, as a handler that ignores it would
    },
  });
  const id = await enqueue(pool, { topic, key: 'k', payload: {} });
  await running.promise;
  const claim = async () => {
    const { rows } = await pool.query<{ locked_by: string; locked_until: Date }>(
      'SELECT locked_by, locked_until FROM bus_outbox WHERE id = $1',
      [id],
    );
    assert.ok(rows[0]);
    return rows[0];
  };
  const token = (await claim()).locked_by;

  // Another consumer claims it, as one would after this one's lease had lapsed.
  await pool.query('UPDATE bus_outbox SET locked_by = gen_random_uuid() WHERE id = $1', [id]);
  const stolenAt = Date.now();
  await waitFor('the signal to abort', async () => signal?.aborted === true, 4000);
  // Within about one beat, well before the lease would have lapsed.
  assert.ok(
    abortedAt - stolenAt < leaseMs - 1000,
    `aborted ${abortedAt - stolenAt} ms after the claim was taken`,
  );
  assert.match(String(signal?.reason), /lease lost/);

  // Had it kept beating, giving the claim back would let its next beat extend the lease.
  await pool.query('UPDATE bus_outbox SET locked_by = $2 WHERE id = $1', [id, token]);
  const before = (await claim()).locked_until.getTime();
  await sleep(leaseMs / 3 + 200);
  assert.equal((await claim()).locked_until.getTime(), before, 'no renewal after the claim was lost');
  letGo.resolve();
  await transport.stop();
});
