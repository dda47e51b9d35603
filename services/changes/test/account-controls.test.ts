/**
 * Account controls in the changes service, over real gRPC and PostgreSQL with the real sandbox
 * behind the real upstream-proxy: the spend envelope held at prepare, at approval and at apply
 * (two applies at once cannot together pass it), "no envelope, no write", and a freeze that
 * refuses prepares and holds a queued apply until it is lifted.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, beforeEach, describe, test } from 'node:test';
import { ChangesService } from '@adsmcp/proto/changes/v1/changes_pb';
import { ControlsService } from '@adsmcp/proto/changes/v1/controls_pb';
import type { Pool } from '@adsmcp/runtime/db';
import { as } from '@adsmcp/testkit/service-harness';
import { type Client, Code } from '@connectrpc/connect';
import { OPTIMIZER_ISSUER } from '../src/server.ts';
import { APPLY_TOPIC } from '../src/work/apply-message.ts';
import { deliverApply, deliverApplyLast } from './apply-delivery.ts';
import { type ChangesUnderTest, startChangesService, statusOf } from './changes-under-test.ts';
import { type LivePlatform, startLivePlatform } from './live-platform.ts';
import { personIn, refusal } from './people.ts';

let svc: ChangesUnderTest;
let pool: Pool;
let changes: Client<typeof ChangesService>;
/** Signs as the optimizer's worker, which records the changes its proposals publish. */
let optimizer: Client<typeof ChangesService>;
let controls: Client<typeof ControlsService>;
let platform: LivePlatform;
let account: string;

const workspace = randomUUID();
const person = personIn(workspace);
const agent = person();
const agentAdmin = person({ role: 'admin' });
const reviewer = person({ via: 'dashboard', credentialId: 'dashboard:x' });
const dashboardAdmin = person({ role: 'admin', via: 'dashboard', credentialId: 'dashboard:admin' });

/** A bulk job creating one paused campaign with a daily budget of `budgetMicros`. */
function campaignJob(budgetMicros: number) {
  const body = {
    operations: [
      {
        type: 'create_campaign',
        ref: 'c',
        body: {
          name: `Envelope ${randomUUID().slice(0, 8)}`,
          objective: 'clicks',
          budget_micros: budgetMicros,
          budget_type: 'daily',
          status: 'paused',
        },
      },
    ],
    validate_only: false,
    partial_failure: false,
  };
  return {
    accountId: account,
    tool: 'ads_prepare_ad_batch',
    objectType: 'bulk_mutation_job',
    effect: 'create',
    operation: { method: 'POST', path: '/bulk_mutation_jobs', bodyJson: JSON.stringify(body) },
    targetPath: '',
  };
}

/** Prepares, approves and asks to apply a change; the apply worker has not run yet. */
async function applying(request: ReturnType<typeof campaignJob>) {
  const { change } = await changes.prepareChange(request, as(agent));
  assert.ok(change);
  await changes.approveChange({ changeId: change.changeId, digest: change.digest }, as(reviewer));
  const { change: asked } = await changes.applyChange(
    { changeId: change.changeId, digest: change.digest, waitMs: 0 },
    as(agent),
  );
  assert.equal(statusOf(asked), 'applying');
  return change;
}

/** Runs the apply worker once on the change, as the bus would deliver it (at `now`, when given). */
function runWorker(changeId: string, now?: () => Date): Promise<void> {
  return deliverApply({ pool, upstream: platform.upstream, holdDelayMs: 60_000, now }, workspace, changeId);
}

/** Runs the apply worker on the change as the bus's last delivery of its message would. */
function lastDelivery(changeId: string): Promise<void> {
  return deliverApplyLast({ pool, upstream: platform.upstream }, workspace, changeId);
}

/** What the account's envelope counts as used now. */
async function envelopeUsed(): Promise<bigint | undefined> {
  const { controls: now } = await controls.getAccountControls({ accountId: account }, as(agent));
  return now?.envelope?.usedMicros;
}

/** The apply messages queued for a change (the outbox), oldest first. */
async function queuedApplies(changeId: string): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(
    `SELECT count(*)::text AS n FROM bus_outbox WHERE topic = $1 AND payload->>'change_id' = $2`,
    [APPLY_TOPIC, changeId],
  );
  return Number(rows[0]?.n ?? 0);
}

before(async () => {
  platform = await startLivePlatform(workspace);
  account = platform.accountId;
  svc = await startChangesService(platform, { peers: [OPTIMIZER_ISSUER] });
  pool = svc.pool;
  changes = svc.client;
  controls = svc.clientOf(ControlsService);
  optimizer = svc.clientOf(ChangesService, OPTIMIZER_ISSUER);
});

after(async () => {
  await platform?.stop();
  await svc?.stop();
});

beforeEach(async () => {
  // Each test starts with no envelope, no ledger and no freeze.
  await pool.query('DELETE FROM envelope_uses; DELETE FROM account_controls; DELETE FROM freezes');
});

describe('the spend envelope', () => {
  test('only a person in the dashboard sets it: an admin MCP credential is refused, naming who may', async () => {
    const refused = await refusal(
      controls.setSpendEnvelope(
        { accountId: account, envelopeMicros: 1n, failClosed: false },
        as(agentAdmin),
      ),
    );
    assert.equal(refused.code, Code.PermissionDenied);
    assert.match(refused.message, /needs a workspace admin signed in to the dashboard.*via mcp/);
    const bad = await refusal(
      controls.setSpendEnvelope(
        { accountId: account, envelopeMicros: -1n, failClosed: false },
        as(dashboardAdmin),
      ),
    );
    assert.equal(bad.code, Code.InvalidArgument);
    assert.match(bad.message, /`envelope_micros` must be 0 or more/);
  });

  test('two applies at once that together exceed the envelope: one is applied, the other refused unsent', async () => {
    await controls.setSpendEnvelope(
      { accountId: account, envelopeMicros: 80_000_000n, failClosed: false },
      as(dashboardAdmin),
    );
    // Each fits alone, so each is prepared and approved.
    const first = await applying(campaignJob(50_000_000));
    const second = await applying(campaignJob(50_000_000));
    const jobsBefore = (await platform.ledger('/bulk_mutation_jobs')).length;
    await Promise.all([runWorker(first.changeId), runWorker(second.changeId)]);

    const outcomes = await Promise.all(
      [first, second].map(async (c) => (await changes.getChange({ changeId: c.changeId }, as(agent))).change),
    );
    const statuses = outcomes.map((c) => statusOf(c)).sort();
    assert.deepEqual(statuses, ['applied', 'failed']);
    const refused = outcomes.find((c) => statusOf(c) === 'failed');
    assert.match(
      refused?.error ?? '',
      /^refused before applying, nothing was sent to the ad account: ad account .*'s spend envelope is 80\.00 USD \(80000000 micros\) in any 24 hours, of which 50\.00 USD \(50000000 micros\) is used and 30\.00 USD \(30000000 micros\) is left; it raises daily budgets by 50\.00 USD/,
    );
    // The platform's ledger: exactly one job reached it.
    assert.equal((await platform.ledger('/bulk_mutation_jobs')).length, jobsBefore + 1);
    const { controls: now } = await controls.getAccountControls({ accountId: account }, as(agent));
    assert.equal(now?.envelope?.usedMicros, 50_000_000n);
    assert.equal(now?.envelope?.leftMicros, 30_000_000n);

    // A third job of 50 no longer fits: refused when prepared, naming what is left.
    const third = await refusal(changes.prepareChange(campaignJob(50_000_000), as(agent)));
    assert.equal(third.code, Code.FailedPrecondition);
    assert.match(third.message, /30\.00 USD \(30000000 micros\) is left/);
  });

  test('a change whose outcome is unknown keeps its use while a send again is refused, and gives it back only when a person finds it not applied', async (t) => {
    await controls.setSpendEnvelope(
      { accountId: account, envelopeMicros: 80_000_000n, failClosed: false },
      as(dashboardAdmin),
    );
    const c = await applying(campaignJob(50_000_000));
    // Sent, and every try answered 500: its outcome is unknown, and it may have been applied.
    await platform.failWrites('/bulk_mutation_jobs', 'status_500', 3);
    await lastDelivery(c.changeId);
    t.after(() => platform.clearFaults());
    let got = (await changes.getChange({ changeId: c.changeId }, as(agent))).change;
    assert.equal(got?.outcomeUnknown, true);
    assert.equal(await envelopeUsed(), 50_000_000n);

    // Sent again by the agent, and refused by the upstream-proxy (the connection made read-only
    // meanwhile): still unknown whether the first send was applied, so the use stays.
    await changes.applyChange({ changeId: c.changeId, digest: '', waitMs: 0 }, as(agent));
    t.after(() => platform.setCanWrite(true));
    await platform.setCanWrite(false);
    await runWorker(c.changeId);
    await platform.setCanWrite(true);
    got = (await changes.getChange({ changeId: c.changeId }, as(agent))).change;
    assert.equal(statusOf(got), 'failed');
    assert.match(got?.error ?? '', /is read-only/);
    assert.equal(got?.outcomeUnknown, true);
    assert.equal(await envelopeUsed(), 50_000_000n, 'kept while the outcome is unknown');
    const refused = await refusal(changes.prepareChange(campaignJob(50_000_000), as(agent)));
    assert.match(refused.message, /30\.00 USD \(30000000 micros\) is left/);

    // A person finds it not applied: its use is given back, and a raise of 50 fits again.
    await changes.resolveChange(
      { changeId: c.changeId, resolution: 'not_applied', note: 'not in the platform console' },
      as(reviewer),
    );
    assert.equal(await envelopeUsed(), 0n);
    await changes.prepareChange(campaignJob(50_000_000), as(agent));
  });

  test('an apply tried again later counts its use from that attempt, not from its first reservation', async (t) => {
    await controls.setSpendEnvelope(
      { accountId: account, envelopeMicros: 80_000_000n, failClosed: false },
      as(dashboardAdmin),
    );
    const c = await applying(campaignJob(50_000_000));
    t.after(() => platform.clearFaults());
    await platform.failWrites('/bulk_mutation_jobs', 'status_500', 3);
    const hoursAgo = (h: number) => () => new Date(Date.now() - h * 3_600_000);
    // Its first attempt, 30 hours ago by the worker's clock, reserved its use and met an outage.
    await assert.rejects(runWorker(c.changeId, hoursAgo(30)), /could not be reached|HTTP 500/);
    // Tried again 10 hours ago, and applied then: its use counts for 24 hours from then.
    await runWorker(c.changeId, hoursAgo(10));
    assert.equal(statusOf((await changes.getChange({ changeId: c.changeId }, as(agent))).change), 'applied');
    assert.equal(await envelopeUsed(), 50_000_000n);
  });

  test('a change prepared within the envelope cannot be approved once the envelope is lowered below it', async () => {
    const { change } = await changes.prepareChange(campaignJob(40_000_000), as(agent));
    assert.ok(change);
    const {
      envelope,
      useMicros,
      refusal: none,
    } = await controls.getEnvelopeUse({ changeId: change.changeId }, as(reviewer));
    assert.equal(useMicros, 40_000_000n);
    assert.equal(envelope?.envelopeMicros, undefined);
    assert.equal(none, '');
    await controls.setSpendEnvelope(
      { accountId: account, envelopeMicros: 30_000_000n, failClosed: false },
      as(dashboardAdmin),
    );
    const refused = await refusal(
      changes.approveChange({ changeId: change.changeId, digest: change.digest }, as(reviewer)),
    );
    assert.equal(refused.code, Code.FailedPrecondition);
    assert.match(refused.message, /spend envelope is 30\.00 USD.*raises daily budgets by 40\.00 USD/);
  });

  test('"no envelope, no write" refuses any change that raises a daily budget, and nothing else', async () => {
    await controls.setSpendEnvelope({ accountId: account, failClosed: true }, as(dashboardAdmin));
    const refused = await refusal(changes.prepareChange(campaignJob(10_000_000), as(agent)));
    assert.equal(refused.code, Code.FailedPrecondition);
    assert.match(
      refused.message,
      /has no spend envelope and is set to "no envelope, no write".*body\.operations\[0\]\.body\.budget_micros 10000000 \(a new daily budget\)/,
    );
    const ad = (await platform.ads())[0];
    assert.ok(ad);
    const { change } = await changes.prepareChange(
      {
        accountId: account,
        tool: 'ads_update_ad',
        objectType: 'ad',
        effect: 'update',
        operation: {
          method: 'POST',
          path: `/ads/${ad.id}`,
          bodyJson: JSON.stringify({ name: `${ad.name} 2` }),
        },
        targetPath: `/ads/${ad.id}`,
      },
      as(agent),
    );
    assert.equal(statusOf(change), 'prepared');
  });
});

describe('a freeze', () => {
  test('only a person freezes; a frozen account refuses prepares and apply requests, naming who, when and why', async () => {
    const agentTried = await refusal(controls.freeze({ accountId: account, reason: 'stop' }, as(agentAdmin)));
    assert.equal(agentTried.code, Code.PermissionDenied);
    const blank = await refusal(
      controls.freeze({ accountId: account, reason: ' \u200b ' }, as(dashboardAdmin)),
    );
    assert.equal(blank.code, Code.InvalidArgument);
    assert.match(blank.message, /`reason` must contain a visible character/);

    const { change: approved } = await changes.prepareChange(campaignJob(1_000_000), as(agent));
    assert.ok(approved);
    await changes.approveChange({ changeId: approved.changeId, digest: approved.digest }, as(reviewer));
    const { freeze } = await controls.freeze(
      { accountId: account, reason: 'Budget review' },
      as(dashboardAdmin),
    );
    assert.equal(freeze?.reason, 'Budget review');

    const prepare = await refusal(changes.prepareChange(campaignJob(1_000_000), as(agent)));
    assert.equal(prepare.code, Code.FailedPrecondition);
    assert.equal(
      prepare.message,
      `ad account ${account} is frozen since ${freeze?.frozenAt} by ${freeze?.frozenBy}: Budget review; nothing may be prepared or applied until an admin unfreezes it`,
    );
    const apply = await refusal(
      changes.applyChange({ changeId: approved.changeId, digest: approved.digest, waitMs: 0 }, as(agent)),
    );
    assert.match(apply.message, /is frozen since .*: Budget review/);
    const { freezes } = await controls.listFreezes({}, as(agent));
    assert.deepEqual(
      freezes.map((f) => f.accountId),
      [account],
    );
  });

  test('an apply queued before the freeze is held, unsent, and sent once the account is unfrozen', async () => {
    const change = await applying(campaignJob(2_000_000));
    const jobsBefore = (await platform.ledger('/bulk_mutation_jobs')).length;
    await controls.freeze({ accountId: '', reason: 'Quarter close' }, as(dashboardAdmin));
    const queued = await queuedApplies(change.changeId);
    await runWorker(change.changeId);

    const { change: held } = await changes.getChange({ changeId: change.changeId }, as(agent));
    assert.equal(statusOf(held), 'applying');
    assert.match(
      held?.error ?? '',
      /^held: the workspace is frozen since .*: Quarter close; nothing was sent/,
    );
    assert.equal((await platform.ledger('/bulk_mutation_jobs')).length, jobsBefore);
    assert.equal(await queuedApplies(change.changeId), queued + 1, 'the held apply looks again later');

    const { resumed } = await controls.unfreeze({ accountId: '' }, as(dashboardAdmin));
    assert.equal(resumed, 1);
    const { rows: audit } = await pool.query<{ kind: string; reason: string }>(
      `SELECT kind, details->>'reason' AS reason FROM audit_log
        WHERE workspace_id = $1 AND kind LIKE 'account.%frozen' ORDER BY seq DESC LIMIT 2`,
      [workspace],
    );
    assert.deepEqual(audit, [
      { kind: 'account.unfrozen', reason: 'Quarter close' },
      { kind: 'account.frozen', reason: 'Quarter close' },
    ]);
    assert.equal(
      await queuedApplies(change.changeId),
      queued + 2,
      'unfreezing queues the held apply at once',
    );
    await runWorker(change.changeId);
    const { change: applied } = await changes.getChange({ changeId: change.changeId }, as(agent));
    assert.equal(statusOf(applied), 'applied');
    assert.equal((await platform.ledger('/bulk_mutation_jobs')).length, jobsBefore + 1);
  });

  test('a held apply whose approval expires while frozen fails with nothing sent', async () => {
    const change = await applying(campaignJob(3_000_000));
    await controls.freeze({ accountId: account, reason: 'Long review' }, as(dashboardAdmin));
    const jobsBefore = (await platform.ledger('/bulk_mutation_jobs')).length;
    // 25 hours later: past the approval's 24 hours (the workspace's default approval expiry).
    await runWorker(change.changeId, () => new Date(Date.now() + 25 * 3_600_000));
    const { change: ended } = await changes.getChange({ changeId: change.changeId }, as(agent));
    assert.equal(statusOf(ended), 'failed');
    assert.match(
      ended?.error ?? '',
      /^it was held while ad account .* is frozen since .*: Long review, until its time ran out; nothing was sent to the ad account, and its approval \(valid 24 hours\) has expired/,
    );
    assert.equal((await platform.ledger('/bulk_mutation_jobs')).length, jobsBefore);
  });

  test('an optimizer proposal a person approved is recorded while frozen, and its publishing waits until unfrozen', async () => {
    const ad = (await platform.ads())[1];
    assert.ok(ad);
    await controls.freeze({ accountId: account, reason: 'Hold the optimizer' }, as(dashboardAdmin));
    const changeId = randomUUID();
    const { change } = await optimizer.recordApprovedChange(
      {
        change: {
          accountId: account,
          tool: 'ads_update_ad',
          objectType: 'ad',
          effect: 'update',
          operation: {
            method: 'POST',
            path: `/ads/${ad.id}`,
            bodyJson: JSON.stringify({ name: `${ad.name} v2` }),
          },
          targetPath: `/ads/${ad.id}`,
        },
        changeId,
        approvedBy: 'a person (optimization proposal p1)',
        approverUserId: randomUUID(),
      },
      as(person({ via: 'worker', credentialId: 'optimizer-proposal:p1' })),
    );
    assert.equal(statusOf(change), 'applying');
    await runWorker(changeId);
    const { change: held } = await changes.getChange({ changeId }, as(agent));
    assert.equal(statusOf(held), 'applying');
    assert.match(held?.error ?? '', /^held: ad account .* is frozen since .*: Hold the optimizer/);
    assert.deepEqual(await platform.ledger(`/ads/${ad.id}`), []);

    await controls.unfreeze({ accountId: account }, as(dashboardAdmin));
    await runWorker(changeId);
    const { change: published } = await changes.getChange({ changeId }, as(agent));
    assert.equal(statusOf(published), 'applied');
    assert.equal((await platform.ledger(`/ads/${ad.id}`)).length, 1);
  });
});
