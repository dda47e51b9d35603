/**
 * A person settles a change whose apply outcome is unknown (ResolveChange), over real gRPC,
 * PostgreSQL, the upstream-proxy and the ads sandbox: sent again with the same key, found
 * applied, or found not applied; and who may, and which changes.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ChangeEventKindSchema, ChangesService } from '@adsmcp/proto/changes/v1/changes_pb';
import { migrateBus } from '@adsmcp/runtime/bus/outbox';
import type { Pool } from '@adsmcp/runtime/db';
import { enumWord } from '@adsmcp/runtime/enum-words';
import { as, type ServiceUnderTest, startServiceUnderTest } from '@adsmcp/testkit/service-harness';
import { type Client, Code, ConnectError } from '@connectrpc/connect';
import { buildServer, SERVICE_NAME } from '../src/server.ts';
import { deliverApply, deliverApplyLast } from './apply-delivery.ts';
import { resolutionOf, statusOf } from './changes-under-test.ts';
import { type LivePlatform, startLivePlatform } from './live-platform.ts';
import { personIn } from './people.ts';

let svc: ServiceUnderTest<typeof ChangesService>;
let pool: Pool;
let client: Client<typeof ChangesService>;
let platform: LivePlatform;
let ads: { id: string; name: string; revision: number }[];

const workspace = randomUUID();
const person = personIn(workspace);
const agent = person({ role: 'admin' });
const reviewer = person({ via: 'dashboard', credentialId: 'dashboard:x' });
const operator = person({ via: 'operator', credentialId: 'operator:ops@example.test', role: 'admin' });

async function refusal(p: Promise<unknown>): Promise<{ code: Code; message: string }> {
  try {
    await p;
  } catch (err) {
    const e = ConnectError.from(err);
    return { code: e.code, message: e.rawMessage };
  }
  assert.fail('the call was not refused');
}

before(async () => {
  platform = await startLivePlatform(workspace);
  ads = await platform.ads();
  assert.ok(ads.length >= 6, 'the sandbox account has an ad for each case');
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

/** Runs the apply worker on the change as the bus's last delivery of its message would. */
function lastDelivery(changeId: string): Promise<void> {
  return deliverApplyLast({ pool, upstream: platform.upstream }, workspace, changeId);
}

const body = { name: 'Settled by a person' };

/** A change to the next unused ad, approved and sent while the platform fails its update (`fault`). */
async function sentWithoutAnswer(fault: 'status_500' | 'fail_after_commit' = 'status_500') {
  const ad = ads.pop() as { id: string; revision: number };
  const path = `/ads/${ad.id}`;
  const { change: c } = await client.prepareChange(
    {
      accountId: platform.accountId,
      tool: 'ads_update_ad',
      objectType: 'ad',
      effect: 'update',
      operation: { method: 'POST', path, bodyJson: JSON.stringify(body) },
      targetPath: path,
    },
    as(agent),
  );
  assert.ok(c);
  await client.approveChange({ changeId: c.changeId, digest: c.digest }, as(reviewer));
  await client.applyChange({ changeId: c.changeId, digest: c.digest, waitMs: 0 }, as(agent));
  // The upstream-proxy sends it three times, and each attempt fails.
  await platform.failWrites(path, fault, 3);
  await lastDelivery(c.changeId);
  const { change } = await client.getChange({ changeId: c.changeId }, as(agent));
  assert.equal(statusOf(change), 'failed');
  assert.equal(change?.outcomeUnknown, true);
  return { changeId: c.changeId, path };
}

/** The change's events as ListChangeEvents gives them, each with its kind's word. */
async function eventsOf(changeId: string) {
  const { events } = await client.listChangeEvents(
    { accountId: '', userId: '', limit: 500, beforeAt: '', beforeKey: '' },
    as(reviewer),
  );
  return events
    .filter((e) => e.change?.changeId === changeId)
    .map((e) => ({ ...e, kind: enumWord(ChangeEventKindSchema, e.eventKind) }));
}

describe('settling an unknown outcome', () => {
  test('listed among the outcome-unknown changes, and its page can read the object as the platform shows it', async () => {
    const { changeId } = await sentWithoutAnswer('fail_after_commit');
    const { changes } = await client.listChanges(
      { accountId: '', limit: 100, offset: 0, outcomeUnknown: true },
      as(reviewer),
    );
    assert.ok(changes.some((c) => c.changeId === changeId));
    assert.ok(changes.every((c) => c.outcomeUnknown && statusOf(c) === 'failed'));
    const { live } = await client.getChange({ changeId, checkLive: true }, as(reviewer));
    // The platform applied it before failing its answer: the live object shows what was reviewed.
    assert.equal(live?.showsReviewed, true, JSON.stringify(live));
    assert.equal((JSON.parse(live?.objectJson ?? '{}') as { name?: string }).name, body.name);
    assert.deepEqual(live?.differences, []);
  });

  test('send_again sends it with the same key; the worker applies it once', async () => {
    const { changeId, path } = await sentWithoutAnswer();
    const { live } = await client.getChange({ changeId, checkLive: true }, as(reviewer));
    assert.equal(live?.showsReviewed, false);
    assert.match(live?.differences.join('\n') ?? '', /^name: reviewed "Settled by a person"/);
    const { change } = await client.resolveChange(
      { changeId, resolution: 'send_again', note: 'the platform shows the old name' },
      as(reviewer),
    );
    assert.equal(statusOf(change), 'applying');
    assert.match(change?.applyRetriedBy ?? '', new RegExp(`^user:${reviewer.userId} via dashboard`));
    assert.equal(resolutionOf(change), 'send_again');
    assert.equal(change?.resolutionNote, 'the platform shows the old name');
    const { rows } = await pool.query(
      `SELECT count(*)::int AS n FROM bus_outbox WHERE payload->>'change_id' = $1 AND topic = 'changes.apply'`,
      [changeId],
    );
    assert.equal(rows[0]?.n, 2, 'a second apply message was queued with the move');
    await lastDelivery(changeId);
    const done = (await client.getChange({ changeId }, as(reviewer))).change;
    assert.equal(statusOf(done), 'applied', done?.error);
    assert.equal(done?.outcomeUnknown, false);
    assert.deepEqual(
      (await platform.ledger(path)).map((e) => e.idempotency_key),
      [`change-${changeId}`],
    );
    const kinds = (await eventsOf(changeId)).map((e) => e.kind);
    assert.ok(kinds.includes('apply_retried') && kinds.includes('applied'), kinds.join());
    assert.ok(!kinds.includes('outcome_settled'), 'sending again is its request to apply again');
  });

  test('applied: it becomes applied, with who, when and the note, and an event says a person settled it', async () => {
    const { changeId, path } = await sentWithoutAnswer('fail_after_commit');
    const before = Date.now();
    const { change } = await client.resolveChange(
      { changeId, resolution: 'applied', note: '  checked in the platform console  ' },
      as(operator),
    );
    assert.equal(statusOf(change), 'applied');
    assert.equal(resolutionOf(change), 'applied');
    assert.match(change?.resolvedBy ?? '', new RegExp(`^user:${operator.userId} via operator`));
    assert.ok(Date.parse(change?.resolvedAt ?? '') >= before - 1000);
    assert.equal(change?.resolutionNote, 'checked in the platform console');
    assert.equal(change?.error, undefined);
    const read = (await client.getChange({ changeId }, as(agent))).change;
    assert.equal(statusOf(read), 'applied');
    assert.equal(read?.outcomeUnknown, false);
    const events = await eventsOf(changeId);
    const settled = events.find((e) => e.kind === 'outcome_settled');
    assert.equal(settled?.change?.resolvedBy, change?.resolvedBy);
    assert.ok(
      events.some((e) => e.kind === 'failed'),
      'the failed apply stays in its history',
    );
    // Applied means nothing more is sent: the agent's apply is refused, the ledger has the one send.
    const again = await refusal(client.applyChange({ changeId, digest: '', waitMs: 0 }, as(agent)));
    assert.match(again.message, /already applied/);
    assert.equal((await platform.ledger(path)).length, 1);
  });

  test('not_applied: it stays failed with its outcome known, no longer offered for a resend', async () => {
    const { changeId, path } = await sentWithoutAnswer();
    const { change } = await client.resolveChange(
      { changeId, resolution: 'not_applied', note: '' },
      as(reviewer),
    );
    assert.equal(statusOf(change), 'failed');
    assert.equal(change?.outcomeUnknown, false);
    assert.equal(resolutionOf(change), 'not_applied');
    assert.equal(change?.resolutionNote, undefined);
    assert.match(change?.error ?? '', /^not applied: a person checked the ad platform/);
    const agentResend = await refusal(client.applyChange({ changeId, digest: '', waitMs: 0 }, as(agent)));
    assert.equal(agentResend.code, Code.FailedPrecondition);
    assert.match(agentResend.message, /failed when it was applied/);
    const again = await refusal(
      client.resolveChange({ changeId, resolution: 'send_again', note: '' }, as(reviewer)),
    );
    assert.equal(again.code, Code.FailedPrecondition);
    assert.match(again.message, /a person already found it not applied/);
    const { changes } = await client.listChanges(
      { accountId: '', limit: 100, offset: 0, outcomeUnknown: true },
      as(reviewer),
    );
    assert.ok(!changes.some((c) => c.changeId === changeId));
    assert.ok((await eventsOf(changeId)).some((e) => e.kind === 'outcome_settled'));
    assert.deepEqual(await platform.ledger(path), []);
  });
});

describe('a change sent again and another change to its object', () => {
  /** Runs the apply worker on the change once, as one delivery of its message (no give-up). */
  const deliverOnce = (changeId: string) =>
    deliverApply({ pool, upstream: platform.upstream }, workspace, changeId);

  test('sent again, it waits for a change to the same object that was sent since and will be sent again without a re-read', async () => {
    // A: sent, never answered (not applied), failed with its outcome unknown.
    const a = await sentWithoutAnswer();
    // C, to the same ad: approved and sent, answered 500 every time, so the bus will send it
    // again, with its key and no re-read, after its backoff.
    const { change: c } = await client.prepareChange(
      {
        accountId: platform.accountId,
        tool: 'ads_update_ad',
        objectType: 'ad',
        effect: 'update',
        operation: { method: 'POST', path: a.path, bodyJson: JSON.stringify({ name: 'The later change' }) },
        targetPath: a.path,
      },
      as(agent),
    );
    assert.ok(c);
    await client.approveChange({ changeId: c.changeId, digest: c.digest }, as(reviewer));
    await client.applyChange({ changeId: c.changeId, digest: c.digest, waitMs: 0 }, as(agent));
    await platform.failWrites(a.path, 'status_500', 3);
    await assert.rejects(deliverOnce(c.changeId), /HTTP 500/);

    // A sent again now would pass its re-read (C has not landed) and C would then land over it.
    await client.applyChange({ changeId: a.changeId, digest: '', waitMs: 0 }, as(agent));
    await assert.rejects(
      deliverOnce(a.changeId),
      new RegExp(
        `change ${c.changeId} to ${a.path} was sent and its outcome is not known yet; this change waits`,
      ),
    );
    assert.deepEqual(await platform.ledger(a.path), [], 'nothing was applied meanwhile');

    // C lands; A, sent again after it, finds its object moved and is not sent over it.
    await deliverOnce(c.changeId);
    await deliverOnce(a.changeId).catch(() => undefined);
    assert.deepEqual(
      (await platform.ledger(a.path)).map((e) => e.idempotency_key),
      [`change-${c.changeId}`],
    );
  });
});

describe('refusals', () => {
  test('an MCP client, whatever its role, and a viewer may not settle an outcome', async () => {
    const { changeId } = await sentWithoutAnswer();
    const byAgent = await refusal(
      client.resolveChange({ changeId, resolution: 'applied', note: '' }, as(agent)),
    );
    assert.equal(byAgent.code, Code.PermissionDenied);
    assert.match(byAgent.message, /not through an MCP client/);
    const viewer = await refusal(
      client.resolveChange(
        { changeId, resolution: 'applied', note: '' },
        as(person({ via: 'dashboard', role: 'viewer' })),
      ),
    );
    assert.equal(viewer.code, Code.PermissionDenied);
    assert.match(viewer.message, /the role "viewer" may not settle/);
    const { change } = await client.getChange({ changeId }, as(agent));
    assert.equal(change?.outcomeUnknown, true, 'nothing was settled');
  });

  test('a resolution that is not one of the three, and a note too long, are refused naming the field', async () => {
    const { changeId } = await sentWithoutAnswer();
    const bad = await refusal(
      client.resolveChange({ changeId, resolution: 'maybe', note: '' }, as(reviewer)),
    );
    assert.equal(bad.code, Code.InvalidArgument);
    assert.match(bad.message, /resolution must be one of send_again, applied, not_applied/);
    const long = await refusal(
      client.resolveChange({ changeId, resolution: 'applied', note: 'x'.repeat(2001) }, as(reviewer)),
    );
    assert.equal(long.code, Code.InvalidArgument);
    assert.match(long.message, /note must be at most 2000 characters/);
  });

  test('a change whose outcome is known is refused, naming its status', async () => {
    const ad = ads.pop() as { id: string };
    const { change: prepared } = await client.prepareChange(
      {
        accountId: platform.accountId,
        tool: 'ads_update_ad',
        objectType: 'ad',
        effect: 'update',
        operation: { method: 'POST', path: `/ads/${ad.id}`, bodyJson: JSON.stringify(body) },
        targetPath: `/ads/${ad.id}`,
      },
      as(agent),
    );
    const changeId = prepared?.changeId ?? '';
    const early = await refusal(
      client.resolveChange({ changeId, resolution: 'applied', note: '' }, as(reviewer)),
    );
    assert.equal(early.code, Code.FailedPrecondition);
    assert.match(early.message, /^the change is prepared; only a change whose apply outcome is unknown/);
  });

  test('send_again a day after its first send is refused, as the agent’s apply is', async () => {
    const { changeId, path } = await sentWithoutAnswer();
    await pool.query(`UPDATE changes SET sent_at = now() - interval '25 hours' WHERE change_id = $1`, [
      changeId,
    ]);
    const late = await refusal(
      client.resolveChange({ changeId, resolution: 'send_again', note: '' }, as(reviewer)),
    );
    assert.equal(late.code, Code.FailedPrecondition);
    assert.match(late.message, /first sent more than 24 hours ago/);
    const { change } = await client.getChange({ changeId }, as(agent));
    assert.equal(statusOf(change), 'failed');
    assert.equal(resolutionOf(change), null);
    assert.deepEqual(await platform.ledger(path), []);
    // Marking it is still possible: the person can look at the platform.
    const { change: marked } = await client.resolveChange(
      { changeId, resolution: 'not_applied', note: 'too late to send again' },
      as(reviewer),
    );
    assert.equal(resolutionOf(marked), 'not_applied');
  });
});
