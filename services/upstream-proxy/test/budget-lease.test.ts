/**
 * The leased request budget: replicas take slices of an account's bucket from Postgres and spend
 * them from memory, and together still never send more than the bucket grants.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ResourceExhaustedError } from '@adsmcp/runtime/errors';
import { Code, ConnectError } from '@connectrpc/connect';
import { CallCancelledError } from '../src/upstream/pause.ts';
import { createRequestBudget, leaseSize } from '../src/upstream/request-budget.ts';
import { type FakePlatform, json, startFakePlatform } from './fake-platform.ts';
import { as, type Harness, principal, startHarness } from './proxy-harness.ts';

let harness: Harness;
let platform: FakePlatform;

before(async () => {
  harness = await startHarness();
  platform = await startFakePlatform();
});

after(async () => {
  await harness?.stop();
  await platform?.close();
});

/** The harness's pool as a budget queries it, counting its statements. */
function countingPool() {
  const counted = {
    statements: 0,
    query: ((...args: Parameters<typeof harness.pool.query>) => {
      counted.statements++;
      return harness.pool.query(...args);
    }) as typeof harness.pool.query,
  };
  return counted;
}

describe('the leased request budget', () => {
  it('lets two replicas under concurrent load send no more than the shared bucket grants, in total and in any one second', async () => {
    // Slices of two tokens.
    const ratePerSecond = 20;
    const burst = 8;
    assert.ok(leaseSize({ ratePerSecond, burst }) > 1, 'this test is about slices of more than one token');
    const a = await harness.proxy({ platformUrl: platform.url, ratePerSecond, burst });
    const b = await harness.proxy({ platformUrl: platform.url, ratePerSecond, burst });
    const admin = principal();
    const accountId = await harness.connect(admin.workspaceId);
    const sentAt: number[] = [];
    platform.answer((req, res, n) => {
      sentAt.push(performance.now());
      json({})(req, res, n);
    });
    let refused = 0;
    const started = performance.now();
    const until = started + 2000;
    const worker = async (i: number) => {
      const replica = i % 2 === 0 ? a : b;
      while (performance.now() < until) {
        try {
          await replica.client.call({ accountId, method: 'GET', path: '/ads' }, as(admin));
        } catch (err) {
          // Sixteen callers on a budget of twenty a second: one that waited its two seconds in
          // all without winning a token is refused, and that is the budget doing its job.
          assert.ok(err instanceof ConnectError && err.code === Code.ResourceExhausted, String(err));
          refused++;
        }
      }
    };
    await Promise.all(Array.from({ length: 16 }, (_, i) => worker(i)));
    const elapsed = (performance.now() - started) / 1000;
    await a.close();
    await b.close();
    const total = sentAt.length;
    // Every request spent a token taken from the one bucket, full at the first call.
    assert.ok(total <= burst + ratePerSecond * elapsed, `${total} requests in ${elapsed.toFixed(2)} s`);
    // And the budget's refill is spent too, not stranded in slices the other replica holds.
    assert.ok(total > burst, `only ${total} requests in ${elapsed.toFixed(2)} s (${refused} refused)`);
    // In any one second: the bucket's, plus at most the slice each replica took from it before.
    const slack = 2 * leaseSize({ ratePerSecond, burst });
    for (const t of sentAt) {
      const inSecond = sentAt.filter((u) => u >= t && u < t + 1000).length;
      assert.ok(inSecond <= burst + ratePerSecond + slack, `${inSecond} requests within one second`);
    }
  });

  it('refuses a take the bucket cannot cover in time with the seconds to wait, whichever replica asks', async () => {
    const admin = principal();
    const accountId = await harness.connect(admin.workspaceId);
    const rule = { ratePerSecond: 40, burst: 8, maxWaitMs: 0 };
    const replicas = [createRequestBudget(harness.pool, rule), createRequestBudget(harness.pool, rule)];
    let granted = 0;
    const refusals: ResourceExhaustedError[] = [];
    const started = performance.now();
    for (let i = 0; i < 40; i++) {
      try {
        await replicas[i % 2]?.take(accountId);
        granted++;
      } catch (err) {
        assert.ok(err instanceof ResourceExhaustedError, String(err));
        refusals.push(err);
      }
    }
    const elapsed = (performance.now() - started) / 1000;
    assert.ok(
      granted <= rule.burst + rule.ratePerSecond * elapsed,
      `${granted} granted in ${elapsed.toFixed(2)} s`,
    );
    assert.ok(refusals.length > 0, 'the bucket ran dry');
    for (const err of refusals) {
      assert.equal(err.retryAfterSeconds, 1);
      assert.match(
        err.message,
        new RegExp(
          `^the request budget for ad account ${accountId} is used up \\(40 requests per second, bursts of 8\\); retry in 1 s$`,
        ),
      );
    }
  });

  it('serves the callers waiting on one account in the order they came, and one that gives up leaves its place at once', async () => {
    const admin = principal();
    const accountId = await harness.connect(admin.workspaceId);
    // One token every 100 ms, slices of one: each waiting caller is served on its own refill.
    const rule = { ratePerSecond: 10, burst: 1, maxWaitMs: 3000 };
    assert.equal(leaseSize(rule), 1);
    const budget = createRequestBudget(harness.pool, rule);
    await budget.take(accountId); // the bucket is now empty
    const served: number[] = [];
    const refused: number[] = [];
    const cancelled: number[] = [];
    const leaving = new AbortController();
    const callers = Array.from({ length: 12 }, (_, i) =>
      budget.take(accountId, i === 3 ? leaving.signal : undefined).then(
        () => served.push(i),
        (err: unknown) => {
          if (err instanceof CallCancelledError) cancelled.push(i);
          else refused.push(i);
        },
      ),
    );
    await sleep(50);
    leaving.abort();
    await sleep(10);
    assert.deepEqual(cancelled, [3], 'the caller that gave up left without waiting for its turn');
    await Promise.all(callers);
    assert.deepEqual(refused, []);
    assert.deepEqual(served, [0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11]);
  });

  it('goes to Postgres once per slice, not once per request', async () => {
    const admin = principal();
    const accountId = await harness.connect(admin.workspaceId);
    const counted = countingPool();
    const rule = { ratePerSecond: 1000, burst: 1000 };
    const budget = createRequestBudget(counted, rule);
    for (let i = 0; i < 200; i++) await budget.take(accountId);
    // Two slices of 100, and the statement that created the account's bucket.
    assert.equal(leaseSize(rule), 100);
    assert.ok(counted.statements <= 4, `${counted.statements} statements for 200 tokens`);
  });

  it('at the rate limit, goes to Postgres about once per slice too, not once per token as the bucket refills', async () => {
    const admin = principal();
    const accountId = await harness.connect(admin.workspaceId);
    const counted = countingPool();
    const rule = { ratePerSecond: 40, burst: 40 };
    assert.equal(leaseSize(rule), 4);
    const budget = createRequestBudget(counted, { ...rule, maxWaitMs: 5000 });
    for (let i = 0; i < 40; i++) await budget.take(accountId); // the burst: the bucket is empty now
    counted.statements = 0;
    const started = performance.now();
    // Ten callers at once, as an apply worker's slots, 40 tokens in all: a second at the rate.
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        for (let i = 0; i < 4; i++) await budget.take(accountId);
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    // The bucket refills a token every 25 ms: a lease that took whatever whole tokens were there
    // went to Postgres once or twice a token (40 to 80 statements); waiting for a slice's worth,
    // once per four tokens (10), and a few more for early wakes.
    assert.ok(counted.statements <= 16, `${counted.statements} statements for 40 tokens at the limit`);
    // Never faster than the rate, and the wait for whole slices leaves none of it unused for long.
    assert.ok(seconds >= 0.9 && seconds < 3, `40 tokens at 40/s took ${seconds.toFixed(2)} s`);
  });
});
