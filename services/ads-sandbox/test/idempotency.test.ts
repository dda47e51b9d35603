import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { PoolClient } from '@adsmcp/runtime/db';
import { PlatformHttpError } from '../src/errors.ts';
import { applyMutation, type MutationRequest } from '../src/idempotency.ts';
import { type Sandbox, startSandbox } from './sandbox.ts';

let sb: Sandbox;

before(async () => {
  sb = await startSandbox();
});

after(async () => {
  await sb?.stop();
});

/** A new sandbox account, created the way an operator does. */
async function newAccount(): Promise<string> {
  return (await sb.newAccount({ name: 'Ledgered' })).accountId;
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
  const { rows } = await sb.pool.query<{ n: number }>(
    'SELECT count(*) AS n FROM ledger WHERE account_id = $1',
    [accountId],
  );
  return rows[0]?.n ?? 0;
}

async function accountName(accountId: string): Promise<string | undefined> {
  const { rows } = await sb.pool.query<{ name: string }>('SELECT name FROM accounts WHERE id = $1', [
    accountId,
  ]);
  return rows[0]?.name;
}

describe('Idempotency-Key', () => {
  it('replays the first response for a retry with the same key, applying the mutation once', async () => {
    const accountId = await newAccount();
    const m = renamer();
    const first = await applyMutation(sb.pool, rename(accountId, 'k-1', 'First'), (c) =>
      m.execute(c, accountId, 'First'),
    );
    const retry = await applyMutation(sb.pool, rename(accountId, 'k-1', 'First'), (c) =>
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
    await applyMutation(sb.pool, { ...req, body: { a: 1, b: [1, 2] } }, execute);
    const retry = await applyMutation(sb.pool, { ...req, body: { b: [1, 2], a: 1 } }, execute);
    assert.equal(retry.replayed, true);
    assert.equal(runs, 1);
  });

  it('refuses the same key with a different body with 422, applying nothing', async () => {
    const accountId = await newAccount();
    const m = renamer();
    await applyMutation(sb.pool, rename(accountId, 'k-2', 'Kept'), (c) => m.execute(c, accountId, 'Kept'));

    await assert.rejects(
      applyMutation(sb.pool, rename(accountId, 'k-2', 'Other'), (c) => m.execute(c, accountId, 'Other')),
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
    await applyMutation(sb.pool, rename(accountId, 'k-3', 'Same'), (c) => m.execute(c, accountId, 'Same'));
    await assert.rejects(
      applyMutation(sb.pool, rename(accountId, 'k-3', 'Same', '/elsewhere'), (c) =>
        m.execute(c, accountId, 'Same'),
      ),
      (err: unknown) => err instanceof PlatformHttpError && err.status === 422,
    );
    assert.equal(m.runs, 1);
  });

  it('records mutations with different keys separately', async () => {
    const accountId = await newAccount();
    const m = renamer();
    const a = await applyMutation(sb.pool, rename(accountId, 'k-a', 'A'), (c) =>
      m.execute(c, accountId, 'A'),
    );
    const b = await applyMutation(sb.pool, rename(accountId, 'k-b', 'B'), (c) =>
      m.execute(c, accountId, 'B'),
    );
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
    await applyMutation(sb.pool, rename(one, 'shared', 'One'), (c) => m.execute(c, one, 'One'));
    const other = await applyMutation(sb.pool, rename(two, 'shared', 'Two'), (c) => m.execute(c, two, 'Two'));
    assert.equal(other.replayed, false);
    assert.equal(m.runs, 2);
  });

  it('applies concurrent requests with one key once', async () => {
    const accountId = await newAccount();
    const m = renamer();
    const outcomes = await Promise.all(
      Array.from({ length: 5 }, () =>
        applyMutation(sb.pool, rename(accountId, 'k-race', 'Raced'), async (c) => {
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
      applyMutation(sb.pool, rename(accountId, 'k-fail', 'Broken'), async (c) => {
        await c.query('UPDATE accounts SET name = $2 WHERE id = $1', [accountId, 'Broken']);
        throw new Error('upstream exploded');
      }),
      /upstream exploded/,
    );
    assert.equal(await ledgerCount(accountId), 0);
    assert.equal(await accountName(accountId), 'Ledgered');

    const m = renamer();
    const retry = await applyMutation(sb.pool, rename(accountId, 'k-fail', 'Fixed'), (c) =>
      m.execute(c, accountId, 'Fixed'),
    );
    assert.equal(retry.replayed, false);
    assert.equal(await accountName(accountId), 'Fixed');
  });

  it('applies and records a mutation without a key every time', async () => {
    const accountId = await newAccount();
    const m = renamer();
    await applyMutation(sb.pool, rename(accountId, undefined, 'Again'), (c) =>
      m.execute(c, accountId, 'Again'),
    );
    await applyMutation(sb.pool, rename(accountId, undefined, 'Again'), (c) =>
      m.execute(c, accountId, 'Again'),
    );
    assert.equal(m.runs, 2);
    assert.equal(await ledgerCount(accountId), 2);
  });

  it('refuses a malformed key with 400', async () => {
    const accountId = await newAccount();
    for (const key of ['', 'has space', 'x'.repeat(256), 'ünïcode']) {
      await assert.rejects(
        applyMutation(sb.pool, rename(accountId, key, 'X'), async () => ({ status: 200, body: {} })),
        (err: unknown) =>
          err instanceof PlatformHttpError &&
          err.status === 400 &&
          err.code === 'invalid_request' &&
          err.field === 'Idempotency-Key',
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
      sb.pool,
      { accountId, idempotencyKey: 'k-1', method: 'POST', path: '/ads', body: { name: 'ad' } },
      async () => ({
        status: 201,
        body: { id: 'ad_1' },
      }),
    );
    await applyMutation(
      sb.pool,
      { accountId, idempotencyKey: undefined, method: 'POST', path: '/ads/ad_1/pause', body: undefined },
      async () => ({
        status: 200,
        body: { id: 'ad_1', status: 'paused' },
      }),
    );
    await applyMutation(
      sb.pool,
      { accountId: otherId, idempotencyKey: 'k-1', method: 'POST', path: '/ads', body: {} },
      async () => ({
        status: 201,
        body: {},
      }),
    );

    const entries = await sb.ledger(accountId);
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

  it('filters the ledger by path, keeping the order of recording', async () => {
    const accountId = await newAccount();
    const record = (path: string, n: number) =>
      applyMutation(
        sb.pool,
        { accountId, idempotencyKey: undefined, method: 'POST', path, body: { n } },
        async () => ({
          status: 200,
          body: { n },
        }),
      );
    await record('/ads/ad_1', 1);
    await record('/ads/ad_2', 2);
    await record('/ads/ad_1', 3);
    await record('/ads/ad_1/archive', 4);

    const onAd1 = await sb.ledger(accountId, '/ads/ad_1');
    assert.deepEqual(
      onAd1.map((e) => [e.path, e.request_body]),
      [
        ['/ads/ad_1', { n: 1 }],
        ['/ads/ad_1', { n: 3 }],
      ],
    );
    assert.ok((onAd1[0]?.id ?? 0) < (onAd1[1]?.id ?? 0));
    assert.equal((await sb.ledger(accountId)).length, 4);
    assert.deepEqual(await sb.ledger(accountId, '/nowhere'), []);
  });

  it('requires account_id', async () => {
    const res = await sb.admin<{ error: { code: string; message: string } }>('GET', '/_sandbox/ledger');
    assert.equal(res.status, 400);
    const body = res.body;
    assert.equal(body.error.code, 'invalid_request');
    assert.match(body.error.message, /account_id/);
  });
});
