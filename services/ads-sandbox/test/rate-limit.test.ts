import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../src/config.ts';
import { type AdListJson, type ErrorJson, type Sandbox, startSandbox } from './sandbox.ts';

/** Requests per second per account in this file's sandbox; the burst is twice it. */
const RATE = 2;

/** The sandbox's clock (ms), moved by the tests. */
let clock = 1_000_000;
let sb: Sandbox;

before(async () => {
  sb = await startSandbox({ ratePerSecond: RATE, now: () => clock });
});

after(async () => {
  await sb?.stop();
});

async function statuses(credential: string, n: number, path = '/me'): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await sb.call('GET', path, { token: credential })).status);
  return out;
}

describe('rate limit', () => {
  it('allows a burst of twice the rate, then answers 429 rate_limited with Retry-After in whole seconds', async () => {
    const { credential } = await sb.newAccount();
    assert.deepEqual(await statuses(credential, 2 * RATE), [200, 200, 200, 200]);
    const limited = await sb.call<ErrorJson>('GET', '/me', { token: credential });
    assert.equal(limited.status, 429);
    assert.equal(limited.body.error.code, 'rate_limited');
    assert.equal(limited.headers.get('retry-after'), '1');
  });

  it('refills at the rate per second, up to the burst', async () => {
    const { credential } = await sb.newAccount();
    await statuses(credential, 2 * RATE);
    clock += 500;
    assert.deepEqual(await statuses(credential, 2), [200, 429]);
    clock += 60_000;
    assert.deepEqual(await statuses(credential, 2 * RATE + 1), [200, 200, 200, 200, 429]);
  });

  it('limits each account on its own', async () => {
    const busy = await sb.newAccount();
    const quiet = await sb.newAccount();
    await statuses(busy.credential, 2 * RATE + 1);
    assert.deepEqual(await statuses(quiet.credential, 2 * RATE), [200, 200, 200, 200]);
  });

  it('counts every platform endpoint, and a refused mutation is not applied', async () => {
    const { accountId, credential } = await sb.newAccount();
    const list = await sb.call<AdListJson>('GET', '/ads?limit=1', { token: credential });
    const ad = list.body.data[0];
    assert.ok(ad !== undefined);
    assert.equal((await sb.call('GET', `/ads/${ad.id}`, { token: credential })).status, 200);
    assert.deepEqual(await statuses(credential, 2), [200, 200]);
    const refused = await sb.call<ErrorJson>('POST', `/ads/${ad.id}`, {
      token: credential,
      body: { name: 'Over the limit' },
    });
    assert.equal(refused.status, 429);
    assert.deepEqual(await sb.ledger(accountId), []);
  });

  it('does not limit the operator endpoints', async () => {
    const { accountId, credential } = await sb.newAccount();
    await statuses(credential, 2 * RATE + 1);
    for (let i = 0; i < 3 * RATE; i++) await sb.ledger(accountId);
  });

  it('reports to the operator what each account sent: requests let through, 429s, first and last', async () => {
    const { accountId, credential } = await sb.newAccount();
    const other = await sb.newAccount();
    const none = await sb.admin('GET', `/_sandbox/rate_limit?account_id=${accountId}`);
    assert.deepEqual(none.body, {
      account_id: accountId,
      rate_per_second: RATE,
      burst: 2 * RATE,
      allowed: 0,
      refused: 0,
      first_allowed_at: null,
      last_allowed_at: null,
    });
    const first = clock;
    await statuses(credential, 2 * RATE + 2);
    clock += 1000;
    const last = clock;
    await statuses(credential, 1);
    await statuses(other.credential, 1);
    const seen = await sb.admin('GET', `/_sandbox/rate_limit?account_id=${accountId}`);
    assert.equal(seen.status, 200);
    assert.deepEqual(seen.body, {
      account_id: accountId,
      rate_per_second: RATE,
      burst: 2 * RATE,
      allowed: 2 * RATE + 1,
      refused: 2,
      first_allowed_at: new Date(first).toISOString(),
      last_allowed_at: new Date(last).toISOString(),
    });
    const unnamed = await sb.admin<ErrorJson>('GET', '/_sandbox/rate_limit');
    assert.equal(unnamed.status, 400);
    assert.match(unnamed.body.error.message, /account_id/);
    const anonymous = await sb.call('GET', `/_sandbox/rate_limit?account_id=${accountId}`);
    assert.equal(anonymous.status, 401);
  });

  it('reads SANDBOX_RATE_PER_SECOND, 50 by default, and refuses one below 1', () => {
    const env = { DATABASE_URL: 'postgres://x/y', SANDBOX_ADMIN_TOKEN: 'a'.repeat(16) };
    assert.equal(loadConfig(env).SANDBOX_RATE_PER_SECOND, 50);
    assert.equal(loadConfig({ ...env, SANDBOX_RATE_PER_SECOND: '7' }).SANDBOX_RATE_PER_SECOND, 7);
    assert.throws(() => loadConfig({ ...env, SANDBOX_RATE_PER_SECOND: '0' }), /SANDBOX_RATE_PER_SECOND/);
  });
});
