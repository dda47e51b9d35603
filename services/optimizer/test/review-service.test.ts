import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { OptimizerConfigSchema } from '@adsmcp/proto/optimizer/v1/optimizer_pb';
import {
  type AdDeliverySchema,
  type Proposal,
  ProposalStatus,
  ProposalStatusSchema,
  type ReviewRun,
  RunOutcomeSchema,
  RunStatus,
  RunStatusSchema,
  RunTriggerSchema,
  type VariantSchema,
} from '@adsmcp/proto/optimizer/v1/reviews_pb';
import type { Delivery } from '@adsmcp/runtime/bus/bus';
import { createPgTransport } from '@adsmcp/runtime/bus/pg-transport';
import { inTransaction } from '@adsmcp/runtime/db';
import { enumWord, enumWords } from '@adsmcp/runtime/enum-words';
import { createLogger } from '@adsmcp/runtime/log';
import type { Principal } from '@adsmcp/runtime/principal';
import { testPrincipal } from '@adsmcp/testkit/service-harness';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { PROPOSAL_STATUSES, publishBody } from '../src/domain/proposal.ts';
import { OUTCOMES, RUN_STATUSES, type Variant } from '../src/domain/review.ts';
import {
  createScheduleHandler,
  SCHEDULE_TOPIC,
  type ScheduleMessage,
  scheduleDue,
} from '../src/work/schedule.ts';
import { type ReviewHarness, startReviewHarness } from './review-harness.ts';

/** A proposal's status as tools and the dashboard name it (enum-words.ts). */
const statusWord = (p: Proposal | undefined) =>
  p === undefined ? undefined : enumWord(ProposalStatusSchema, p.state);

/** A run's status, trigger or outcome as tools name it (enum-words.ts). */
function runWord(r: ReviewRun | undefined, field: 'status' | 'trigger' | 'outcome') {
  if (r === undefined) return undefined;
  if (field === 'status') return enumWord(RunStatusSchema, r.state);
  if (field === 'trigger') return enumWord(RunTriggerSchema, r.queuedBy);
  return r.found === undefined ? undefined : enumWord(RunOutcomeSchema, r.found);
}

test('the run statuses and outcomes the optimizer stores are the words of the proto’s enums, in their order', () => {
  assert.deepEqual([...RUN_STATUSES], enumWords(RunStatusSchema));
  assert.deepEqual([...OUTCOMES], enumWords(RunOutcomeSchema));
});

test('the proposal statuses the optimizer stores are the words of the proto’s ProposalStatus, in its order', () => {
  assert.deepEqual([...PROPOSAL_STATUSES], enumWords(ProposalStatusSchema));
});

let h: ReviewHarness;

before(async () => {
  h = await startReviewHarness();
});

after(async () => {
  await h?.stop();
});

const HOUR = 3_600_000;
const MINUTE = 60_000;

type ConfigInit = MessageInitShape<typeof OptimizerConfigSchema>;
type VariantInit = MessageInitShape<typeof VariantSchema>;

const config = (patch: Partial<ConfigInit> = {}): ConfigInit => ({
  campaignIds: ['cmp-1', 'cmp-2'],
  goal: 'cpc',
  cadenceHours: 24,
  windowHours: 168,
  reportingDelayHours: 48,
  minImpressions: 1000,
  minClicks: 50,
  minConversions: 5,
  maxAdsPerCampaign: 1,
  reviewHours: 24,
  publishHours: 4,
  allowedDomains: ['example.com'],
  ...patch,
});

async function refused(call: Promise<unknown>, code: Code, message: RegExp): Promise<void> {
  await assert.rejects(call, (err: unknown) => {
    assert.ok(err instanceof ConnectError, String(err));
    assert.equal(Code[err.code], Code[code], err.message);
    assert.match(err.rawMessage, message);
    return true;
  });
}

async function optimizer(p: Principal, patch: Partial<ConfigInit> = {}): Promise<string> {
  const { optimizer } = await h.optimizers.saveOptimizer(
    { accountId: randomUUID(), name: 'Copy review', config: config(patch), enabled: true },
    h.as(p),
  );
  return optimizer?.optimizerId ?? '';
}

const delivery = (
  adId: string,
  campaignId: string,
  impressions: number,
  clicks: number,
): MessageInitShape<typeof AdDeliverySchema> => ({
  adId,
  adName: `Ad ${adId}`,
  campaignId,
  adGroupId: `adg-${campaignId}`,
  status: 'active',
  title: 'Old title',
  body: 'Old body',
  targetUrl: 'https://example.com/old',
  impressions: BigInt(impressions),
  clicks: BigInt(clicks),
  conversions: 1,
  spendMicros: BigInt(clicks * 500_000),
});

const variant = (patch: Partial<VariantInit> = {}): VariantInit => ({
  baseAdId: 'ad-1',
  name: 'Offer in the title',
  title: 'Free shipping today',
  body: 'Plants at your door in two days.',
  targetUrl: 'https://example.com/plants',
  rationale: 'Low CTR with enough evidence.',
  hypothesis: 'Naming the offer raises CTR.',
  ...patch,
});

/** A claimed run with a snapshot of three ads: ad-1 and ad-3 with evidence, ad-2 without. */
async function claimedRun(p: Principal, patch: Partial<ConfigInit> = {}) {
  const optimizerId = await optimizer(p, patch);
  const { run } = await h.reviews.requestReview({ optimizerId }, h.as(p));
  const runId = run?.runId ?? '';
  const claim = await h.reviews.claimRun({ runId }, h.as(p));
  const recorded = await h.reviews.recordSnapshot(
    {
      runId,
      claimToken: claim.claimToken,
      timeRange: '2026-02-20..2026-02-27',
      windowStart: '2026-02-20T10:00:00.000Z',
      windowEnd: '2026-02-27T10:00:00.000Z',
      currency: 'USD',
      timeZone: 'UTC',
      ads: [
        delivery('ad-1', 'cmp-1', 5000, 60),
        delivery('ad-2', 'cmp-1', 400, 3),
        delivery('ad-3', 'cmp-2', 9000, 200),
        delivery('ad-9', 'cmp-other', 9000, 200),
      ],
    },
    h.as(p),
  );
  return { optimizerId, runId, token: claim.claimToken, claim, snapshot: recorded.snapshot };
}

describe('requesting a review', () => {
  test('queues a run, and a second request reuses the open run instead of queuing another', async () => {
    const p = testPrincipal();
    const optimizerId = await optimizer(p);
    const first = await h.reviews.requestReview({ optimizerId }, h.as(p));
    assert.equal(first.created, true);
    assert.equal(runWord(first.run, 'status'), 'queued');
    assert.equal(runWord(first.run, 'trigger'), 'request');
    const second = await h.reviews.requestReview({ optimizerId }, h.as(p));
    assert.equal(second.created, false);
    assert.equal(second.run?.runId, first.run?.runId);
    const { runs, total } = await h.reviews.listRuns({ optimizerId }, h.as(p));
    assert.equal(total, 1);
    assert.equal(runs[0]?.runId, first.run?.runId);
  });

  test('is refused for a paused optimizer, and pausing cancels the open run', async () => {
    const p = testPrincipal();
    const optimizerId = await optimizer(p);
    const { run } = await h.reviews.requestReview({ optimizerId }, h.as(p));
    await h.optimizers.pauseOptimizer({ optimizerId }, h.as(p));
    const got = await h.reviews.getRun({ runId: run?.runId ?? '' }, h.as(p));
    assert.equal(runWord(got.run, 'status'), 'cancelled');
    assert.match(got.run?.cancelReason ?? '', /paused/);
    await refused(h.reviews.requestReview({ optimizerId }, h.as(p)), Code.FailedPrecondition, /paused/);
  });

  test('of another workspace’s optimizer is not found', async () => {
    const optimizerId = await optimizer(testPrincipal());
    await refused(
      h.reviews.requestReview({ optimizerId }, h.as(testPrincipal())),
      Code.NotFound,
      /no optimizer/,
    );
  });
});

describe('claiming a run', () => {
  test('claims it for 30 minutes; a second claim is refused, a retry with the same token returns the claim', async () => {
    const p = testPrincipal();
    const optimizerId = await optimizer(p);
    const { run } = await h.reviews.requestReview({ optimizerId }, h.as(p));
    const runId = run?.runId ?? '';
    const token = randomUUID();
    const claim = await h.reviews.claimRun({ runId, claimToken: token }, h.as(p));
    assert.equal(claim.claimToken, token);
    assert.equal(runWord(claim.run, 'status'), 'claimed');
    assert.equal(claim.run?.claimExpiresAt, new Date(h.now().getTime() + 30 * MINUTE).toISOString());
    assert.deepEqual(claim.campaignIds, ['cmp-1', 'cmp-2']);
    await refused(h.reviews.claimRun({ runId }, h.as(p)), Code.FailedPrecondition, /already claimed/);
    const again = await h.reviews.claimRun({ runId, claimToken: token }, h.as(p));
    assert.equal(again.claimToken, token);
    const queued = await h.reviews.listRuns({ optimizerId, state: RunStatus.QUEUED }, h.as(p));
    assert.equal(queued.total, 0);
  });

  test('a claim that ran out puts the run back in the queue, and its old token can no longer complete it', async () => {
    const p = testPrincipal();
    const { optimizerId, runId, token } = await claimedRun(p);
    h.advance(31 * MINUTE);
    const queued = await h.reviews.listRuns({ optimizerId, state: RunStatus.QUEUED }, h.as(p));
    assert.deepEqual(
      queued.runs.map((r: ReviewRun) => r.runId),
      [runId],
    );
    await refused(
      h.reviews.completeRun(
        { runId, claimToken: token, outcome: 'no_change', summary: 'Nothing to do.' },
        h.as(p),
      ),
      Code.FailedPrecondition,
      /ran out/,
    );
    const next = await h.reviews.claimRun({ runId }, h.as(p));
    assert.notEqual(next.claimToken, token);
    assert.equal(runWord(next.run, 'status'), 'claimed');
  });

  test('a completed run cannot be claimed', async () => {
    const p = testPrincipal();
    const { runId, token } = await claimedRun(p);
    await h.reviews.completeRun(
      { runId, claimToken: token, outcome: 'no_change', summary: 'Fine.' },
      h.as(p),
    );
    await refused(h.reviews.claimRun({ runId }, h.as(p)), Code.FailedPrecondition, /completed/);
  });
});

describe('UUIDs in any case', () => {
  test('a claim_token in upper case claims the run, records its snapshot, retries the claim and completes the run', async () => {
    const p = testPrincipal();
    const optimizerId = await optimizer(p);
    const { run } = await h.reviews.requestReview({ optimizerId: optimizerId.toUpperCase() }, h.as(p));
    const runId = run?.runId ?? '';
    const token = randomUUID().toUpperCase();
    const claim = await h.reviews.claimRun({ runId: runId.toUpperCase(), claimToken: token }, h.as(p));
    // Kept and answered in the one canonical form; any case of it works from here on.
    assert.equal(claim.claimToken, token.toLowerCase());
    const recorded = await h.reviews.recordSnapshot(
      {
        runId: runId.toUpperCase(),
        claimToken: token,
        timeRange: '2026-02-20..2026-02-27',
        windowStart: '2026-02-20T10:00:00.000Z',
        windowEnd: '2026-02-27T10:00:00.000Z',
        currency: 'USD',
        timeZone: 'UTC',
        ads: [delivery('ad-1', 'cmp-1', 5000, 60)],
      },
      h.as(p),
    );
    assert.equal(recorded.snapshot?.ads.length, 1);
    // The retry a failed snapshot read asks for: the same token, as the caller gave it.
    const retried = await h.reviews.claimRun({ runId, claimToken: token }, h.as(p));
    assert.equal(runWord(retried.run, 'status'), 'claimed');
    const lower = await h.reviews.claimRun({ runId, claimToken: token.toLowerCase() }, h.as(p));
    assert.equal(lower.claimToken, token.toLowerCase());
    const completion = {
      runId: runId.toUpperCase(),
      claimToken: token,
      outcome: 'proposals',
      summary: 'One weak ad.',
      variants: [variant()],
    };
    const done = await h.reviews.completeRun(completion, h.as(p));
    assert.equal(runWord(done.run, 'status'), 'completed');
    assert.equal(done.repeated, false);
    const again = await h.reviews.completeRun(
      { ...completion, runId, claimToken: token.toLowerCase() },
      h.as(p),
    );
    assert.equal(again.repeated, true);
    const upper = await h.reviews.completeRun(completion, h.as(p));
    assert.equal(upper.repeated, true);
    const listed = await h.reviews.listRuns({ optimizerId: optimizerId.toUpperCase() }, h.as(p));
    assert.deepEqual(
      listed.runs.map((r) => r.runId),
      [runId],
    );
  });

  test('a proposal id in upper case reads, reviews, edits and cancels the proposal', async () => {
    const p = testPrincipal();
    const { proposalId } = await pendingProposal(p);
    const id = proposalId.toUpperCase();
    const got = await h.reviews.getProposal({ proposalId: id }, h.as(p));
    assert.equal(got.proposal?.proposalId, proposalId);
    const asked = await h.reviews.reviewProposal(
      { proposalId: id, expectedRevision: 1, decision: 'request_changes', note: 'Keep the brand.' },
      h.as(p),
    );
    assert.equal(statusWord(asked.proposal), 'changes_requested');
    const edited = await h.reviews.editProposal(
      { proposalId: id, expectedRevision: 2, variant: variant() },
      h.as(p),
    );
    assert.equal(edited.proposal?.revision, 3);
    const cancelled = await h.reviews.cancelProposal({ proposalId: id }, h.as(p));
    assert.equal(statusWord(cancelled.proposal), 'cancelled');
  });
});

describe('the performance snapshot', () => {
  test('keeps the optimizer’s campaigns’ ads and marks those below the thresholds', async () => {
    const p = testPrincipal();
    const { snapshot } = await claimedRun(p);
    assert.deepEqual(
      snapshot?.ads.map((a) => a.adId),
      ['ad-1', 'ad-2', 'ad-3'],
    );
    const [one, two] = snapshot?.ads ?? [];
    assert.equal(one?.meetsThresholds, true);
    assert.deepEqual(one?.belowThresholds, []);
    assert.equal(one?.ctr, 60 / 5000);
    assert.equal(two?.meetsThresholds, false);
    assert.deepEqual(two?.belowThresholds, [
      'impressions 400 < min_impressions 1000',
      'clicks 3 < min_clicks 50',
    ]);
    assert.equal(snapshot?.adsMeetingThresholds, 2);
  });

  test('counts conversions only for a cpa goal', async () => {
    const p = testPrincipal();
    const { snapshot } = await claimedRun(p, { goal: 'cpa' });
    assert.match(snapshot?.ads[0]?.belowThresholds.join() ?? '', /conversions 1 < min_conversions 5/);
  });
});

describe('completing a run', () => {
  test('with proposals creates one proposal per variant, pending review', async () => {
    const p = testPrincipal();
    const { runId, token } = await claimedRun(p);
    const done = await h.reviews.completeRun(
      { runId, claimToken: token, outcome: 'proposals', summary: 'One weak ad.', variants: [variant()] },
      h.as(p),
    );
    assert.equal(runWord(done.run, 'status'), 'completed');
    assert.equal(runWord(done.run, 'outcome'), 'proposals');
    assert.equal(done.proposals.length, 1);
    const proposal = done.proposals[0];
    assert.equal(statusWord(proposal), 'pending_review');
    assert.equal(proposal?.revision, 1);
    assert.equal(proposal?.evidence?.adId, 'ad-1');
    assert.equal(proposal?.reviewExpiresAt, new Date(h.now().getTime() + 24 * HOUR).toISOString());
    assert.deepEqual(done.run?.proposalIds, [proposal?.proposalId]);
  });

  test('repeating an identical completion is idempotent; a different one is refused', async () => {
    const p = testPrincipal();
    const { runId, token } = await claimedRun(p);
    const req = { runId, claimToken: token, outcome: 'proposals', summary: 'One.', variants: [variant()] };
    const first = await h.reviews.completeRun(req, h.as(p));
    const again = await h.reviews.completeRun(req, h.as(p));
    assert.equal(again.repeated, true);
    assert.deepEqual(
      again.proposals.map((x) => x.proposalId),
      first.proposals.map((x) => x.proposalId),
    );
    await refused(
      h.reviews.completeRun({ ...req, summary: 'Another.' }, h.as(p)),
      Code.InvalidArgument,
      /already completed with a different/,
    );
    const { total } = await h.reviews.listProposals({ optimizerId: undefined }, h.as(p));
    assert.equal(total, 1);
    // A creation-time filter that names no instant is refused naming the field, not stored.
    for (const [field, value, problem] of [
      [
        'createdAfter',
        '2024-02-30T00:00:00Z',
        /created_after must be .*2024-02-30 is not a day of the calendar/,
      ],
      ['createdBefore', '2024-03-01T24:00:00Z', /created_before must be .*hours run 00 to 23/],
    ] as const) {
      await refused(h.reviews.listProposals({ [field]: value }, h.as(p)), Code.InvalidArgument, problem);
    }
  });

  test('refuses a wrong claim token', async () => {
    const p = testPrincipal();
    const { runId } = await claimedRun(p);
    await refused(
      h.reviews.completeRun({ runId, claimToken: randomUUID(), outcome: 'no_change', summary: 'x' }, h.as(p)),
      Code.PermissionDenied,
      /claim_token is not the claim/,
    );
  });

  test('checks variants against the snapshot’s ads, allowed_domains and max_ads_per_campaign', async () => {
    const p = testPrincipal();
    const { runId, token } = await claimedRun(p);
    const complete = (variants: VariantInit[], outcome = 'proposals') =>
      h.reviews.completeRun({ runId, claimToken: token, outcome, summary: 'x', variants }, h.as(p));
    await refused(
      complete([variant({ baseAdId: 'ad-9' })]),
      Code.InvalidArgument,
      /base_ad_id "ad-9" is not an ad/,
    );
    await refused(
      complete([variant({ targetUrl: 'https://evil.test/x' })]),
      Code.InvalidArgument,
      /evil\.test, which is not one of the optimizer's allowed_domains/,
    );
    await refused(complete([variant({ targetUrl: 'http://example.com/x' })]), Code.InvalidArgument, /https/);
    // Written as an ad's target_url must be: what the reviewer reads is what is published.
    for (const targetUrl of [
      'https://example.com/spring sale',
      'https://example.com\\@evil.test/',
      'https:example.com/x',
    ])
      await refused(
        complete([variant({ targetUrl })]),
        Code.InvalidArgument,
        /^variants\[0\]\.target_url must be an https URL written as https:\/\/host\/path, with no spaces or backslashes/,
      );
    await refused(
      complete([variant({ targetUrl: 'https://shop.test:pw@example.com/x' })]),
      Code.InvalidArgument,
      /^variants\[0\]\.target_url must not carry a user name or password/,
    );
    await refused(
      complete([variant(), variant({ baseAdId: 'ad-2' })]),
      Code.InvalidArgument,
      /more than max_ads_per_campaign \(1\) ads for campaign cmp-1/,
    );
    await refused(complete([]), Code.InvalidArgument, /at least one variant/);
    await refused(complete([variant()], 'no_change'), Code.InvalidArgument, /variants must be empty/);
    // Nothing was recorded: a valid completion still goes through.
    const ok = await complete([variant(), variant({ baseAdId: 'ad-3' })]);
    assert.equal(ok.proposals.length, 2);
  });
});

/** A pending proposal of a new optimizer. */
async function pendingProposal(p: Principal, patch: Partial<ConfigInit> = {}) {
  const { runId, token, optimizerId } = await claimedRun(p, patch);
  const done = await h.reviews.completeRun(
    { runId, claimToken: token, outcome: 'proposals', summary: 'x', variants: [variant()] },
    h.as(p),
  );
  const proposal = done.proposals[0];
  assert.ok(proposal);
  return { optimizerId, proposalId: proposal.proposalId };
}

const dashboardOf = (p: Principal): Principal => ({ ...p, via: 'dashboard', credentialId: randomUUID() });

describe('proposals', () => {
  test('edit and review need the current revision; an edit puts it back into review', async () => {
    const p = testPrincipal();
    const { proposalId } = await pendingProposal(p);
    await refused(
      h.reviews.reviewProposal(
        { proposalId, expectedRevision: 5, decision: 'request_changes', note: 'x' },
        h.as(p),
      ),
      Code.Aborted,
      /expected_revision is stale: the proposal is at revision 1/,
    );
    const asked = await h.reviews.reviewProposal(
      { proposalId, expectedRevision: 1, decision: 'request_changes', note: 'Keep the brand name.' },
      h.as(p),
    );
    assert.equal(statusWord(asked.proposal), 'changes_requested');
    assert.equal(asked.proposal?.reviewNote, 'Keep the brand name.');
    h.advance(HOUR);
    const edited = await h.reviews.editProposal(
      { proposalId, expectedRevision: 2, variant: variant({ title: 'Brand: free shipping' }) },
      h.as(p),
    );
    assert.equal(statusWord(edited.proposal), 'pending_review');
    assert.equal(edited.proposal?.revision, 3);
    assert.equal(edited.proposal?.variant?.title, 'Brand: free shipping');
    assert.equal(edited.proposal?.reviewExpiresAt, new Date(h.now().getTime() + 24 * HOUR).toISOString());
    await refused(
      h.reviews.editProposal(
        { proposalId, expectedRevision: 3, variant: variant({ baseAdId: 'ad-3' }) },
        h.as(p),
      ),
      Code.InvalidArgument,
      /base_ad_id must stay ad-1/,
    );
    await refused(
      h.reviews.editProposal(
        { proposalId, expectedRevision: 3, variant: variant({ targetUrl: 'https://example.com/a b' }) },
        h.as(p),
      ),
      Code.InvalidArgument,
      /^variant\.target_url must be an https URL written as https:\/\/host\/path/,
    );
    const rejected = await h.reviews.reviewProposal(
      { proposalId, expectedRevision: 3, decision: 'reject', note: 'Off brand.' },
      h.as(p),
    );
    assert.equal(statusWord(rejected.proposal), 'rejected');
    const list = await h.reviews.listProposals({ state: ProposalStatus.REJECTED }, h.as(p));
    assert.deepEqual(
      list.proposals.map((x) => x.proposalId),
      [proposalId],
    );
  });

  test('an approval that meets a pause under way waits for it, and is then refused as paused', async () => {
    const p = testPrincipal();
    const { proposalId, optimizerId } = await pendingProposal(p);
    // A pause under way: the optimizer's row held by its transaction, not yet committed.
    const pausing = await h.pool.connect();
    try {
      await pausing.query('BEGIN');
      await pausing.query('SELECT 1 FROM optimizers WHERE optimizer_id = $1 FOR UPDATE', [optimizerId]);
      let settled = false;
      const approval = h.reviews
        .approveProposal({ proposalId, expectedRevision: 1 }, h.as(dashboardOf(p)))
        .finally(() => {
          settled = true;
        });
      approval.catch(() => undefined);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(settled, false, 'the approval waits for the pause');
      await pausing.query(
        'UPDATE optimizers SET enabled = false, paused_at = now(), next_review_at = NULL WHERE optimizer_id = $1',
        [optimizerId],
      );
      await pausing.query('COMMIT');
      await refused(approval, Code.FailedPrecondition, /the optimizer is paused/);
    } finally {
      await pausing.query('ROLLBACK');
      pausing.release();
    }
  });

  test('approval is refused through an MCP client and recorded from the dashboard; an approved proposal cannot be edited', async () => {
    const p = testPrincipal();
    const { proposalId } = await pendingProposal(p);
    await refused(
      h.reviews.approveProposal({ proposalId, expectedRevision: 1 }, h.as(p)),
      Code.PermissionDenied,
      /in the dashboard/,
    );
    await refused(
      h.reviews.approveProposal(
        { proposalId, expectedRevision: 1 },
        h.as({ ...dashboardOf(p), role: 'viewer' }),
      ),
      Code.PermissionDenied,
      /viewer/,
    );
    const approved = await h.reviews.approveProposal(
      { proposalId, expectedRevision: 1 },
      h.as(dashboardOf(p)),
    );
    assert.equal(statusWord(approved.proposal), 'approved');
    assert.match(approved.proposal?.approvedBy ?? '', new RegExp(`user:${p.userId} via dashboard`));
    assert.equal(approved.proposal?.publishBy, new Date(h.now().getTime() + 4 * HOUR).toISOString());
    await refused(
      h.reviews.editProposal({ proposalId, expectedRevision: 2, variant: variant() }, h.as(p)),
      Code.FailedPrecondition,
      /an approved proposal cannot be changed/,
    );
    const { rows } = await h.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM bus_outbox WHERE topic = 'optimizer.publish' AND key = $1",
      [proposalId],
    );
    assert.equal(rows[0]?.n, 1);
  });

  test('a review note counts characters as code points: 4000 emoji are accepted, 4001 refused with the count', async () => {
    const p = testPrincipal();
    const first = await pendingProposal(p);
    await refused(
      h.reviews.reviewProposal(
        { proposalId: first.proposalId, expectedRevision: 1, decision: 'reject', note: '😀'.repeat(4001) },
        h.as(p),
      ),
      Code.InvalidArgument,
      /`note` must be 1 to 4000 characters \(got 4001\)/,
    );
    await refused(
      h.reviews.reviewProposal(
        { proposalId: first.proposalId, expectedRevision: 1, decision: 'reject', note: 'Off \u202Ebrand' },
        h.as(p),
      ),
      Code.InvalidArgument,
      /note must not contain the invisible character U\+202E/,
    );
    await refused(
      h.reviews.reviewProposal(
        { proposalId: first.proposalId, expectedRevision: 1, decision: 'reject', note: ' \n\t ' },
        h.as(p),
      ),
      Code.InvalidArgument,
      /note must contain a visible character/,
    );
    const note = '😀'.repeat(4000);
    const asked = await h.reviews.reviewProposal(
      { proposalId: first.proposalId, expectedRevision: 1, decision: 'request_changes', note },
      h.as(p),
    );
    assert.equal(asked.proposal?.reviewNote, note);
  });

  test('a proposal not approved within review_hours expires and can no longer be approved', async () => {
    const p = testPrincipal();
    const { proposalId } = await pendingProposal(p, { reviewHours: 2 });
    h.advance(2 * HOUR + 1);
    const got = await h.reviews.getProposal({ proposalId }, h.as(p));
    assert.equal(statusWord(got.proposal), 'expired');
    await refused(
      h.reviews.approveProposal({ proposalId, expectedRevision: 1 }, h.as(dashboardOf(p))),
      Code.FailedPrecondition,
      /review_hours/,
    );
  });

  test('cancelling stops an approved proposal; pausing cancels approved ones not yet dispatched', async () => {
    const p = testPrincipal();
    const first = await pendingProposal(p);
    await h.reviews.approveProposal(
      { proposalId: first.proposalId, expectedRevision: 1 },
      h.as(dashboardOf(p)),
    );
    const cancelled = await h.reviews.cancelProposal({ proposalId: first.proposalId }, h.as(p));
    assert.equal(statusWord(cancelled.proposal), 'cancelled');
    const again = await h.reviews.cancelProposal({ proposalId: first.proposalId }, h.as(p));
    assert.equal(again.proposal?.revision, cancelled.proposal?.revision);

    const second = await pendingProposal(p);
    await h.reviews.approveProposal(
      { proposalId: second.proposalId, expectedRevision: 1 },
      h.as(dashboardOf(p)),
    );
    await h.optimizers.pauseOptimizer({ optimizerId: second.optimizerId }, h.as(p));
    const got = await h.reviews.getProposal({ proposalId: second.proposalId }, h.as(p));
    assert.equal(statusWord(got.proposal), 'cancelled');
    assert.match(got.proposal?.cancelReason ?? '', /paused/);
  });

  test('listing by a status value the enum lacks is refused with the statuses, not answered with none', async () => {
    const p = testPrincipal();
    const { optimizerId } = await pendingProposal(p);
    const listed = await h.reviews.listProposals(
      { optimizerId, state: ProposalStatus.PENDING_REVIEW },
      h.as(p),
    );
    assert.equal(listed.total, 1);
    await refused(
      h.reviews.listProposals({ optimizerId, state: 99 as ProposalStatus }, h.as(p)),
      Code.InvalidArgument,
      /^status must be one of pending_review, changes_requested, approved, .*expired \(got 99\)$/,
    );
  });
});

describe('a variant with a campaign image', () => {
  test('keeps its asset_id (in lower case) through completion and edit, and publishes it as the creative’s asset_id', async () => {
    const p = testPrincipal();
    const { runId, token } = await claimedRun(p);
    const assetId = randomUUID();
    const done = await h.reviews.completeRun(
      {
        runId,
        claimToken: token,
        outcome: 'proposals',
        summary: 'x',
        variants: [variant({ assetId: assetId.toUpperCase() })],
      },
      h.as(p),
    );
    const proposal = done.proposals[0];
    assert.equal(proposal?.variant?.assetId, assetId);
    const other = randomUUID();
    const edited = await h.reviews.editProposal(
      { proposalId: proposal?.proposalId ?? '', expectedRevision: 1, variant: variant({ assetId: other }) },
      h.as(p),
    );
    assert.equal(edited.proposal?.variant?.assetId, other);
    const stored = await h.pool.query<{ variant: Variant }>(
      'SELECT variant FROM proposals WHERE proposal_id = $1',
      [proposal?.proposalId],
    );
    const body = publishBody(stored.rows[0]?.variant as Variant);
    assert.deepEqual(body, {
      creative: {
        title: variant().title,
        body: variant().body,
        target_url: variant().targetUrl,
        asset_id: other,
      },
    });
    // Without an image, the creative's image is left as it is.
    assert.equal(
      'asset_id' in
        (publishBody({ ...(stored.rows[0]?.variant as Variant), assetId: undefined }).creative as object),
      false,
    );
  });
});

describe('the cadence', () => {
  test('an enabled optimizer gets a scheduled review run once its cadence has passed; a paused one does not', async () => {
    const bus = createPgTransport({ pool: h.pool, logger: createLogger('optimizer', 'silent') });
    await bus.consume<ScheduleMessage>({
      name: 'optimizer-schedule',
      topic: SCHEDULE_TOPIC,
      handler: createScheduleHandler({ clock: () => h.now(), logger: createLogger('optimizer', 'silent') }),
      pollIntervalMs: 100,
    });
    try {
      const p = testPrincipal();
      const enabled = await optimizer(p, { cadenceHours: 6 });
      const paused = await optimizer(p, { cadenceHours: 6 });
      await h.optimizers.pauseOptimizer({ optimizerId: paused }, h.as(p));
      h.advance(6 * HOUR + 1);
      await scheduleDue(h.pool, h.now());
      let runs: ReviewRun[] = [];
      for (let i = 0; i < 100 && runs.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 100));
        runs = (await h.reviews.listRuns({}, h.as(p))).runs;
      }
      assert.deepEqual(
        runs.map((r) => [r.optimizerId, runWord(r, 'trigger'), runWord(r, 'status')]),
        [[enabled, 'schedule', 'queued']],
      );
      const { optimizer: o } = await h.optimizers.getOptimizer({ optimizerId: enabled }, h.as(p));
      assert.equal(o?.nextReviewAt, new Date(h.now().getTime() - 1 + 6 * HOUR).toISOString());
    } finally {
      await bus.stop();
    }
  });

  test('while the workspace’s optimizer feature has ended no review is scheduled; when it is back the missed review runs once', async () => {
    const logger = createLogger('optimizer', 'silent');
    const handler = createScheduleHandler({ clock: () => h.now(), logger });
    const bus = createPgTransport({ pool: h.pool, logger });
    await bus.consume<ScheduleMessage>({
      name: 'optimizer-schedule',
      topic: SCHEDULE_TOPIC,
      handler,
      pollIntervalMs: 50,
    });
    try {
      const p = testPrincipal();
      const operator = { ...p, via: 'operator' as const, credentialId: 'operator:admin@example.com' };
      const other = testPrincipal();
      const ended = await optimizer(p, { cadenceHours: 6 });
      const running = await optimizer(other, { cadenceHours: 6 });
      const runsOf = async (who: Principal) => (await h.reviews.listRuns({}, h.as(who))).runs;

      assert.equal(
        (await h.optimizers.setWorkspaceFeature({ enabled: false }, h.as(operator))).changed,
        true,
      );
      assert.equal(
        (await h.optimizers.setWorkspaceFeature({ enabled: false }, h.as(operator))).changed,
        false,
      );
      // Two cadences pass without the feature: the other workspace's optimizer is reviewed, this one is not.
      h.advance(12 * HOUR + 1);
      await scheduleDue(h.pool, h.now());
      let others: ReviewRun[] = [];
      for (let i = 0; i < 100 && others.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 50));
        others = await runsOf(other);
      }
      assert.deepEqual(
        others.map((r) => [r.optimizerId, runWord(r, 'trigger')]),
        [[running, 'schedule']],
      );
      assert.deepEqual(await runsOf(p), []);
      const { optimizer: waiting } = await h.optimizers.getOptimizer({ optimizerId: ended }, h.as(p));
      assert.equal(
        waiting?.nextReviewAt,
        new Date(h.now().getTime() - 6 * HOUR - 1).toISOString(),
        'left due',
      );

      // A review put on the bus just before the feature ended is not queued either.
      const late: Delivery<ScheduleMessage> = {
        id: randomUUID(),
        topic: SCHEDULE_TOPIC,
        key: ended,
        payload: { optimizer_id: ended, workspace_id: p.workspaceId, due_at: h.now().toISOString() },
        headers: {},
        attempt: 1,
        enqueuedAt: h.now(),
      };
      await handler(late, {
        inTx: (work) => inTransaction(h.pool, work),
        signal: new AbortController().signal,
      });
      assert.deepEqual(await runsOf(p), []);

      assert.equal((await h.optimizers.setWorkspaceFeature({ enabled: true }, h.as(operator))).changed, true);
      await scheduleDue(h.pool, h.now());
      let mine: ReviewRun[] = [];
      for (let i = 0; i < 100 && mine.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 50));
        mine = await runsOf(p);
      }
      assert.deepEqual(
        mine.map((r) => [r.optimizerId, runWord(r, 'trigger'), runWord(r, 'status')]),
        [[ended, 'schedule', 'queued']],
      );
      // One review for the time it missed, then its cadence from now.
      const { optimizer: back } = await h.optimizers.getOptimizer({ optimizerId: ended }, h.as(p));
      assert.equal(back?.nextReviewAt, new Date(h.now().getTime() + 6 * HOUR).toISOString());
    } finally {
      await bus.stop();
    }
  });

  test('only an operator’s command switches the feature', async () => {
    const p = testPrincipal();
    for (const who of [
      p,
      { ...p, via: 'dashboard' as const },
      { ...p, via: 'operator' as const, role: 'editor' as const },
    ])
      await refused(
        h.optimizers.setWorkspaceFeature({ enabled: false }, h.as(who)),
        Code.PermissionDenied,
        /switching the optimizer feature is for the platform's operator \(npm run admin\); this caller has role (admin|editor) .* via (mcp|dashboard|operator)/,
      );
  });
});
