import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ErrorJson, Sandbox } from './sandbox.ts';
import { startSandbox } from './sandbox.ts';

const RATE = 2;
let sb: Sandbox;
/** A clock that never moves, so the bucket never refills. */
const clock = Date.parse('2026-11-20T12:00:00.000Z');

before(async () => {
  sb = await startSandbox({ ratePerSecond: RATE, now: () => clock });
});

after(async () => {
  await sb?.stop();
});

describe('rate limit on the ad structure endpoints', () => {
  it('answers every one with 429 and Retry-After once the bucket is empty, applying nothing', async () => {
    const { accountId, credential } = await sb.newAccount();
    for (let i = 0; i < 2 * RATE; i++) {
      assert.equal((await sb.call('GET', '/campaigns', { token: credential })).status, 200);
    }
    const calls: [string, string, unknown][] = [
      ['GET', '/campaigns', undefined],
      ['GET', '/ad_groups', undefined],
      ['GET', '/feeds', undefined],
      ['GET', '/geo_lookup/search?q=501', undefined],
      ['GET', '/bulk_mutation_jobs/job_0000000000000000', undefined],
      ['POST', '/ad_groups', { name: 'Over the limit' }],
      ['POST', '/bulk_mutation_jobs', { operations: [] }],
      ['POST', '/feeds/pf_0000000000000000/archive', undefined],
    ];
    for (const [method, path, body] of calls) {
      const res = await sb.call<ErrorJson>(method, path, {
        token: credential,
        ...(body === undefined ? {} : { body }),
      });
      assert.equal(res.status, 429, `${method} ${path}`);
      assert.equal(res.body.error.code, 'rate_limited');
      assert.ok(Number(res.headers.get('retry-after')) >= 1);
    }
    assert.deepEqual(await sb.ledger(accountId), []);
  });
});
