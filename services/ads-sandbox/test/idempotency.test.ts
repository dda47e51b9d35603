import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createPool, migrate, type Pool, type PoolClient } from '@adsmcp/runtime/db';
import { createLogger } from '@adsmcp/runtime/log';
import { stopTestServer, type TestDatabase, testDatabase } from '@adsmcp/testkit/postgres';
import type { FastifyInstance } from 'fastify';
import { PlatformHttpError } from '../src/errors.ts';
import { applyMutation, type MutationRequest } from '../src/idempotency.ts';
import { buildServer, MIGRATIONS_DIR, SCHEMA, SERVICE_NAME } from '../src/server.ts';

const ADMIN_TOKEN = 'test-admin-token-0123456789';

let db: TestDatabase;
let pool: Pool;
let app: FastifyInstance;
let base: string;

before(async () => {
  db = await testDatabase();
  pool = createPool(db.url, SCHEMA);
  await migrate(pool, SCHEMA, MIGRATIONS_DIR);
  app = buildServer({ pool, adminToken: ADMIN_TOKEN, logger: createLogger(SERVICE_NAME, 'silent') });
  await app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});

after(async () => {
  await app?.close();
  await pool?.end();
  await db?.drop();
  await stopTestServer();
});

/** A new sandbox account, created the way an operator does. */
async function newAccount(): Promise<string> {
  const res = await fetch(`${base}/_sandbox/accounts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Ledgered', currency: 'USD', time_zone: 'UTC' }),
  });
  assert.equal(res.status, 201);
  return ((await res.json()) as { account_id: string }).account_id;
}

/** A mutation that renames the account, counting how often it really ran. */
function renamer() {
  let runs = 0;
  return {
    get runs() {
      return runs;
    },
    async execute(client: PoolClient, accountId: string, name: string) {
      runs += 1;
      await client.query('UPDATE accounts SET name = $2 WHERE id = $1', [accountId, name]);
      return { status: 200, body: { id: accountId, name, run: runs } };
    },
  };
}

function rename(
  accountId: string,
  key: string | undefined,
  name: string,
  path = `/accounts/${accountId}`,
): MutationRequest {
  return { accountId, idempotencyKey: key, method: 'POST', path, body: { name } };
}

async function ledgerCount(accountId: string): Promise<number> {
  const { rows } = await pool.query<{ n: number }>('SELECT count(*) AS n FROM ledger WHERE account_id = $1', [
    accountId,
  ]);
  return rows[0]?.n ?? 0;
}

async function accountName(accountId: string): Promise<string | undefined> {
  const { rows } = await pool.query<{ name: string }>('SELECT name FROM accounts WHERE id = $1', [accountId]);
  return rows[0]?.name;
}

describe('Idempotency-Key', () => {
  it('replays the first response for a retry with the same key, applying the mutation once', async () => {
    const accountId = await newAccount();
    const m = renamer();
    const first = await applyMutation(pool, rename(accountId, 'k-1', 'First'), (c) =>
      m.execute(c, accountId, 'First'),
    );
    const retry = await applyMutation(pool, rename(accountId, 'k-1', 'First'), (c) =>
      m.execute(c, accountId, 'First'),
    );

    assert.equal(m.runs, 1);
    assert.deepEqual(first, {
      status: 200,
      body: { id: accountId, name: 'First', run: 1 },
      replayed: false,
      ledgerId: first.ledgerId,
    });
    assert.deepEqual(retry, { ...first, replayed: true });
    assert.equal(await ledgerCount(accountId), 1);
  });

  it('treats bodies that differ only in key order as the same request', async () => {
    const accountId = await newAccount();
    const req = { accountId, idempotencyKey: 'k-order', method: 'POST', path: '/x' };
    let runs = 0;
    const execute = async () => ({ status: 201, body: { run: ++runs } });
    await applyMutation(pool, { ...req, body: { a: 1, b: [1, 2] } }, execute);
    const retry = await applyMutation(pool, { ...req, body: { b: [1, 2], a: 1 } }, execute);
    assert.equal(retry.replayed, true);
    assert.equal(runs, 1);
  });

  it('refuses the same key with a different body with 422, applying nothing', async () => {
    const accountId = await newAccount();
    const m = renamer();
    await applyMutation(pool, rename(accountId, 'k-2', 'Kept'), (c) => m.execute(c, accountId, 'Kept'));

    await assert.rejects(
      applyMutation(pool, rename(accountId, 'k-2', 'Other'), (c) => m.execute(c, accountId, 'Other')),
      (err: unknown) => {
        assert.ok(err instanceof PlatformHttpError);
        assert.equal(err.status, 422);
        assert.equal(err.code, 'idempotency_key_reused');
        assert.match(
          err.message,
          /Idempotency-Key "k-2" was already used for POST \/accounts\/act_\w+ with a different request/,
        );
        return true;
      },
    );
    assert.equal(m.runs, 1);
    assert.equal(await accountName(accountId), 'Kept');
    assert.equal(await ledgerCount(accountId), 1);
  });

  it('refuses the same key on a different path', async () => {
    const accountId = await newAccount();
    const m = renamer();
    await applyMutation(pool, rename(accountId, 'k-3', 'Same'), (c) => m.execute(c, accountId, 'Same'));
    await assert.rejects(
      applyMutation(pool, rename(accountId, 'k-3', 'Same', '/elsewhere'), (c) =>
        m.execute(c, accountId, 'Same'),
      ),
      (err: unknown) => err instanceof PlatformHttpError && err.status === 422,
    );
    assert.equal(m.runs, 1);
  });

  it('records mutations with different keys separately', async () => {
    const accountId = await newAccount();
    const m = renamer();
    const a = await applyMutation(pool, rename(accountId, 'k-a', 'A'), (c) => m.execute(c, accountId, 'A'));
    const b = await applyMutation(pool, rename(accountId, 'k-b', 'B'), (c) => m.execute(c, accountId, 'B'));
    assert.equal(m.runs, 2);
    assert.equal(a.replayed || b.replayed, false);
    assert.notEqual(a.ledgerId, b.ledgerId);
    assert.equal(await ledgerCount(accountId), 2);
    assert.equal(await accountName(accountId), 'B');
  });

  it('scopes keys to the account', async () => {
    const one = await newAccount();
    const two = await newAccount();
    const m = renamer();
    await applyMutation(pool, rename(one, 'shared', 'One'), (c) => m.execute(c, one, 'One'));
    const other = await applyMutation(pool, rename(two, 'shared', 'Two'), (c) => m.execute(c, two, 'Two'));
    assert.equal(other.replayed, false);
    assert.equal(m.runs, 2);
  });

  it('applies concurrent requests with one key once', async () => {
    const accountId = await newAccount();
    const m = renamer();
    const outcomes = await Promise.all(
      Array.from({ length: 5 }, () =>
        applyMutation(pool, rename(accountId, 'k-race', 'Raced'), async (c) => {
          await new Promise((r) => setTimeout(r, 20));
          return m.execute(c, accountId, 'Raced');
        }),
      ),
    );
    assert.equal(m.runs, 1);
    assert.equal(outcomes.filter((o) => !o.replayed).length, 1);
    assert.equal(new Set(outcomes.map((o) => o.ledgerId)).size, 1);
    assert.equal(await ledgerCount(accountId), 1);
  });

  it('records nothing when the mutation fails, so the key can be retried', async () => {
    const accountId = await newAccount();
    await assert.rejects(
      applyMutation(pool, rename(accountId, 'k-fail', 'Broken'), async (c) => {
        await c.query('UPDATE accounts SET name = $2 WHERE id = $1', [accountId, 'Broken']);
        throw new Error('upstream exploded');
      }),
      /upstream exploded/,
    );
    assert.equal(await ledgerCount(accountId), 0);
    assert.equal(await accountName(accountId), 'Ledgered');

    const m = renamer();
    const retry = await applyMutation(pool, rename(accountId, 'k-fail', 'Fixed'), (c) =>
      m.execute(c, accountId, 'Fixed'),
    );
    assert.equal(retry.replayed, false);
    assert.equal(await accountName(accountId), 'Fixed');
  });

  it('applies and records a mutation without a key every time', async () => {
    const accountId = await newAccount();
    const m = renamer();
    await applyMutation(pool, rename(accountId, undefined, 'Again'), (c) => m.execute(c, accountId, 'Again'));
    await applyMutation(pool, rename(accountId, undefined, 'Again'), (c) => m.execute(c, accountId, 'Again'));
    assert.equal(m.runs, 2);
    assert.equal(await ledgerCount(accountId), 2);
  });

  it('refuses a malformed key with 400', async () => {
    const accountId = await newAccount();
    for (const key of ['', 'has space', 'x'.repeat(256), 'ünïcode']) {
      await assert.rejects(
        applyMutation(pool, rename(accountId, key, 'X'), async () => ({ status: 200, body: {} })),
        (err: unknown) =>
          err instanceof PlatformHttpError && err.status === 400 && err.code === 'invalid_idempotency_key',
      );
    }
    assert.equal(await ledgerCount(accountId), 0);
  });
});

describe('GET /_sandbox/ledger', () => {
  it("lists an account's recorded mutations, oldest first, and only that account's", async () => {
    const accountId = await newAccount();
    const otherId = await newAccount();
    await applyMutation(
      pool,
      { accountId, idempotencyKey: 'k-1', method: 'POST', path: '/ads', body: { name: 'ad' } },
      async () => ({
        status: 201,
        body: { id: 'ad_1' },
      }),
    );
    await applyMutation(
      pool,
      { accountId, idempotencyKey: undefined, method: 'POST', path: '/ads/ad_1/pause', body: undefined },
      async () => ({
        status: 200,
        body: { id: 'ad_1', status: 'paused' },
      }),
    );
    await applyMutation(
      pool,
      { accountId: otherId, idempotencyKey: 'k-1', method: 'POST', path: '/ads', body: {} },
      async () => ({
        status: 201,
        body: {},
      }),
    );

    const res = await fetch(`${base}/_sandbox/ledger?account_id=${accountId}`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    assert.equal(res.status, 200);
    const { entries } = (await res.json()) as { entries: Record<string, unknown>[] };
    assert.equal(entries.length, 2);
    const [first, second] = entries;
    assert.deepEqual(
      { ...first, id: 0, created_at: '' },
      {
        id: 0,
        account_id: accountId,
        method: 'POST',
        path: '/ads',
        idempotency_key: 'k-1',
        request_body: { name: 'ad' },
        response_status: 201,
        response_body: { id: 'ad_1' },
        created_at: '',
      },
    );
    assert.equal(typeof first?.id, 'number');
    assert.ok(!Number.isNaN(Date.parse(String(first?.created_at))));
    assert.equal(second?.idempotency_key, null);
    assert.equal(second?.request_body, null);
    assert.ok(Number(second?.id) > Number(first?.id));
  });

  it('requires account_id', async () => {
    const res = await fetch(`${base}/_sandbox/ledger`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    assert.equal(res.status, 400);
    const body = (await res.json()) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'invalid_request');
    assert.match(body.error.message, /account_id/);
  });
});
