/** The changes service over real gRPC and PostgreSQL: the lifecycle rules a change obeys. */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ChangeEventKindSchema, ChangeStatus, ChangesService } from '@adsmcp/proto/changes/v1/changes_pb';
import { migrateBus } from '@adsmcp/runtime/bus/outbox';
import type { Pool } from '@adsmcp/runtime/db';
import { enumWord } from '@adsmcp/runtime/enum-words';
import type { Principal } from '@adsmcp/runtime/principal';
import { as, type ServiceUnderTest, startServiceUnderTest } from '@adsmcp/testkit/service-harness';
import { type Client, Code, ConnectError } from '@connectrpc/connect';
import { digestOf } from '../src/domain/change.ts';
import { buildServer, SERVICE_NAME } from '../src/server.ts';
import { insertChange } from '../src/store/change-store.ts';
import { deliverApplyLast } from './apply-delivery.ts';
import { statusOf } from './changes-under-test.ts';
import { type LivePlatform, startLivePlatform } from './live-platform.ts';
import { personIn } from './people.ts';

let svc: ServiceUnderTest<typeof ChangesService>;
let pool: Pool;
let client: Client<typeof ChangesService>;
let platform: LivePlatform;
let account: string;
/** The ad most changes are about (never edited), and its state as the platform shows it. */
let steady: { id: string; revision: number };
/** Ads the tests edit on the platform, one each. */
let movable: { id: string; revision: number }[];

const workspace = randomUUID();
const person = personIn(workspace);
const agent = person();
const reviewer = person({ via: 'dashboard', credentialId: 'dashboard:x' });

async function code(p: Promise<unknown>): Promise<{ code: Code; message: string } | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    const e = ConnectError.from(err);
    return { code: e.code, message: e.rawMessage };
  }
}

const body = { name: 'New name', status: 'paused' };
async function prepare(p: Principal = agent, ad: { id: string; revision: number } = steady) {
  const res = await client.prepareChange(
    {
      accountId: account,
      tool: 'ads_update_ad',
      objectType: 'ad',
      effect: 'update',
      operation: { method: 'POST', path: `/ads/${ad.id}`, bodyJson: JSON.stringify(body) },
      targetPath: `/ads/${ad.id}`,
    },
    as(p),
  );
  return res.change as NonNullable<typeof res.change>;
}

before(async () => {
  platform = await startLivePlatform(workspace);
  account = platform.accountId;
  const ads = await platform.ads();
  assert.ok(ads.length >= 3, 'the sandbox account has ads');
  [steady, ...movable] = ads as [(typeof ads)[number], ...typeof ads];
  svc = await startServiceUnderTest({
    service: ChangesService,
    name: SERVICE_NAME,
    migrations: fileURLToPath(new URL('../migrations', import.meta.url)),
    prepare: (p) => migrateBus(p, SERVICE_NAME),
    build: (deps) => buildServer({ ...deps, upstream: platform.upstream }),
  });
  pool = svc.pool;
  client = svc.client;
});

after(async () => {
  await platform?.stop();
  await svc?.stop();
});

describe('prepare', () => {
  test('records the exact operation with its digest, as prepared, and queues nothing', async () => {
    const c = await prepare();
    assert.equal(statusOf(c), 'prepared');
    assert.equal(c.operation?.bodyJson, JSON.stringify(body));
    assert.equal(
      c.digest,
      digestOf({ method: 'POST', path: `/ads/${steady.id}`, bodyJson: JSON.stringify(body) }),
    );
    assert.match(c.preparedBy, /via mcp/);
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM bus_outbox');
    assert.deepEqual(rows, [{ n: 0 }]);
  });

  test('plans against the live object: the object as it was and the summary come from the platform', async () => {
    const c = await prepare();
    const live = (await platform.ads()).find((a) => a.id === steady.id);
    const before = JSON.parse(c.targetBeforeJson) as { id: string; name: string; revision: number };
    assert.equal(before.id, steady.id);
    assert.equal(before.name, live?.name);
    assert.equal(before.revision, live?.revision);
    assert.match(
      c.summary,
      new RegExp(`^Update ad "${live?.name}" \\(${steady.id}\\) on .*: name "${live?.name}" → "New name"`),
    );
  });

  test('refuses a viewer, a path that is not a platform path, a body that is not an object, an unknown object and an ad that is not there', async () => {
    const request = (over: Record<string, unknown> = {}, op: Record<string, unknown> = {}) =>
      client.prepareChange(
        {
          accountId: account,
          tool: 'ads_update_ad',
          objectType: 'ad',
          effect: 'update',
          operation: { method: 'POST', path: `/ads/${steady.id}`, bodyJson: '{"name":"New"}', ...op },
          targetPath: `/ads/${steady.id}`,
          ...over,
        },
        as(agent),
      );
    const viewer = await code(prepare(person({ role: 'viewer' })));
    assert.equal(viewer?.code, Code.PermissionDenied);
    const bad = await code(request({}, { path: 'https://evil.example/x' }));
    assert.equal(bad?.code, Code.InvalidArgument);
    assert.match(bad?.message ?? '', /operation.path/);
    const notObject = await code(request({}, { bodyJson: '[1]' }));
    assert.match(notObject?.message ?? '', /body_json must be a JSON object/);
    const unknownObject = await code(request({ objectType: 'planet' }));
    assert.match(unknownObject?.message ?? '', /object_type must be one of ad/);
    const unknownEffect = await code(request({ effect: 'explode' }));
    assert.match(unknownEffect?.message ?? '', /effect for ad must be one of update, archive/);
    for (const e of [bad, notObject, unknownObject, unknownEffect])
      assert.equal(e?.code, Code.InvalidArgument);
    const missing = await code(request({ targetPath: '/ads/ad_0000000000000000' }));
    assert.equal(missing?.code, Code.NotFound);
    assert.match(missing?.message ?? '', /no ad ad_0000000000000000 in ad account/);
  });
});

describe('approval belongs to people', () => {
  test('an MCP client cannot approve or reject, whatever its role', async () => {
    const c = await prepare();
    for (const p of [agent, person({ role: 'admin' })]) {
      const denied = await code(client.approveChange({ changeId: c.changeId, digest: c.digest }, as(p)));
      assert.equal(denied?.code, Code.PermissionDenied);
      assert.match(denied?.message ?? '', /approved or rejected by a person in the dashboard/);
      assert.equal(
        (await code(client.rejectChange({ changeId: c.changeId, reason: 'no' }, as(p))))?.code,
        Code.PermissionDenied,
      );
    }
    const { change } = await client.getChange({ changeId: c.changeId }, as(agent));
    assert.equal(statusOf(change), 'prepared');
  });

  test('a person approves exactly the digest they reviewed, once', async () => {
    const c = await prepare();
    const wrong = await code(
      client.approveChange({ changeId: c.changeId, digest: 'a'.repeat(64) }, as(reviewer)),
    );
    assert.equal(wrong?.code, Code.FailedPrecondition);
    const { change } = await client.approveChange({ changeId: c.changeId, digest: c.digest }, as(reviewer));
    assert.equal(statusOf(change), 'approved');
    assert.match(change?.approvedBy ?? '', /via dashboard/);
    const again = await code(client.approveChange({ changeId: c.changeId, digest: c.digest }, as(reviewer)));
    assert.equal(again?.code, Code.FailedPrecondition);
  });

  test('an approval is withdrawn by rejecting the change before anyone asks to apply it; then it is never applied', async () => {
    const c = await prepare();
    await client.approveChange({ changeId: c.changeId, digest: c.digest }, as(reviewer));
    const { change } = await client.rejectChange(
      { changeId: c.changeId, reason: 'wrong ad after all' },
      as(reviewer),
    );
    assert.equal(statusOf(change), 'rejected');
    assert.equal(change?.rejectReason, 'wrong ad after all');
    assert.match(change?.approvedBy ?? '', /via dashboard/);
    const apply = await code(client.applyChange({ changeId: c.changeId, digest: '', waitMs: 0 }, as(agent)));
    assert.equal(apply?.code, Code.FailedPrecondition);
    assert.match(apply?.message ?? '', /rejected/);
    const { rows } = await pool.query(
      `SELECT count(*)::int AS n FROM bus_outbox WHERE payload->>'change_id' = $1`,
      [c.changeId],
    );
    assert.deepEqual(rows, [{ n: 0 }]);
    // Once asked to apply, it can no longer be rejected.
    const next = await prepare();
    await client.approveChange({ changeId: next.changeId, digest: next.digest }, as(reviewer));
    await client.applyChange({ changeId: next.changeId, digest: '', waitMs: 0 }, as(agent));
    const late = await code(
      client.rejectChange({ changeId: next.changeId, reason: 'too late' }, as(reviewer)),
    );
    assert.equal(late?.code, Code.FailedPrecondition);
    assert.match(
      late?.message ?? '',
      /the change is applying; only a prepared change, or an approved one not yet being applied/,
    );
  });

  test("a change's history names each step by its kind, newest first, as its event key does", async () => {
    const c = await prepare();
    await client.approveChange({ changeId: c.changeId, digest: c.digest }, as(reviewer));
    await client.rejectChange({ changeId: c.changeId, reason: 'not this week' }, as(reviewer));
    const { events } = await client.listChangeEvents(
      { accountId: account, userId: '', limit: 500, beforeAt: '', beforeKey: '' },
      as(reviewer),
    );
    const history = events
      .filter((e) => e.change?.changeId === c.changeId)
      .map((e) => ({ kind: enumWord(ChangeEventKindSchema, e.eventKind), key: e.key }));
    assert.deepEqual(
      history,
      ['rejected', 'approved', 'prepared'].map((kind) => ({ kind, key: `c:${c.changeId}:${kind}` })),
    );
  });

  test('a viewer signed in to the dashboard cannot approve', async () => {
    const c = await prepare();
    const denied = await code(
      client.approveChange(
        { changeId: c.changeId, digest: c.digest },
        as(person({ via: 'dashboard', role: 'viewer' })),
      ),
    );
    assert.equal(denied?.code, Code.PermissionDenied);
  });
});

describe('approval re-reads the live object', () => {
  test('a change whose object moved since it was prepared is refused with the reason, and says so when read with check_live', async () => {
    const ad = movable.shift() as { id: string; revision: number };
    const c = await prepare(agent, ad);
    const fresh = await client.getChange({ changeId: c.changeId, checkLive: true }, as(reviewer));
    assert.equal(fresh.live?.stale, false);
    assert.equal(fresh.live?.unavailable, false);

    await platform.editAd(ad.id, 'Edited on the platform');
    const stale = await client.getChange({ changeId: c.changeId, checkLive: true }, as(reviewer));
    assert.equal(stale.live?.stale, true);
    assert.match(
      stale.live?.reason ?? '',
      new RegExp(
        `changed since this change was prepared \\(revision ${ad.revision}, now ${ad.revision + 1}\\)`,
      ),
    );
    const refused = await code(
      client.approveChange({ changeId: c.changeId, digest: c.digest }, as(reviewer)),
    );
    assert.equal(refused?.code, Code.FailedPrecondition);
    assert.match(refused?.message ?? '', /^the change cannot be approved: the object changed since/);
    const { change } = await client.getChange({ changeId: c.changeId }, as(agent));
    assert.equal(statusOf(change), 'prepared');
  });

  test('a change whose object is gone from the platform cannot be approved', async () => {
    // Prepared while the ad was there (the platform has since deleted it): recorded as prepare records it.
    const gone = '/ads/ad_0000000000000000';
    const op = { method: 'POST', path: gone, bodyJson: JSON.stringify(body) };
    const row = await insertChange(pool, {
      change_id: randomUUID(),
      workspace_id: workspace,
      account_id: account,
      tool: 'ads_update_ad',
      summary: 'Update ad ad_0000000000000000: name → New name',
      method: op.method,
      path: op.path,
      body_json: op.bodyJson,
      digest: digestOf(op),
      target_path: gone,
      target_before_json: JSON.stringify({ id: 'ad_0000000000000000', name: 'Old', revision: 1 }),
      prepared_by: 'user:x via mcp (cred)',
      reviewed_result_json: JSON.stringify(body),
    });
    const c = { changeId: row.change_id, digest: row.digest };
    const read = await client.getChange({ changeId: c.changeId, checkLive: true }, as(reviewer));
    assert.equal(read.live?.stale, true);
    assert.match(read.live?.reason ?? '', /no longer on the ad platform/);
    const refused = await code(
      client.approveChange({ changeId: c.changeId, digest: c.digest }, as(reviewer)),
    );
    assert.equal(refused?.code, Code.FailedPrecondition);
  });

  test('while the object cannot be re-read, approval is refused as unavailable, and goes through once it can', async () => {
    const ad = movable.shift() as { id: string; revision: number };
    const c = await prepare(agent, ad);
    await platform.failReads(`/ads/${ad.id}`);
    try {
      const read = await client.getChange({ changeId: c.changeId, checkLive: true }, as(reviewer));
      assert.equal(read.live?.stale, false);
      assert.equal(read.live?.unavailable, true);
      assert.match(read.live?.reason ?? '', /could not be re-read on the ad platform just now/);
      const refused = await code(
        client.approveChange({ changeId: c.changeId, digest: c.digest }, as(reviewer)),
      );
      assert.equal(refused?.code, Code.Unavailable);
      assert.match(refused?.message ?? '', /^the change cannot be approved yet: /);
    } finally {
      await platform.clearFaults();
    }
    const { change } = await client.approveChange({ changeId: c.changeId, digest: c.digest }, as(reviewer));
    assert.equal(statusOf(change), 'approved');
  });

  test('the live object is re-read only when asked, and only for a prepared change', async () => {
    const c = await prepare();
    assert.equal((await client.getChange({ changeId: c.changeId }, as(agent))).live, undefined);
    await client.rejectChange({ changeId: c.changeId, reason: 'not now' }, as(reviewer));
    const decided = await client.getChange({ changeId: c.changeId, checkLive: true }, as(agent));
    assert.equal(decided.live, undefined);
  });
});

describe('apply', () => {
  test('refuses a change that is not approved, and one that was rejected', async () => {
    const c = await prepare();
    const early = await code(client.applyChange({ changeId: c.changeId, digest: '', waitMs: 0 }, as(agent)));
    assert.equal(early?.code, Code.FailedPrecondition);
    assert.match(early?.message ?? '', /not approved yet/);
    await client.rejectChange({ changeId: c.changeId, reason: 'wrong ad' }, as(reviewer));
    const rejected = await code(
      client.applyChange({ changeId: c.changeId, digest: '', waitMs: 0 }, as(agent)),
    );
    assert.match(rejected?.message ?? '', /rejected/);
  });

  test('moves an approved change to applying and queues exactly one apply message in the same commit', async () => {
    const c = await prepare();
    await client.approveChange({ changeId: c.changeId, digest: c.digest }, as(reviewer));
    const wrongDigest = await code(
      client.applyChange({ changeId: c.changeId, digest: 'b'.repeat(64), waitMs: 0 }, as(agent)),
    );
    assert.equal(wrongDigest?.code, Code.FailedPrecondition);
    const { change } = await client.applyChange(
      { changeId: c.changeId, digest: c.digest, waitMs: 0 },
      as(agent),
    );
    assert.equal(statusOf(change), 'applying');
    // Asking again while it applies returns it as it stands, and queues nothing more.
    const again = await client.applyChange({ changeId: c.changeId, digest: '', waitMs: 0 }, as(agent));
    assert.equal(statusOf(again.change), 'applying');
    const { rows } = await pool.query(
      `SELECT topic, payload FROM bus_outbox WHERE payload->>'change_id' = $1`,
      [c.changeId],
    );
    assert.deepEqual(rows, [
      { topic: 'changes.apply', payload: { change_id: c.changeId, workspace_id: workspace } },
    ]);
  });
});

describe('an apply whose outcome is unknown', () => {
  const MAX_ATTEMPTS = 3;
  /** Runs the apply worker on the change as the bus's last delivery of its message would. */
  function lastDelivery(changeId: string): Promise<void> {
    // As the bus does: a last attempt that throws runs the give-up path.
    return deliverApplyLast({ pool, upstream: platform.upstream }, workspace, changeId, MAX_ATTEMPTS);
  }

  /** A change to `ad`, approved and sent while the platform answers its update with 500 (`fault`). */
  async function sentWithoutAnswer(
    ad: { id: string; revision: number },
    fault: 'status_500' | 'fail_after_commit',
  ) {
    const c = await prepare(agent, ad);
    await client.approveChange({ changeId: c.changeId, digest: c.digest }, as(reviewer));
    await client.applyChange({ changeId: c.changeId, digest: c.digest, waitMs: 0 }, as(agent));
    // The upstream-proxy sends it three times, and each attempt is answered with 500.
    await platform.failWrites(`/ads/${ad.id}`, fault, 3);
    await lastDelivery(c.changeId);
    const { change } = await client.getChange({ changeId: c.changeId }, as(agent));
    assert.equal(statusOf(change), 'failed');
    assert.match(change?.error ?? '', /may or may not have been applied: apply it again/);
    return c;
  }

  /** Applies the change again and runs the worker on it; the change as it ends. */
  async function applyAgain(changeId: string) {
    const { change } = await client.applyChange({ changeId, digest: '', waitMs: 0 }, as(agent));
    assert.equal(statusOf(change), 'applying');
    assert.match(change?.applyRetriedBy ?? '', /via mcp/);
    await lastDelivery(changeId);
    return (await client.getChange({ changeId }, as(agent))).change;
  }

  test('a change the platform applied but never confirmed is applied again with its key: replayed, not repeated', async () => {
    const ad = movable.shift() as { id: string; revision: number };
    const c = await sentWithoutAnswer(ad, 'fail_after_commit');
    const done = await applyAgain(c.changeId);
    assert.equal(statusOf(done), 'applied', done?.error);
    assert.deepEqual(done?.appliedDifferences, []);
    const ledger = await platform.ledger(`/ads/${ad.id}`);
    assert.deepEqual(
      ledger.map((e) => e.idempotency_key),
      [`change-${c.changeId}`],
    );
  });

  test('a change the platform never received is applied once when applied again', async () => {
    const ad = movable.shift() as { id: string; revision: number };
    const c = await sentWithoutAnswer(ad, 'status_500');
    assert.deepEqual(await platform.ledger(`/ads/${ad.id}`), []);
    const done = await applyAgain(c.changeId);
    assert.equal(statusOf(done), 'applied', done?.error);
    assert.equal((await platform.ledger(`/ads/${ad.id}`)).length, 1);
    assert.equal((await platform.ads()).find((a) => a.id === ad.id)?.name, body.name);
  });

  test('applied again after something else changed its object, it is not sent, and stays unknown', async () => {
    const ad = movable.shift() as { id: string; revision: number };
    const c = await sentWithoutAnswer(ad, 'status_500');
    await platform.editAd(ad.id, 'Edited on the platform meanwhile');
    const done = await applyAgain(c.changeId);
    assert.equal(statusOf(done), 'failed');
    assert.match(
      done?.error ?? '',
      /the object changed since this change was prepared, and whether its earlier/,
    );
    assert.deepEqual(await platform.ledger(`/ads/${ad.id}`), []);
    assert.equal(
      (await platform.ads()).find((a) => a.id === ad.id)?.name,
      'Edited on the platform meanwhile',
    );
  });

  test('a day after it was first sent, it is no longer sent again: the platform may have forgotten its key', async () => {
    const ad = movable.shift() as { id: string; revision: number };
    const c = await sentWithoutAnswer(ad, 'status_500');
    await pool.query(`UPDATE changes SET sent_at = now() - interval '25 hours' WHERE change_id = $1`, [
      c.changeId,
    ]);
    const refused = await code(
      client.applyChange({ changeId: c.changeId, digest: '', waitMs: 0 }, as(agent)),
    );
    assert.equal(refused?.code, Code.FailedPrecondition);
    assert.match(
      refused?.message ?? '',
      /first sent more than 24 hours ago, after which the ad platform may no longer recognise its idempotency key; it is not sent again/,
    );
    const { change } = await client.getChange({ changeId: c.changeId }, as(agent));
    assert.equal(statusOf(change), 'failed');
    assert.equal(change?.applyRetriedAt, undefined);
    assert.deepEqual(await platform.ledger(`/ads/${ad.id}`), []);
  });

  test('a change that failed with a known outcome is still refused', async () => {
    const ad = movable.shift() as { id: string; revision: number };
    const c = await prepare(agent, ad);
    await client.approveChange({ changeId: c.changeId, digest: c.digest }, as(reviewer));
    await client.applyChange({ changeId: c.changeId, digest: c.digest, waitMs: 0 }, as(agent));
    await platform.editAd(ad.id, 'Edited before it was sent');
    await lastDelivery(c.changeId);
    const refused = await code(
      client.applyChange({ changeId: c.changeId, digest: '', waitMs: 0 }, as(agent)),
    );
    assert.equal(refused?.code, Code.FailedPrecondition);
    assert.match(refused?.message ?? '', /failed when it was applied/);
  });
});

describe('workspaces', () => {
  test("another workspace's change is not found, for reading, deciding or applying", async () => {
    const c = await prepare();
    const stranger = person({ workspaceId: randomUUID() });
    const calls = [
      () => client.getChange({ changeId: c.changeId }, as(stranger)),
      () =>
        client.approveChange(
          { changeId: c.changeId, digest: c.digest },
          as({ ...stranger, via: 'dashboard' }),
        ),
      () => client.applyChange({ changeId: c.changeId, digest: '', waitMs: 0 }, as(stranger)),
    ];
    for (const call of calls) {
      assert.equal((await code(call()))?.code, Code.NotFound);
    }
    const { changes, total } = await client.listChanges(
      { accountId: '', limit: 100, offset: 0 },
      as(stranger),
    );
    assert.equal(total, 0);
    assert.deepEqual(changes, []);
  });

  test('lists newest first with status filter and offset pagination', async () => {
    const { total } = await client.listChanges({ accountId: '', limit: 100, offset: 0 }, as(agent));
    const page = await client.listChanges({ accountId: '', limit: 2, offset: 0 }, as(agent));
    assert.equal(page.changes.length, 2);
    assert.equal(page.nextOffset, 2);
    assert.ok((page.changes[0]?.preparedAt ?? '') >= (page.changes[1]?.preparedAt ?? ''));
    const prepared = await client.listChanges(
      { state: ChangeStatus.PREPARED, accountId: '', limit: 100, offset: 0 },
      as(agent),
    );
    assert.ok(prepared.changes.every((c) => statusOf(c) === 'prepared'));
    assert.ok(total > prepared.total);
  });
});

describe('planning a change without recording it', () => {
  const updateRequest = (ad: { id: string } = steady) => ({
    accountId: account,
    tool: 'ads_update_ad',
    objectType: 'ad',
    effect: 'update',
    operation: { method: 'POST', path: `/ads/${ad.id}`, bodyJson: JSON.stringify(body) },
    targetPath: `/ads/${ad.id}`,
  });
  const recorded = async () =>
    (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM changes')).rows[0]?.n;

  test('PlanChange gives the summary and digest PrepareChange records, and records nothing', async () => {
    const before = await recorded();
    const plan = await client.planChange({ change: updateRequest() }, as(agent));
    assert.equal(await recorded(), before);
    assert.equal(plan.verified, true);
    const c = await prepare();
    assert.equal(plan.summary, c.summary);
    assert.equal(plan.digest, c.digest);
    assert.deepEqual(
      { method: plan.operation?.method, path: plan.operation?.path, bodyJson: plan.operation?.bodyJson },
      { method: c.operation?.method, path: c.operation?.path, bodyJson: c.operation?.bodyJson },
    );
  });

  test('PlanChange against the object the caller gives does not read it live, and says so', async () => {
    const live = (await platform.ads()).find((a) => a.id === steady.id);
    const current = { ...live, ...body };
    const err = await code(
      client.planChange({ change: updateRequest(), currentJson: JSON.stringify(current) }, as(agent)),
    );
    assert.equal(err?.code, Code.FailedPrecondition);
    assert.match(err?.message ?? '', /^nothing would change/);
    const plan = await client.planChange(
      { change: updateRequest(), currentJson: JSON.stringify({ ...current, name: 'Believed name' }) },
      as(agent),
    );
    assert.equal(plan.verified, false);
    assert.match(plan.summary, /name "Believed name" → "New name"/);
  });

  test('PlanChange refuses with the message PrepareChange gives', async () => {
    const refused = { ...updateRequest(), operation: { ...updateRequest().operation, bodyJson: '{}' } };
    const planned = await code(client.planChange({ change: refused }, as(agent)));
    const prepared = await code(client.prepareChange(refused, as(agent)));
    assert.ok(planned !== undefined);
    assert.deepEqual(planned, prepared);
  });
});
