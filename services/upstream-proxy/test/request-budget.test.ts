import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { Code, ConnectError } from '@connectrpc/connect';
import { type FakePlatform, json, startFakePlatform } from './fake-platform.ts';
import { as, type Harness, principal, type Replica, refused, startHarness } from './proxy-harness.ts';

let harness: Harness;
let platform: FakePlatform;
const started: Replica[] = [];

before(async () => {
  harness = await startHarness();
  platform = await startFakePlatform();
});

afterEach(async () => {
  for (const p of started.splice(0)) await p.close();
  platform.seen.length = 0;
  platform.answer(json({}));
});

after(async () => {
  await harness?.stop();
  await platform?.close();
});

/** Two replicas of the proxy on the same database, with the same budget. */
async function twoReplicas(ratePerSecond: number, burst: number): Promise<[Replica, Replica]> {
  const a = await harness.proxy({ platformUrl: platform.url, ratePerSecond, burst });
  const b = await harness.proxy({ platformUrl: platform.url, ratePerSecond, burst });
  started.push(a, b);
  return [a, b];
}

describe('the per-account request budget', () => {
  it('is one bucket shared by every replica: a burst over two replicas drains it, and the next call is refused with retry-after', async () => {
    const [a, b] = await twoReplicas(0.05, 6);
    const admin = principal();
    const accountId = await harness.connect(admin.workspaceId);
    const call = { accountId, method: 'GET', path: '/ads' };
    for (let i = 0; i < 6; i++) {
      const res = await (i % 2 === 0 ? a : b).client.call(call, as(admin));
      assert.equal(res.status, 200);
    }
    for (const replica of [a, b]) {
      const err = await refused(
        replica.client.call(call, as(admin)),
        Code.ResourceExhausted,
        new RegExp(`^the request budget for ad account ${accountId} is used up .*; retry in (19|20) s$`),
      );
      assert.match(String(err.metadata.get('retry-after')), /^(19|20)$/);
    }
    assert.equal(platform.seen.length, 6);
  });

  it('grants exactly the burst to concurrent calls spread over two replicas', async () => {
    const [a, b] = await twoReplicas(0.01, 10);
    const admin = principal();
    const accountId = await harness.connect(admin.workspaceId);
    const outcomes = await Promise.allSettled(
      Array.from({ length: 24 }, (_, i) =>
        (i % 2 === 0 ? a : b).client.call({ accountId, method: 'GET', path: '/ads' }, as(admin)),
      ),
    );
    const granted = outcomes.filter((o) => o.status === 'fulfilled').length;
    const refusedCalls = outcomes.filter(
      (o) =>
        o.status === 'rejected' &&
        o.reason instanceof ConnectError &&
        o.reason.code === Code.ResourceExhausted,
    ).length;
    assert.deepEqual({ granted, refused: refusedCalls }, { granted: 10, refused: 14 });
    assert.equal(platform.seen.length, 10);
  });

  it('keeps a budget per account: one account used up leaves another untouched', async () => {
    const [a] = await twoReplicas(0.01, 2);
    const admin = principal();
    const busy = await harness.connect(admin.workspaceId);
    const quiet = await harness.connect(admin.workspaceId);
    for (let i = 0; i < 2; i++)
      await a.client.call({ accountId: busy, method: 'GET', path: '/ads' }, as(admin));
    await refused(
      a.client.call({ accountId: busy, method: 'GET', path: '/ads' }, as(admin)),
      Code.ResourceExhausted,
      /used up/,
    );
    const res = await a.client.call({ accountId: quiet, method: 'GET', path: '/ads' }, as(admin));
    assert.equal(res.status, 200);
  });

  it('makes a call that is short of budget by under 2 s wait its turn instead of failing', async () => {
    const [a, b] = await twoReplicas(2, 1);
    const admin = principal();
    const accountId = await harness.connect(admin.workspaceId);
    await a.client.call({ accountId, method: 'GET', path: '/ads' }, as(admin));
    const t0 = performance.now();
    const res = await b.client.call({ accountId, method: 'GET', path: '/ads' }, as(admin));
    const waited = performance.now() - t0;
    assert.equal(res.status, 200);
    assert.ok(waited >= 400, `waited only ${Math.round(waited)} ms for a token that refills in 500 ms`);
    assert.equal(platform.seen.length, 2);
  });

  it('spends one token per request sent, retries included', async () => {
    const [a] = await twoReplicas(0.01, 3);
    const admin = principal();
    const accountId = await harness.connect(admin.workspaceId);
    platform.answer((req, res, n) => json({}, n === 1 ? 500 : 200)(req, res, n));
    const res = await a.client.call({ accountId, method: 'GET', path: '/ads' }, as(admin));
    assert.equal(res.attempts, 2);
    await a.client.call({ accountId, method: 'GET', path: '/ads' }, as(admin));
    await refused(
      a.client.call({ accountId, method: 'GET', path: '/ads' }, as(admin)),
      Code.ResourceExhausted,
      /used up/,
    );
    assert.equal(platform.seen.length, 3);
  });
});
