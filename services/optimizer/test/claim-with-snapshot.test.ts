/**
 * ClaimRunWithSnapshot: the claim and its snapshot in one call. A snapshot that cannot be read
 * leaves the run claimed, and the refusal names the claim (run_id, claim_token) in its details and
 * says until when it holds, so the caller can claim again with that token.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { RunStatus } from '@adsmcp/proto/optimizer/v1/reviews_pb';
import { REFUSAL_CODE_METADATA, refusalDetailsOf, refusalOf } from '@adsmcp/runtime/platform-read/refusal';
import { testPrincipal } from '@adsmcp/testkit/service-harness';
import { Code, ConnectError } from '@connectrpc/connect';
import { type ReviewHarness, startReviewHarness } from './review-harness.ts';

let h: ReviewHarness;

before(async () => {
  h = await startReviewHarness();
});

after(async () => {
  await h?.stop();
});

/** A queued review run of a new enabled optimizer of `p`'s workspace. */
async function queuedRun(p: ReturnType<typeof testPrincipal>): Promise<string> {
  const { optimizer } = await h.optimizers.saveOptimizer(
    {
      accountId: randomUUID(),
      name: 'Copy review',
      enabled: true,
      config: {
        campaignIds: ['cmp-1'],
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
      },
    },
    h.as(p),
  );
  const { run } = await h.reviews.requestReview({ optimizerId: optimizer?.optimizerId ?? '' }, h.as(p));
  return run?.runId ?? '';
}

test('a snapshot that cannot be read leaves the run claimed, and the refusal names its run_id and claim_token', async () => {
  const p = testPrincipal();
  const runId = await queuedRun(p);
  // The harness's optimizer has no upstream-proxy, so no snapshot can be read.
  const err = await h.snapshots.claimRunWithSnapshot({ runId }, h.as(p)).then(
    () => assert.fail('the claim answered without a snapshot read'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ConnectError, String(err));
  assert.equal(Code[err.code], Code[Code.Unavailable]);
  const details = refusalDetailsOf(err);
  const token = details.claim_token;
  assert.equal(typeof token, 'string');
  assert.deepEqual(details, { run_id: runId, claim_token: token });
  assert.equal(err.metadata.get(REFUSAL_CODE_METADATA), 'unavailable');
  const { run } = await h.reviews.getRun({ runId }, h.as(p));
  assert.equal(run?.state, RunStatus.CLAIMED);
  assert.deepEqual(refusalOf(err), {
    code: 'unavailable',
    message:
      'the performance snapshot could not be read (the optimizer cannot read the ad platform: it runs without ' +
      'UPSTREAM_PROXY_URL or OPTIMIZER_PRIVATE_KEY); the run stays claimed by you until ' +
      `${run?.claimExpiresAt}: call ads_claim_optimization_run again with claim_token ${token} to read the snapshot again`,
  });
  // The claim is the caller's: another claim is refused, one with the named token holds it again.
  await assert.rejects(h.reviews.claimRun({ runId }, h.as(p)), /already claimed/);
  const again = await h.reviews.claimRun({ runId, claimToken: String(token) }, h.as(p));
  assert.equal(again.claimToken, token);
});

test('a token the caller gives is the claim’s, in lower case, and a claim that fails is refused as it is', async () => {
  const p = testPrincipal();
  const runId = await queuedRun(p);
  const token = randomUUID().toUpperCase();
  const err = await h.snapshots.claimRunWithSnapshot({ runId, claimToken: token }, h.as(p)).then(
    () => assert.fail('the claim answered without a snapshot read'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ConnectError, String(err));
  assert.deepEqual(refusalDetailsOf(err), { run_id: runId, claim_token: token.toLowerCase() });
  // The claim itself refused: no claim stands, so the refusal names none.
  const other = await h.snapshots.claimRunWithSnapshot({ runId }, h.as(p)).then(
    () => assert.fail('a second claim was accepted'),
    (e: unknown) => ConnectError.from(e),
  );
  assert.equal(Code[other.code], Code[Code.FailedPrecondition]);
  assert.match(other.rawMessage, /already claimed/);
  assert.deepEqual(refusalDetailsOf(other), {});
});
