import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AdJson } from '../src/ads.ts';
import {
  type AdListJson,
  type ErrorJson,
  type Sandbox,
  type SandboxAccount,
  startSandbox,
} from './sandbox.ts';

let sb: Sandbox;

before(async () => {
  sb = await startSandbox();
});

after(async () => {
  await sb?.stop();
});

async function seeded(): Promise<SandboxAccount & { ad: AdJson }> {
  const account = await sb.newAccount();
  const res = await sb.call<AdListJson>('GET', '/ads?limit=1', { token: account.credential });
  const ad = res.body.data[0];
  assert.ok(ad !== undefined);
  return { ...account, ad };
}

async function addFault(fault: Record<string, unknown>): Promise<void> {
  const res = await sb.admin('POST', '/_sandbox/faults', fault);
  assert.equal(res.status, 201, JSON.stringify(res.body));
}

function me(credential: string, signal?: AbortSignal) {
  return sb.call<ErrorJson>('GET', '/me', { token: credential, ...(signal === undefined ? {} : { signal }) });
}

function update(credential: string, adId: string, body: unknown, key?: string) {
  return sb.call<AdJson & ErrorJson>('POST', `/ads/${adId}`, {
    token: credential,
    body,
    ...(key === undefined ? {} : { headers: { 'idempotency-key': key } }),
  });
}

async function getAd(credential: string, adId: string): Promise<AdJson> {
  return (await sb.call<AdJson>('GET', `/ads/${adId}`, { token: credential })).body;
}

describe('status_500 faults', () => {
  it('answers the next count matching requests with 500 internal, then none', async () => {
    const { accountId, credential } = await seeded();
    await addFault({ account_id: accountId, kind: 'status_500', count: 2 });
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await me(credential);
      statuses.push(res.status);
      if (res.status === 500) assert.equal(res.body.error.code, 'internal');
    }
    assert.deepEqual(statuses, [500, 500, 200]);
  });

  it("hits only its account's requests with its method and path prefix", async () => {
    const target = await seeded();
    const bystander = await seeded();
    const ads = await sb.call<AdListJson>('GET', '/ads?limit=2', { token: target.credential });
    const otherAd = ads.body.data[1];
    assert.ok(otherAd !== undefined);
    const adPath = `/ads/${target.ad.id}`;
    await addFault({
      account_id: target.accountId,
      method: 'POST',
      path_prefix: adPath,
      kind: 'status_500',
      count: 1,
    });

    assert.equal((await sb.call('GET', adPath, { token: target.credential })).status, 200, 'another method');
    assert.equal(
      (await update(bystander.credential, target.ad.id, { name: 'Not mine' })).status,
      404,
      'another account',
    );
    assert.equal(
      (await update(target.credential, otherAd.id, { name: 'Other path' })).status,
      200,
      'another path',
    );
    assert.equal((await update(target.credential, target.ad.id, { name: 'Faulted' })).status, 500);
    assert.equal((await update(target.credential, target.ad.id, { name: 'Faulted' })).status, 200, 'count 1');

    await addFault({
      account_id: target.accountId,
      method: 'GET',
      path_prefix: '/ads',
      kind: 'status_500',
      count: 1,
    });
    assert.equal((await me(target.credential)).status, 200);
    assert.equal((await sb.call('GET', '/ads', { token: target.credential })).status, 500);
  });

  it('applies and records nothing for the request it fails', async () => {
    const { accountId, credential, ad } = await seeded();
    await addFault({ account_id: accountId, method: 'POST', kind: 'status_500', count: 1 });
    const res = await update(credential, ad.id, { name: 'Never applied' }, 'key-500');
    assert.equal(res.status, 500);
    assert.deepEqual(await getAd(credential, ad.id), ad);
    assert.deepEqual(await sb.ledger(accountId), []);

    const retry = await update(credential, ad.id, { name: 'Never applied' }, 'key-500');
    assert.equal(retry.status, 200);
    assert.equal(retry.headers.get('idempotent-replayed'), null);
    assert.equal((await sb.ledger(accountId)).length, 1);
  });
});

describe('rate_limit faults', () => {
  it('answers 429 rate_limited with the Retry-After it was given, and 1 s by default', async () => {
    const { accountId, credential } = await seeded();
    await addFault({ account_id: accountId, kind: 'rate_limit', count: 1, retry_after_seconds: 7 });
    await addFault({ account_id: accountId, kind: 'rate_limit', count: 1 });
    const first = await me(credential);
    assert.equal(first.status, 429);
    assert.equal(first.headers.get('retry-after'), '7');
    assert.equal(first.body.error.code, 'rate_limited');
    const second = await me(credential);
    assert.equal(second.status, 429);
    assert.equal(second.headers.get('retry-after'), '1');
    assert.equal((await me(credential)).status, 200);
  });
});

describe('delay faults', () => {
  it('holds the answer for delay_ms before answering normally', async () => {
    const { accountId, credential } = await seeded();
    await addFault({ account_id: accountId, kind: 'delay', count: 1, delay_ms: 300 });
    const started = performance.now();
    const slow = await me(credential);
    const slowMs = performance.now() - started;
    assert.equal(slow.status, 200);
    assert.ok(slowMs >= 290, `answered after ${slowMs} ms`);

    const again = performance.now();
    assert.equal((await me(credential)).status, 200);
    assert.ok(performance.now() - again < 290);
  });

  it('lets a client with a shorter timeout give up', async () => {
    const { accountId, credential } = await seeded();
    await addFault({ account_id: accountId, kind: 'delay', count: 1, delay_ms: 400 });
    await assert.rejects(me(credential, AbortSignal.timeout(100)), { name: 'TimeoutError' });
  });
});

describe('fail_after_commit faults', () => {
  it('commits and records the mutation, answers 500, and a retry with the same key replays the result', async () => {
    const { accountId, credential, ad } = await seeded();
    await addFault({ account_id: accountId, method: 'POST', kind: 'fail_after_commit', count: 1 });

    const lost = await update(credential, ad.id, { name: 'Applied once' }, 'key-lost');
    assert.equal(lost.status, 500);
    assert.equal(lost.body.error.code, 'internal');
    assert.equal(lost.headers.get('idempotent-replayed'), null);

    const applied = await getAd(credential, ad.id);
    assert.equal(applied.name, 'Applied once');
    assert.equal(applied.revision, 2);
    const [entry, ...rest] = await sb.ledger(accountId);
    assert.deepEqual(rest, []);
    assert.equal(entry?.response_status, 200);
    assert.equal(entry?.idempotency_key, 'key-lost');

    const retry = await update(credential, ad.id, { name: 'Applied once' }, 'key-lost');
    assert.equal(retry.status, 200);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(retry.body, entry?.response_body);
    assert.equal((await getAd(credential, ad.id)).revision, 2);
    assert.equal((await sb.ledger(accountId)).length, 1);
  });

  it('applies twice when the client retries without a key', async () => {
    const { accountId, credential, ad } = await seeded();
    await addFault({ account_id: accountId, kind: 'fail_after_commit', count: 1 });
    const body = { creative: { title: 'Blind retry' } };
    assert.equal((await update(credential, ad.id, body)).status, 500);
    assert.equal((await update(credential, ad.id, body)).status, 200);
    const entries = await sb.ledger(accountId);
    assert.deepEqual(
      entries.map((e) => [e.idempotency_key, e.response_status]),
      [
        [null, 200],
        [null, 200],
      ],
    );
  });

  it('leaves an error answer alone: nothing was committed', async () => {
    const { accountId, credential, ad } = await seeded();
    await addFault({ account_id: accountId, kind: 'fail_after_commit', count: 1 });
    const res = await update(credential, ad.id, { name: 'x' });
    assert.equal(res.status, 400);
    assert.equal(res.body.error.field, 'name');
    assert.equal((await update(credential, ad.id, { name: 'Fine name' })).status, 200);
  });
});

describe('ignore_field faults', () => {
  it('drops the named body field and answers success with what was applied', async () => {
    const { accountId, credential, ad } = await seeded();
    await addFault({ account_id: accountId, method: 'POST', kind: 'ignore_field', field: 'name', count: 1 });
    const res = await update(credential, ad.id, { name: 'Never applied', status: 'paused' }, 'key-ignored');
    assert.equal(res.status, 200);
    assert.equal(res.body.name, ad.name, 'the name was dropped');
    assert.equal(res.body.status, 'paused', 'the rest was applied');
    const next = await update(credential, ad.id, { name: 'Applied now' });
    assert.equal(next.body.name, 'Applied now', 'the fault was used up');
  });

  it('needs a field, and only with its kind', async () => {
    const { accountId } = await seeded();
    for (const [body, message] of [
      [{ account_id: accountId, kind: 'ignore_field', count: 1 }, /field is required/],
      [{ account_id: accountId, kind: 'status_500', count: 1, field: 'name' }, /field is allowed only/],
    ] as const) {
      const res = await sb.admin<{ error: { field: string; message: string } }>(
        'POST',
        '/_sandbox/faults',
        body,
      );
      assert.equal(res.status, 400);
      assert.equal(res.body.error.field, 'field');
      assert.match(res.body.error.message, message);
    }
  });
});

describe('/_sandbox/faults', () => {
  it('DELETE clears every queued fault', async () => {
    const { accountId, credential } = await seeded();
    await addFault({ account_id: accountId, kind: 'status_500', count: 5 });
    await addFault({ account_id: accountId, kind: 'rate_limit', count: 5 });
    const res = await sb.admin('DELETE', '/_sandbox/faults');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { cleared: 2 });
    assert.equal((await me(credential)).status, 200);
  });

  it('answers the queued fault as it will apply', async () => {
    const { accountId } = await seeded();
    const res = await sb.admin('POST', '/_sandbox/faults', {
      account_id: accountId,
      path_prefix: '/ads',
      kind: 'delay',
      count: 3,
      delay_ms: 50,
    });
    assert.equal(res.status, 201);
    assert.deepEqual(
      { ...res.body, id: 0 },
      {
        id: 0,
        account_id: accountId,
        method: null,
        path_prefix: '/ads',
        kind: 'delay',
        count: 3,
        delay_ms: 50,
      },
    );
    await sb.admin('DELETE', '/_sandbox/faults');
  });

  it('refuses an invalid fault with 400 naming the field, and an unknown account with 404', async () => {
    const { accountId } = await seeded();
    const cases: [Record<string, unknown>, string][] = [
      [{ account_id: accountId, kind: 'explode', count: 1 }, 'kind'],
      [{ account_id: accountId, kind: 'status_500', count: 0 }, 'count'],
      [{ account_id: accountId, kind: 'status_500' }, 'count'],
      [{ kind: 'status_500', count: 1 }, 'account_id'],
      [{ account_id: accountId, method: 'PUT', kind: 'status_500', count: 1 }, 'method'],
      [{ account_id: accountId, path_prefix: 'ads', kind: 'status_500', count: 1 }, 'path_prefix'],
      [
        { account_id: accountId, kind: 'status_500', count: 1, retry_after_seconds: 3 },
        'retry_after_seconds',
      ],
      [{ account_id: accountId, kind: 'rate_limit', count: 1, delay_ms: 3 }, 'delay_ms'],
      [{ account_id: accountId, kind: 'status_500', count: 1, when: 'now' }, 'when'],
    ];
    for (const [body, field] of cases) {
      const res = await sb.admin<ErrorJson>('POST', '/_sandbox/faults', body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error.code, 'invalid_request');
      assert.equal(res.body.error.field, field, JSON.stringify(body));
    }
    const unknown = await sb.admin<ErrorJson>('POST', '/_sandbox/faults', {
      account_id: 'act_0000000000000000',
      kind: 'status_500',
      count: 1,
    });
    assert.equal(unknown.status, 404);
  });

  it('is guarded by the admin token', async () => {
    const { accountId, credential } = await seeded();
    const body = { account_id: accountId, kind: 'status_500', count: 1 };
    for (const token of [undefined, credential]) {
      const res = await sb.call<ErrorJson>('POST', '/_sandbox/faults', {
        body,
        ...(token === undefined ? {} : { token }),
      });
      assert.equal(res.status, 401);
      assert.equal(res.body.error.code, 'unauthorized');
    }
    assert.equal((await sb.call('DELETE', '/_sandbox/faults', { token: credential })).status, 401);
    assert.equal((await me(credential)).status, 200);
  });
});
