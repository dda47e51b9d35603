/**
 * The bus on the Postgres transport: the contract every transport meets (bus-contract.ts), then
 * what only this transport does: notifications, one queue order, leases and their renewal.
 */
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { AlreadyProcessedError, createPgTransport, enqueue } from '../src/bus/index.ts';
import { createPool, inTransaction } from '../src/db.ts';
import { createLogger } from '../src/log.ts';
import { busContract, deferred, SCHEMA, waitFor } from './bus-contract.ts';

const logger = createLogger('bus-test', 'silent');
const suite = busContract({
  name: 'PostgreSQL',
  transport: (pool) => createPgTransport({ pool, logger }),
  quietMs: 300,
});

interface Row {
  status: string;
  attempts: number;
  last_error: string | null;
}

async function row(id: string): Promise<Row | undefined> {
  const { rows } = await suite.pool.query<Row>(
    'SELECT status, attempts, last_error FROM bus_outbox WHERE id = $1',
    [id],
  );
  return rows[0];
}

const isDone = (id: string) => async () => (await row(id))?.status === 'done';
const transportFor = suite.transportFor;

test('the outbox row of a retried message counts its attempts and keeps its last error', async (t) => {
  const topic = 'pg-flaky';
  let calls = 0;
  const transport = transportFor(t, suite.pool);
  await transport.consume({
    name: 'pg-flaky',
    topic,
    maxAttempts: 5,
    backoff: { baseMs: 20, capMs: 40 },
    pollIntervalMs: 60_000,
    handler: async () => {
      calls++;
      if (calls < 3) throw new Error(`flaky failure ${calls}`);
    },
  });
  const id = await enqueue(suite.pool, { topic, key: 'k', payload: {} });
  await waitFor('success', isDone(id));
  await transport.stop();
  assert.deepEqual(await row(id), { status: 'done', attempts: 3, last_error: 'flaky failure 2' });
});

test('a message enqueued while the consumer is idle is delivered at once by notification, not by polling', async (t) => {
  const topic = 'notified';
  const seen: string[] = [];
  const transport = transportFor(t, suite.pool);
  await transport.consume({
    name: 'notified',
    topic,
    pollIntervalMs: 60_000,
    handler: async (m) => void seen.push(m.id),
  });
  await sleep(100); // the first look has found nothing
  const started = Date.now();
  const id = await inTransaction(suite.pool, (c) => enqueue(c, { topic, key: 'k', payload: null }));
  await waitFor('delivery', isDone(id), 2000);
  const latency = Date.now() - started;
  await transport.stop();
  assert.deepEqual(seen, [id]);
  assert.ok(latency < 1000, `delivered after ${latency} ms`);
});

test('a consumer whose claim fails (the database away) looks again a second later, not at the next poll', async (t) => {
  const topic = 'claim-fails';
  let failures = 0;
  // The suite's pool, but the first two claims fail as if the connection had dropped.
  const pool = new Proxy(suite.pool, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (prop !== 'query') return typeof value === 'function' ? value.bind(target) : value;
      return (...args: unknown[]) => {
        const first = args[0];
        const text = typeof first === 'string' ? first : ((first as { text?: string }).text ?? '');
        if (text.includes('SKIP LOCKED') && failures < 2) {
          failures++;
          return Promise.reject(new Error('Connection terminated unexpectedly'));
        }
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  // Enqueued before the consumer starts: no notification will come for it.
  const id = await enqueue(suite.pool, { topic, key: 'k', payload: null });
  const seen: string[] = [];
  const started = Date.now();
  const transport = transportFor(t, pool);
  await transport.consume({
    name: 'claim-fails',
    topic,
    pollIntervalMs: 60_000,
    handler: async (m) => void seen.push(m.id),
  });
  await waitFor('delivery', isDone(id), 6000);
  const latency = Date.now() - started;
  await transport.stop();
  assert.equal(failures, 2);
  assert.deepEqual(seen, [id]);
  assert.ok(latency >= 1900 && latency < 5000, `delivered after ${latency} ms`);
});

test('one consumer handles the messages of its topic in the order they were enqueued', async (t) => {
  const topic = 'ordered';
  for (let i = 0; i < 10; i++) await enqueue(suite.pool, { topic, key: 'k', payload: i });
  const seen: number[] = [];
  const transport = transportFor(t, suite.pool);
  await transport.consume<number>({
    name: 'ordered',
    topic,
    pollIntervalMs: 100,
    handler: async (m) => void seen.push(m.payload),
  });
  await waitFor('all ten', async () => seen.length === 10);
  assert.deepEqual(seen, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
});

test('a message whose consumer died mid-handler is taken over by another only once its lease lapses, and the inbox stops a double effect when the first finishes late', async (t) => {
  const topic = 'crash';
  const leaseMs = 400;
  const firstMayFinish = deferred();
  t.after(firstMayFinish.resolve);
  const firstRunning = deferred();
  let firstOutcome: Promise<string> | undefined;
  let firstSignal: AbortSignal | undefined;
  let firstAt = 0;

  const first = transportFor(t, suite.pool);
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
  const id = await inTransaction(suite.pool, (c) => enqueue(c, { topic, key: 'change-1', payload: {} }));
  await firstRunning.promise;

  const stopStarted = Date.now();
  await first.stop();
  assert.ok(Date.now() - stopStarted < 1000, 'stop gives up on a hung handler after stopTimeoutMs');
  assert.equal(firstSignal?.aborted, true, 'the abandoned handler is told to give up');
  assert.deepEqual(await row(id), { status: 'running', attempts: 1, last_error: null });

  let secondAt = 0;
  let secondAttempt = 0;
  const second = transportFor(t, suite.pool2);
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

  const { rows } = await suite.pool.query('SELECT consumer FROM effects WHERE message_id = $1', [id]);
  assert.deepEqual(rows, [{ consumer: 'second' }]);
  assert.equal((await row(id))?.status, 'done');
});

test('stop waits for a running handler and leaves no connection checked out or listening', async (t) => {
  const topic = 'stopping';
  const listening = async () => {
    const { rows } = await suite.pool.query<{ n: number }>(
      `SELECT count(*) AS n FROM pg_stat_activity
        WHERE datname = current_database() AND query = 'LISTEN bus_outbox'`,
    );
    return rows[0]?.n ?? 0;
  };
  const own = createPool(suite.db.url, SCHEMA, 3);
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
  const id = await inTransaction(suite.pool, (c) => enqueue(c, { topic, key: 'k', payload: {} }));
  await running.promise;

  await transport.stop();
  assert.equal((await row(id))?.status, 'done', 'the in-flight handler finished before stop resolved');
  assert.equal(own.totalCount, own.idleCount, 'no client is still checked out');
  await own.end();
  await waitFor('the listening session to end', async () => (await listening()) === 0, 2000);
  await assert.rejects(transport.consume({ name: 'late', topic, handler: async () => undefined }));
});

test('a handler that runs three times its lease keeps its message: it completes once and a second consumer on the topic never receives it meanwhile', async (t) => {
  const topic = 'slow';
  // Long enough that a beat delayed by a loaded machine still lands well inside the lease.
  const leaseMs = 1500; // a beat every 500 ms
  const running = deferred();
  let firstCalls = 0;
  let firstSignal: AbortSignal | undefined;
  const first = transportFor(t, suite.pool);
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
  const id = await enqueue(suite.pool, { topic, key: 'k', payload: {} });
  await running.promise;

  let secondCalls = 0;
  const second = transportFor(t, suite.pool2);
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
  const { rows } = await suite.pool.query('SELECT consumer FROM effects WHERE message_id = $1', [id]);
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
  const transport = transportFor(t, suite.pool);
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
  const id = await enqueue(suite.pool, { topic, key: 'k', payload: {} });
  await running.promise;
  const claim = async () => {
    const { rows } = await suite.pool.query<{ locked_by: string; locked_until: Date }>(
      'SELECT locked_by, locked_until FROM bus_outbox WHERE id = $1',
      [id],
    );
    assert.ok(rows[0]);
    return rows[0];
  };
  const token = (await claim()).locked_by;

  // Another consumer claims it, as one would after this one's lease had lapsed.
  await suite.pool.query('UPDATE bus_outbox SET locked_by = gen_random_uuid() WHERE id = $1', [id]);
  const stolenAt = Date.now();
  await waitFor('the signal to abort', async () => signal?.aborted === true, 4000);
  // Within about one beat, well before the lease would have lapsed.
  assert.ok(
    abortedAt - stolenAt < leaseMs - 1000,
    `aborted ${abortedAt - stolenAt} ms after the claim was taken`,
  );
  assert.match(String(signal?.reason), /lease lost/);

  // Had it kept beating, giving the claim back would let its next beat extend the lease.
  await suite.pool.query('UPDATE bus_outbox SET locked_by = $2 WHERE id = $1', [id, token]);
  const before = (await claim()).locked_until.getTime();
  await sleep(leaseMs / 3 + 200);
  assert.equal((await claim()).locked_until.getTime(), before, 'no renewal after the claim was lost');
  letGo.resolve();
  await transport.stop();
});

test('with serialByKey, the message that waited for its key is claimed by another process as soon as the key is free, not at its next poll', async (t) => {
  const topic = 'serial-handover';
  const release = deferred();
  const handledBy: Record<string, string> = {};
  const consumeAs = async (who: string, p: typeof suite.pool) => {
    const transport = transportFor(t, p);
    await transport.consume<number>({
      name: 'serial-handover',
      topic,
      serialByKey: true,
      pollIntervalMs: 60_000,
      handler: async (m) => {
        handledBy[String(m.payload)] = who;
        if (m.payload === 1) await release.promise;
      },
    });
    return transport;
  };
  const a = await consumeAs('a', suite.pool);
  await enqueue(suite.pool, { topic, key: 'ad-1', payload: 1 });
  await waitFor('the first message under way in a', async () => handledBy['1'] === 'a');
  await consumeAs('b', suite.pool2);
  const second = await enqueue(suite.pool, { topic, key: 'ad-1', payload: 2 });
  await sleep(200);
  assert.equal(handledBy['2'], undefined, 'the second waits while its key is busy');
  // a takes nothing more once stopping; only b can take the second, and b does not poll.
  const stopping = a.stop();
  release.resolve();
  await stopping;
  await waitFor('the second message done by b', isDone(second), 2000);
  assert.equal(handledBy['2'], 'b');
});

test('a message enqueued for later is taken at its time by a consumer that knows of it, not at its next poll', async (t) => {
  const topic = 'later';
  // Read before the insert: its time is the database's clock during the insert, so a time read
  // after enqueue returns would be later than the one the delay counts from.
  const enqueuedAt = Date.now();
  const id = await enqueue(suite.pool, { topic, key: 'k', payload: {}, delayMs: 400 });
  let handledAfter: number | undefined;
  await transportFor(t, suite.pool).consume({
    name: 'later',
    topic,
    pollIntervalMs: 60_000,
    handler: async () => {
      handledAfter = Date.now() - enqueuedAt;
    },
  });
  await waitFor('the message handled', isDone(id), 3000);
  assert.ok(handledAfter !== undefined && handledAfter >= 400, `not before its time: ${handledAfter} ms`);
});

test("with serialByKey, one key group's backlog does not hold every handler slot: another group's message is taken in its turn", async (t) => {
  const topic = 'groups';
  const order: string[] = [];
  // Five messages of the group "acct-a" (the part of the key before its space), then one of
  // "acct-b", all enqueued before the consumer starts.
  const ids: string[] = [];
  for (let i = 1; i <= 5; i++)
    ids.push(await enqueue(suite.pool, { topic, key: `acct-a ad-${i}`, payload: `a${i}` }));
  ids.push(await enqueue(suite.pool, { topic, key: 'acct-b ad-1', payload: 'b1' }));
  await transportFor(t, suite.pool).consume<string>({
    name: 'groups',
    topic,
    serialByKey: true,
    concurrency: 2,
    pollIntervalMs: 60_000,
    handler: async (m) => {
      order.push(m.payload);
      await sleep(30);
    },
  });
  for (const id of ids) await waitFor('every message handled', isDone(id), 5000);
  assert.deepEqual(order.slice(0, 2).sort(), ['a1', 'b1'], `taken in the order ${order.join(', ')}`);
  assert.deepEqual(
    order.filter((p) => p.startsWith('a')),
    ['a1', 'a2', 'a3', 'a4', 'a5'],
    'one group in the order enqueued',
  );
});

for (const serialByKey of [false, true]) {
  test(`a claimed message its consumer's inbox already holds is marked done, its handler not run (serialByKey ${serialByKey})`, async (t) => {
    // As after a process killed between the handler's commit and the mark done: the inbox row is
    // there, the outbox row still pending. The claim reads the inbox with the message.
    const topic = `handled-before-${serialByKey}`;
    const consumer = `handled-before-${serialByKey}`;
    const handled = await enqueue(suite.pool, { topic, key: 'k', payload: { n: 1 } });
    const fresh = await enqueue(suite.pool, { topic, key: 'other k', payload: { n: 2 } });
    await suite.pool.query('INSERT INTO bus_inbox (consumer, message_id) VALUES ($1, $2)', [
      consumer,
      handled,
    ]);
    // Another consumer's inbox row for the fresh message says nothing of this consumer's.
    await suite.pool.query('INSERT INTO bus_inbox (consumer, message_id) VALUES ($1, $2)', [
      'someone-else',
      fresh,
    ]);
    const seen: unknown[] = [];
    const transport = transportFor(t, suite.pool);
    await transport.consume({
      name: consumer,
      topic,
      serialByKey,
      pollIntervalMs: 60_000,
      handler: async (m) => void seen.push(m.payload),
    });
    await waitFor('both done', async () => (await isDone(handled)()) && (await isDone(fresh)()));
    await transport.stop();
    assert.deepEqual(seen, [{ n: 2 }]);
  });
}

/**
 * A consumer of 8 slots on 20 queued messages whose handlers end only when the test lets them, so
 * what it claims, and when, does not hang on how fast the machine is. Its claims that took
 * something are in `claims`, as logged.
 */
async function gatedConsumer(t: TestContext, claimGatherMs: number) {
  const topic = `gated-${claimGatherMs}`;
  const claims: number[] = [];
  const log = pino(
    { level: 'debug' },
    {
      write: (line: string) => {
        const entry = JSON.parse(line) as { msg?: string; claimed?: number };
        if (entry.msg === 'bus claim' && entry.claimed) claims.push(entry.claimed);
      },
    },
  );
  const transport = createPgTransport({ pool: suite.pool, logger: log });
  const gates: (() => void)[] = [];
  /** Ends the `n` handlers that have waited longest. */
  const end = (n: number) => {
    for (const resolve of gates.splice(0, n)) resolve();
  };
  let open = false;
  t.after(async () => {
    open = true;
    end(gates.length);
    await transport.stop();
  });
  for (let i = 0; i < 20; i++) await enqueue(suite.pool, { topic, key: `k${i}`, payload: { i } });
  await transport.consume({
    name: topic,
    topic,
    concurrency: 8,
    claimGatherMs,
    pollIntervalMs: 60_000,
    handler: () => (open ? Promise.resolve() : new Promise<void>((resolve) => gates.push(resolve))),
  });
  const running = () => gates.length;
  await waitFor('eight handlers running', async () => running() === 8);
  assert.deepEqual(claims, [8]);
  return { claims, running, end };
}

test('without claimGatherMs, a busy consumer claims as each handler ends, one message at a time', async (t) => {
  const consumer = await gatedConsumer(t, 0);
  for (let i = 0; i < 3; i++) {
    consumer.end(1);
    await waitFor('the freed slot taken', async () => consumer.running() === 8);
  }
  assert.deepEqual(consumer.claims, [8, 1, 1, 1]);
});

test('with claimGatherMs, a busy consumer with under a quarter of its slots free waits that long, then takes every freed slot in one claim', async (t) => {
  const gatherMs = 1500;
  const consumer = await gatedConsumer(t, gatherMs);
  // One slot of eight free: the consumer waits for more before it claims.
  const from = Date.now();
  consumer.end(1);
  await sleep(300);
  assert.equal(consumer.running(), 7);
  assert.deepEqual(consumer.claims, [8]);
  // The slots that free meanwhile join the same claim.
  consumer.end(2);
  await waitFor('the three freed slots taken', async () => consumer.running() === 8);
  const waited = Date.now() - from;
  assert.ok(waited >= gatherMs - 50, `claimed after ${waited} ms, not after the ${gatherMs} ms gather`);
  assert.deepEqual(consumer.claims, [8, 3]);
});
