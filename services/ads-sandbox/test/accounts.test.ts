import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sha256 } from '../src/auth.ts';
import { ADMIN_TOKEN, type Sandbox, startSandbox } from './sandbox.ts';

let sb: Sandbox;

before(async () => {
  sb = await startSandbox();
});

after(async () => {
  await sb?.stop();
});

function call(method: string, path: string, opts: { token?: string; body?: unknown } = {}) {
  return sb.call(method, path, opts);
}

function createAccount(body: unknown, token = ADMIN_TOKEN) {
  return call('POST', '/_sandbox/accounts', { token, body });
}

describe('ads sandbox accounts', () => {
  it('reports healthy', async () => {
    const res = await call('GET', '/healthz');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { status: 'ok' });
  });

  it('creates an account whose credential then reads it back from /me', async () => {
    const created = await createAccount({ name: 'Acme', currency: 'EUR', time_zone: 'Europe/Berlin' });
    assert.equal(created.status, 201);
    assert.deepEqual(Object.keys(created.body).sort(), ['account_id', 'credential']);
    const { account_id, credential } = created.body as { account_id: string; credential: string };

    const me = await call('GET', '/me', { token: credential });
    assert.equal(me.status, 200);
    const { credential_expires_at, ...rest } = me.body as { credential_expires_at: string };
    assert.deepEqual(rest, {
      id: account_id,
      name: 'Acme',
      currency: 'EUR',
      time_zone: 'Europe/Berlin',
      bulk_access: true,
    });
    // The credential's expiry, as a platform reports its long-lived tokens': 60 days after it was issued.
    const days = (Date.parse(credential_expires_at) - Date.now()) / 86_400_000;
    assert.ok(days > 59.9 && days <= 60, `expires in ${days} days`);
  });

  it('stores only the SHA-256 of a credential', async () => {
    const created = await createAccount({ name: 'Hashed', currency: 'USD', time_zone: 'UTC' });
    const { account_id, credential } = created.body as { account_id: string; credential: string };
    const { rows } = await sb.pool.query<{ token_sha256: Buffer }>(
      'SELECT token_sha256 FROM credentials WHERE account_id = $1',
      [account_id],
    );
    assert.equal(rows.length, 1);
    assert.deepEqual(rows[0]?.token_sha256, sha256(credential));
    const { rows: leaked } = await sb.pool.query(
      `SELECT 1 FROM credentials c JOIN accounts a ON a.id = c.account_id
        WHERE c::text LIKE '%' || $1 || '%' OR a::text LIKE '%' || $1 || '%'`,
      [credential],
    );
    assert.equal(leaked.length, 0);
  });

  it('canonicalises the time zone and refuses an unknown one', async () => {
    const ok = await createAccount({ name: 'Lower', currency: 'USD', time_zone: 'utc' });
    const me = await call('GET', '/me', { token: (ok.body as { credential: string }).credential });
    assert.equal(me.body.time_zone, 'UTC');
    // A current name is kept, not turned into the alias Node 20's ICU calls canonical (Asia/Katmandu).
    const nepal = await createAccount({ name: 'Nepal', currency: 'NPR', time_zone: 'Asia/Kathmandu' });
    const there = await call('GET', '/me', { token: (nepal.body as { credential: string }).credential });
    assert.equal(there.body.time_zone, 'Asia/Kathmandu');

    const bad = await createAccount({ name: 'Nowhere', currency: 'USD', time_zone: 'Mars/Olympus' });
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body, {
      error: {
        code: 'invalid_request',
        message: 'time_zone "Mars/Olympus" is not an IANA time zone',
        field: 'time_zone',
      },
    });
  });

  it('refuses an invalid account body with a 400 naming the field', async () => {
    const cases: [unknown, string][] = [
      [{ name: 'Acme', currency: 'eur', time_zone: 'UTC' }, 'currency'],
      [{ name: '', currency: 'EUR', time_zone: 'UTC' }, 'name'],
      [{ name: '   ', currency: 'EUR', time_zone: 'UTC' }, 'name'],
      [{ name: 'Acme', currency: 'EUR' }, 'time_zone'],
      [{ name: 'Acme', currency: 'EUR', time_zone: 'UTC', owner: 'x' }, 'owner'],
    ];
    for (const [body, field] of cases) {
      const res = await createAccount(body);
      assert.equal(res.status, 400, JSON.stringify(body));
      const error = res.body.error as { code: string; message: string; field: string };
      assert.equal(error.code, 'invalid_request');
      assert.equal(error.field, field, JSON.stringify(body));
      assert.match(error.message, new RegExp(`body.*${field}|${field}.*body`));
    }
  });

  it('answers /me without a credential, or with an unknown one, with 401 unauthorized and a JSON error', async () => {
    const missing = await call('GET', '/me');
    assert.equal(missing.status, 401);
    assert.equal(missing.headers.get('www-authenticate'), 'Bearer');
    assert.equal((missing.body.error as { code: string }).code, 'unauthorized');

    const unknown = await call('GET', '/me', { token: 'sbx_not-a-real-credential' });
    assert.equal(unknown.status, 401);
    assert.deepEqual(unknown.body, {
      error: { code: 'unauthorized', message: 'the credential is not valid' },
    });
  });

  it('guards the operator endpoints with the admin token', async () => {
    const body = { name: 'Acme', currency: 'EUR', time_zone: 'UTC' };
    for (const res of [
      await call('POST', '/_sandbox/accounts', { body }),
      await createAccount(body, 'wrong-admin-token-0123456789'),
      await call('GET', '/_sandbox/ledger?account_id=act_x'),
      await call('GET', '/_sandbox/ledger?account_id=act_x', { token: 'wrong' }),
    ]) {
      assert.equal(res.status, 401);
      assert.equal((res.body.error as { code: string }).code, 'unauthorized');
    }
    const { rows } = await sb.pool.query<{ n: number }>(
      "SELECT count(*) AS n FROM accounts WHERE name = 'Acme' AND time_zone = 'UTC'",
    );
    assert.equal(rows[0]?.n, 0);
  });

  it('does not accept an account credential as the admin token', async () => {
    const created = await createAccount({ name: 'Tenant', currency: 'USD', time_zone: 'UTC' });
    const { account_id, credential } = created.body as { account_id: string; credential: string };
    const res = await call('GET', `/_sandbox/ledger?account_id=${account_id}`, { token: credential });
    assert.equal(res.status, 401);
  });

  it('answers an unknown endpoint with a 404 JSON error', async () => {
    const res = await call('GET', '/nope?secret=1');
    assert.equal(res.status, 404);
    assert.deepEqual(res.body, { error: { code: 'not_found', message: 'no such endpoint: GET /nope' } });
  });
});
