/**
 * The bus contract: what every transport must do, as one suite run once per transport
 * (bus-pg.test.ts, bus-kafka.test.ts). Each test observes what a user of the bus would: what
 * handlers receive, what their effects in the service's database are, and the dead letters.
 *
 * `busContract` registers the suite in the calling test file and returns what that file's
 * transport-specific tests share with it (the database, pools, helpers).
 */
import assert from 'node:assert/strict';
import { after, before, describe, type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { stopTestServer, type TestDatabase, testDatabase } from '@adsmcp/testkit/postgres';
import {
  AlreadyProcessedError,
  type BusTransport,
  type Delivery,
  deterministicId,
  enqueue,
  type HandlerContext,
  listDead,
  migrateBus,
  requeue,
} from '../src/bus/index.ts';
import { createPool, inTransaction, type Pool } from '../src/db.ts';
import { currentRequestId, withRequestId } from '../src/log.ts';

export const SCHEMA = 'bus_test';

export interface BusHarness {
  /** Names the transport in the suite's title. */
  name: string;
  /** Runs once before the suite (after the database is ready), e.g. to start a broker. */
  setup?(): Promise<void>;
  /** Runs once after the suite, before the database is dropped. */
  teardown?(): Promise<void>;
  /** A new transport on `pool`. */
  transport(pool: Pool): BusTransport;
  /**
   * How many of the suite's tests run at once (default 1). Each test has its own topics and
   * consumer names; a transport whose consumers take seconds to join (Kafka) runs several.
   */
  concurrency?: number;
  /**
   * How long a redelivery may take to show up when it would be a bug (a message delivered
   * again after it was done): the suite waits this long before saying nothing more came.
   */
  quietMs: number;
}

export interface BusSuite {
  readonly db: TestDatabase;
  /** Two pools on the same schema, as two processes of one service would have. */
  readonly pool: Pool;
  readonly pool2: Pool;
  /** A transport on `p` that is stopped when test `t` ends, passed or not. */
  transportFor(t: TestContext, p: Pool): BusTransport;
}

export async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

export function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** effectsOf lists the consumers that recorded an effect for `messageId`, in insertion order. */
export async function effectsOf(pool: Pool, messageId: string): Promise<string[]> {
  const { rows } = await pool.query<{ consumer: string }>(
    'SELECT consumer FROM effects WHERE message_id = $1 ORDER BY at',
    [messageId],
  );
  return rows.map((r) => r.consumer);
}

/** recordEffect writes the effect of `messageId` by `who` in the handler's inbox transaction. */
function recordEffect(ctx: HandlerContext) {
  return (messageId: string, who: string) =>
    ctx.inTx((c) => c.query('INSERT INTO effects (message_id, consumer) VALUES ($1, $2)', [messageId, who]));
}

export function busContract(h: BusHarness): BusSuite {
  let db: TestDatabase | undefined;
  let pool: Pool | undefined;
  let pool2: Pool | undefined;
  const suite: BusSuite = {
    get db() {
      assert.ok(db, 'the database is ready');
      return db;
    },
    get pool() {
      assert.ok(pool, 'the pool is ready');
      return pool;
    },
    get pool2() {
      assert.ok(pool2, 'the pool is ready');
      return pool2;
    },
    transportFor(t, p) {
      const transport = h.transport(p);
      t.after(() => transport.stop());
      return transport;
    },
  };

  before(async () => {
    db = await testDatabase();
    pool = createPool(db.url, SCHEMA);
    pool2 = createPool(db.url, SCHEMA);
    await migrateBus(pool, SCHEMA);
    // What handlers do in their inbox transaction; no key, so a double effect would show as a row.
    await pool.query(
      'CREATE TABLE effects (message_id uuid NOT NULL, consumer text NOT NULL, at timestamptz DEFAULT clock_timestamp())',
    );
    await h.setup?.();
  });

  after(async () => {
    await h.teardown?.();
    await pool?.end();
    await pool2?.end();
    await db?.drop();
    await stopTestServer();
  });

  describe(`the bus contract on ${h.name}`, { concurrency: h.concurrency ?? 1 }, () => {
    // The longest first, so that running several at once ends sooner.
    test('a consumer joining mid-stream and another leaving (a rebalance) lose no message and double no effect', async (t) => {
      const topic = 'rebalanced';
      const calls = { a: 0, b: 0 };
      const consumeAs = async (who: 'a' | 'b', p: Pool) => {
        const transport = suite.transportFor(t, p);
        await transport.consume({
          name: 'rebalanced',
          topic,
          concurrency: 2,
          pollIntervalMs: 100,
          handler: async (m, ctx) => {
            calls[who]++;
            await sleep(25);
            await recordEffect(ctx)(m.id, who);
          },
        });
        return transport;
      };
      const a = await consumeAs('a', suite.pool);
      const ids = await inTransaction(suite.pool, async (c) => {
        const out: string[] = [];
        for (let i = 0; i < 200; i++)
          out.push(await enqueue(c, { topic, key: `k${i % 16}`, payload: { i } }));
        return out;
      });
      await waitFor('the first consumer to be under way', async () => calls.a >= 10, 20_000);
      const b = await consumeAs('b', suite.pool2);
      await a.stop(); // graceful: its running handlers finish, the rest goes to b
      await waitFor(
        'all 200 handled',
        async () => (await countEffects(suite.pool, ids)).total >= 200,
        40_000,
      );
      await sleep(h.quietMs);
      await b.stop();

      assert.deepEqual(await countEffects(suite.pool, ids), { total: 200, distinct: 200 });
      assert.ok(calls.b > 0, `the consumer that joined took over work: ${JSON.stringify(calls)}`);
    });

    test('two consumers of one name in two processes share the messages and each is processed exactly once', async (t) => {
      const topic = 'shared';
      const handled = { a: 0, b: 0 };
      const consumeAs = async (who: 'a' | 'b', p: Pool) => {
        const transport = suite.transportFor(t, p);
        await transport.consume({
          name: 'counter',
          topic,
          concurrency: 3,
          pollIntervalMs: 100,
          handler: async (m, ctx) => {
            await sleep(5);
            await recordEffect(ctx)(m.id, who);
            handled[who]++;
          },
        });
        return transport;
      };
      const transports = [await consumeAs('a', suite.pool), await consumeAs('b', suite.pool2)];
      const ids = await inTransaction(suite.pool, async (c) => {
        const out: string[] = [];
        for (let i = 0; i < 60; i++) out.push(await enqueue(c, { topic, key: `k${i % 20}`, payload: { i } }));
        return out;
      });
      await waitFor('all 60 handled', async () => (await countEffects(suite.pool, ids)).total === 60, 20_000);
      await sleep(h.quietMs);
      await Promise.all(transports.map((tr) => tr.stop()));

      assert.deepEqual(await countEffects(suite.pool, ids), { total: 60, distinct: 60 });
      assert.equal(handled.a + handled.b, 60, 'no message reached a handler twice');
      assert.ok(handled.a > 0 && handled.b > 0, `work was shared: ${JSON.stringify(handled)}`);
    });

    test('a message enqueued in a rolled-back transaction never exists; a committed one is delivered once, with its key, payload, headers and the producer request id', async (t) => {
      const { pool } = suite;
      const topic = 'commit-or-not';
      await assert.rejects(
        inTransaction(pool, async (c) => {
          await enqueue(c, { topic, key: 'k', payload: { n: 1 } });
          throw new Error('state change refused');
        }),
      );
      const enqueuedAt = Date.now();
      const id = await withRequestId('req-42', () =>
        inTransaction(pool, (c) =>
          enqueue(c, { topic, key: 'k', payload: { n: 2 }, headers: { origin: 'test' } }),
        ),
      );

      const seen: { message: Delivery; requestId: string | undefined }[] = [];
      const transport = suite.transportFor(t, pool);
      await transport.consume({
        name: 'commit',
        topic,
        pollIntervalMs: 100,
        handler: async (message) => void seen.push({ message, requestId: currentRequestId() }),
      });
      await waitFor('delivery', async () => seen.length > 0);
      await sleep(h.quietMs); // nothing more is delivered
      await transport.stop();

      assert.deepEqual(
        seen.map(({ message: m }) => [m.id, m.topic, m.key, m.payload, m.attempt]),
        [[id, topic, 'k', { n: 2 }, 1]],
      );
      const [first] = seen;
      assert.deepEqual(first?.message.headers, { origin: 'test', 'x-request-id': 'req-42' });
      assert.equal(first?.requestId, 'req-42', 'the handler runs with the producer request id');
      const at = first?.message.enqueuedAt.getTime() ?? 0;
      assert.ok(Math.abs(at - enqueuedAt) < 5000, `enqueued at ${first?.message.enqueuedAt.toISOString()}`);
    });

    test('the same message id enqueued twice is stored once and delivered once', async (t) => {
      const { pool } = suite;
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
      const transport = suite.transportFor(t, pool);
      await transport.consume({
        name: 'dedupe',
        topic,
        pollIntervalMs: 100,
        handler: async (m) => void seen.push(m),
      });
      await waitFor('delivery', async () => seen.length > 0);
      // Enqueued again after it was handled: still nothing new to deliver.
      await inTransaction(pool, (c) => enqueue(c, { id, topic, key: 'k', payload: { v: 3 } }));
      await sleep(h.quietMs);
      await transport.stop();
      assert.deepEqual(
        seen.map((m) => [m.id, m.payload]),
        [[id, { v: 1 }]],
      );
    });

    test('with serialByKey, two processes of one consumer never run two messages of one key at once, and run other keys meanwhile', async (t) => {
      const topic = 'serial';
      const keys = ['account-1 /ads/1', 'account-1 /ads/2', 'account-2 /ads/1'];
      const running = new Map<string, number>();
      let most = 0;
      let mostOfAll = 0;
      let runningOfAll = 0;
      const consumeAs = async (who: string, p: Pool) => {
        const transport = suite.transportFor(t, p);
        await transport.consume({
          name: 'serial',
          topic,
          serialByKey: true,
          concurrency: 3,
          pollIntervalMs: 100,
          handler: async (m, ctx) => {
            const now = (running.get(m.key) ?? 0) + 1;
            running.set(m.key, now);
            runningOfAll++;
            most = Math.max(most, now);
            mostOfAll = Math.max(mostOfAll, runningOfAll);
            await sleep(15);
            running.set(m.key, (running.get(m.key) ?? 1) - 1);
            runningOfAll--;
            await recordEffect(ctx)(m.id, who);
          },
        });
      };
      await consumeAs('a', suite.pool);
      await consumeAs('b', suite.pool2);
      const ids = await inTransaction(suite.pool, async (c) => {
        const out: string[] = [];
        for (let i = 0; i < 30; i++)
          out.push(await enqueue(c, { topic, key: keys[i % 3] ?? '', payload: { i } }));
        return out;
      });
      await waitFor('all 30 handled', async () => (await countEffects(suite.pool, ids)).total === 30, 20_000);
      await sleep(h.quietMs);

      assert.deepEqual(await countEffects(suite.pool, ids), { total: 30, distinct: 30 });
      assert.equal(most, 1, 'never two messages of one key at once');
      // Kafka may hash the three keys to one partition; the PostgreSQL queue runs them side by side.
      if (h.name === 'PostgreSQL') assert.ok(mostOfAll > 1, 'other keys ran meanwhile');
    });

    test('the messages of one key are handled in the order they were enqueued', async (t) => {
      const { pool } = suite;
      const topic = 'ordered';
      const keys = ['change-a', 'change-b', 'change-c'];
      await inTransaction(pool, async (c) => {
        for (let i = 0; i < 8; i++) for (const key of keys) await enqueue(c, { topic, key, payload: i });
      });
      const seen = new Map<string, number[]>(keys.map((k) => [k, []]));
      const transport = suite.transportFor(t, pool);
      await transport.consume<number>({
        name: 'ordered',
        topic,
        pollIntervalMs: 100,
        handler: async (m) => void seen.get(m.key)?.push(m.payload),
      });
      await waitFor('all 24', async () => [...seen.values()].every((s) => s.length === 8));
      for (const key of keys) assert.deepEqual(seen.get(key), [0, 1, 2, 3, 4, 5, 6, 7], key);
    });

    test('a failing handler is retried with exponential backoff, sees its attempt number and succeeds later', async (t) => {
      const { pool } = suite;
      const topic = 'flaky';
      const calls: { attempt: number; at: number }[] = [];
      const transport = suite.transportFor(t, pool);
      await transport.consume({
        name: 'flaky',
        topic,
        maxAttempts: 5,
        backoff: { baseMs: 150, capMs: 10_000 },
        random: () => 1, // no jitter: waits are exactly 150 ms then 300 ms
        pollIntervalMs: 60_000, // only the retry can bring the message back this soon
        handler: async (m) => {
          calls.push({ attempt: m.attempt, at: Date.now() });
          if (calls.length < 3) throw new Error(`flaky failure ${calls.length}`);
        },
      });
      await inTransaction(pool, (c) => enqueue(c, { topic, key: 'k', payload: {} }));
      await waitFor('success', async () => calls.length === 3);
      await sleep(h.quietMs);
      await transport.stop();

      assert.deepEqual(
        calls.map((c) => c.attempt),
        [1, 2, 3],
      );
      const [c1, c2, c3] = calls.map((c) => c.at) as [number, number, number];
      assert.ok(c2 - c1 >= 145, `first retry after ${c2 - c1} ms`);
      assert.ok(c3 - c2 >= 295, `second retry after ${c3 - c2} ms`);
      assert.ok(c3 - c1 < 3000, `retries took ${c3 - c1} ms`);
      assert.deepEqual(await listDead(pool, { topic }), []);
    });

    test('a handler that always fails is parked as dead after max attempts with its error kept; requeue delivers it again', async (t) => {
      const { pool } = suite;
      const topic = 'poison';
      let failing = true;
      const attempts: number[] = [];
      const transport = suite.transportFor(t, pool);
      await transport.consume({
        name: 'poison',
        topic,
        maxAttempts: 3,
        backoff: { baseMs: 10, capMs: 20 },
        pollIntervalMs: 60_000,
        handler: async (m) => {
          attempts.push(m.attempt);
          if (failing) throw new Error('upstream refused: 422 invalid budget');
        },
      });
      const id = await inTransaction(pool, (c) =>
        enqueue(c, { topic, key: 'camp-1', payload: { budget: -1 } }),
      );
      await waitFor('a dead letter', async () => (await listDead(pool, { topic })).length > 0);
      await sleep(h.quietMs); // nothing more happens to a dead message
      assert.deepEqual(attempts, [1, 2, 3]);

      const dead = await listDead(pool, { topic });
      assert.deepEqual(
        dead.map((d) => [d.id, d.topic, d.key, d.payload, d.attempts, d.lastError]),
        [[id, topic, 'camp-1', { budget: -1 }, 3, 'upstream refused: 422 invalid budget']],
      );
      assert.deepEqual(await listDead(pool, { topic: 'another-topic' }), []);

      failing = false;
      assert.equal(await requeue(pool, id), true);
      assert.equal(await requeue(pool, id), false, 'only a dead message can be requeued');
      await waitFor('delivery after requeue', async () => attempts.length === 4);
      await sleep(h.quietMs);
      await transport.stop();
      assert.deepEqual(attempts, [1, 2, 3, 1], 'a requeued message starts its attempts again');
      assert.deepEqual(await listDead(pool, { topic }), []);
    });

    test('stop waits for a running handler; its message is done and not delivered again', async (t) => {
      const { pool } = suite;
      const topic = 'stopping';
      const running = deferred();
      let finished = false;
      const first = suite.transportFor(t, pool);
      await first.consume({
        name: 'stopping',
        topic,
        pollIntervalMs: 100,
        // No inbox record (no ctx.inTx): only the transport's own bookkeeping (the row marked done,
        // the offset committed) keeps the message from being delivered again.
        handler: async () => {
          running.resolve();
          await sleep(300);
          finished = true;
        },
      });
      await inTransaction(pool, (c) => enqueue(c, { topic, key: 'k', payload: {} }));
      await running.promise;
      await first.stop();
      assert.equal(finished, true, 'the in-flight handler finished before stop resolved');
      await assert.rejects(first.consume({ name: 'late', topic, handler: async () => undefined }), /stopped/);

      let again = 0;
      const second = suite.transportFor(t, suite.pool2);
      await second.consume({
        name: 'stopping',
        topic,
        pollIntervalMs: 100,
        handler: async () => {
          again++;
        },
      });
      await sleep(h.quietMs);
      await second.stop();
      assert.equal(again, 0, 'a message finished before stop is not delivered again');
    });

    test('a consumer stopped mid-handler gives up after stopTimeoutMs and aborts the handler; another consumer retries the message, and the inbox stops a double effect when the first finishes late', async (t) => {
      const topic = 'crash';
      const firstMayFinish = deferred();
      t.after(firstMayFinish.resolve);
      const firstRunning = deferred();
      let firstOutcome: Promise<string> | undefined;
      let firstSignal: AbortSignal | undefined;

      const first = suite.transportFor(t, suite.pool);
      await first.consume({
        name: 'applier',
        topic,
        leaseMs: 400,
        pollIntervalMs: 50,
        stopTimeoutMs: 50,
        handler: (m, ctx) => {
          firstSignal = ctx.signal;
          firstRunning.resolve();
          // Hangs as if the process froze; when let go, it tries to record its effect.
          firstOutcome = firstMayFinish.promise.then(() =>
            recordEffect(ctx)(m.id, 'first').then(
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
      assert.ok(Date.now() - stopStarted < 3000, 'stop gives up on a hung handler after stopTimeoutMs');
      assert.equal(firstSignal?.aborted, true, 'the abandoned handler is told to give up');

      let secondAttempt = 0;
      const second = suite.transportFor(t, suite.pool2);
      await second.consume({
        name: 'applier',
        topic,
        leaseMs: 400,
        pollIntervalMs: 50,
        handler: async (m, ctx) => {
          secondAttempt = m.attempt;
          await recordEffect(ctx)(m.id, 'second');
        },
      });
      await waitFor(
        'the second consumer to handle it',
        async () => (await effectsOf(suite.pool, id)).length > 0,
      );
      assert.equal(secondAttempt, 2, 'the abandoned delivery counted as an attempt');

      firstMayFinish.resolve();
      assert.equal(await firstOutcome, 'already processed');
      await second.stop();
      assert.deepEqual(await effectsOf(suite.pool, id), ['second']);
    });

    test('a message whose last attempt never finished is parked as dead, not run again', async (t) => {
      const topic = 'killer';
      const running = deferred();
      const hang = deferred();
      t.after(hang.resolve);
      const first = suite.transportFor(t, suite.pool);
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
      const id = await enqueue(suite.pool, { topic, key: 'k', payload: {} });
      await running.promise;
      await first.stop();

      let secondCalls = 0;
      const second = suite.transportFor(t, suite.pool2);
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
      await waitFor('a dead letter', async () => (await listDead(suite.pool, { topic })).length > 0);
      await second.stop();
      assert.equal(secondCalls, 0);
      const dead = await listDead(suite.pool, { topic });
      assert.equal(dead.length, 1);
      assert.equal(dead[0]?.id, id);
      assert.equal(dead[0]?.attempts, 2);
      assert.match(dead[0]?.lastError ?? '', /attempt 1 .*before the handler finished/);
    });

    test('a message whose last attempt fails runs its give-up path once, with the error, before it is parked as dead', async (t) => {
      const topic = 'give-up-failed';
      const reasons: string[] = [];
      const transport = suite.transportFor(t, suite.pool);
      await transport.consume({
        name: 'give-up-failed',
        topic,
        maxAttempts: 2,
        backoff: { baseMs: 10, capMs: 20 },
        pollIntervalMs: 50,
        handler: async () => {
          throw new Error('the platform could not be reached');
        },
        giveUp: async (m, ctx, reason) => {
          reasons.push(reason.kind === 'failed' ? `failed: ${(reason.error as Error).message}` : reason.kind);
          await recordEffect(ctx)(m.id, 'given up');
        },
      });
      const id = await enqueue(suite.pool, { topic, key: 'k', payload: {} });
      await waitFor('a dead letter', async () => (await listDead(suite.pool, { topic })).length > 0);
      await sleep(h.quietMs);
      assert.deepEqual(reasons, ['failed: the platform could not be reached']);
      assert.deepEqual(await effectsOf(suite.pool, id), ['given up']);
      assert.equal(
        (await listDead(suite.pool, { topic }))[0]?.lastError,
        'the platform could not be reached',
      );
    });

    test('a message whose last attempt never finished runs its give-up path in the next consumer, not its handler', async (t) => {
      const topic = 'give-up-abandoned';
      const running = deferred();
      const hang = deferred();
      t.after(hang.resolve);
      const first = suite.transportFor(t, suite.pool);
      await first.consume({
        name: 'give-up-abandoned',
        topic,
        maxAttempts: 1,
        leaseMs: 200,
        pollIntervalMs: 50,
        stopTimeoutMs: 20,
        handler: async () => {
          running.resolve();
          await hang.promise; // as if it took the process down with it
        },
        giveUp: async () => {
          throw new Error('the first consumer never gives up: it is gone');
        },
      });
      const id = await enqueue(suite.pool, { topic, key: 'k', payload: {} });
      await running.promise;
      await first.stop();

      let handled = 0;
      const reasons: string[] = [];
      const second = suite.transportFor(t, suite.pool2);
      await second.consume({
        name: 'give-up-abandoned',
        topic,
        maxAttempts: 1,
        leaseMs: 200,
        pollIntervalMs: 50,
        handler: async () => {
          handled++;
        },
        giveUp: async (m, ctx, reason) => {
          reasons.push(reason.kind === 'abandoned' ? reason.detail : 'failed');
          await recordEffect(ctx)(m.id, 'given up');
        },
      });
      await waitFor('a dead letter', async () => (await listDead(suite.pool, { topic })).length > 0);
      await sleep(h.quietMs);
      await second.stop();
      assert.equal(handled, 0, 'the handler is not run past the last attempt');
      assert.equal(reasons.length, 1);
      assert.match(reasons[0] ?? '', /attempt 1 .*before the handler finished/);
      assert.deepEqual(await effectsOf(suite.pool, id), ['given up']);
    });

    test('a give-up path that fails is run again until it succeeds; the message is dead only then', async (t) => {
      const topic = 'give-up-retried';
      let calls = 0;
      const transport = suite.transportFor(t, suite.pool);
      await transport.consume({
        name: 'give-up-retried',
        topic,
        maxAttempts: 1,
        backoff: { baseMs: 10, capMs: 20 },
        pollIntervalMs: 50,
        handler: async () => {
          throw new Error('refused');
        },
        giveUp: async (m, ctx) => {
          calls++;
          if (calls < 3) throw new Error('the database is away');
          await recordEffect(ctx)(m.id, 'given up');
        },
      });
      const id = await enqueue(suite.pool, { topic, key: 'k', payload: {} });
      await waitFor('a dead letter', async () => (await listDead(suite.pool, { topic })).length > 0, 20_000);
      await sleep(h.quietMs);
      assert.equal(calls, 3);
      assert.deepEqual(await effectsOf(suite.pool, id), ['given up']);
    });
  });

  return suite;
}

async function countEffects(pool: Pool, ids: string[]): Promise<{ total: number; distinct: number }> {
  const { rows } = await pool.query<{ total: number; distinct: number }>(
    `SELECT count(*)::int AS total, count(DISTINCT message_id)::int AS distinct
       FROM effects WHERE message_id = ANY($1::uuid[])`,
    [ids],
  );
  return rows[0] ?? { total: 0, distinct: 0 };
}
