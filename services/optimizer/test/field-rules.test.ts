/**
 * The optimizer's field rules are its proto's, checked by the service itself: a caller that is not
 * the gateway (the operator's command, a worker, any client holding a token) gets the same
 * refusal, naming the field and the rule, and nothing is stored.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { ReviewService, type RunStatus } from '@adsmcp/proto/optimizer/v1/reviews_pb';
import { Code, ConnectError } from '@connectrpc/connect';
import { principal, startService, type TestService } from './service.ts';

let svc: TestService;

before(async () => {
  svc = await startService();
});

after(async () => {
  await svc?.stop();
});

const config = {
  campaignIds: ['cmp-1'],
  goal: 'cpc',
  cadenceHours: 24,
  windowHours: 168,
  reportingDelayHours: 48,
  minImpressions: 1000,
  minClicks: 50,
  minConversions: 5,
  maxAdsPerCampaign: 3,
  reviewHours: 24,
  publishHours: 4,
  allowedDomains: ['example.com'],
};

async function refusal(call: Promise<unknown>): Promise<ConnectError> {
  const err = await call.then(
    () => assert.fail('the call was not refused'),
    (e: unknown) => ConnectError.from(e),
  );
  assert.equal(Code[err.code], Code[Code.InvalidArgument], err.rawMessage);
  return err;
}

test('a save out of the configuration bounds is refused naming each field and its rule, and stores nothing', async () => {
  const accountId = randomUUID();
  const err = await refusal(
    svc.client.saveOptimizer(
      {
        accountId,
        name: 'Copy review',
        enabled: true,
        config: {
          ...config,
          cadenceHours: 1,
          goal: 'roas',
          campaignIds: Array.from({ length: 21 }, (_, i) => `cmp-${i}`),
          allowedDomains: ['example.com', 'example.com'],
        },
      },
      svc.as(principal()),
    ),
  );
  assert.equal(
    err.rawMessage,
    [
      '`config.campaign_ids` must have 1 to 20 items (got 21)',
      '`config.goal` must be one of cpc, cpa, ctr (got "roas")',
      '`config.cadence_hours` must be an integer from 6 to 720 (got 1)',
      '`config.allowed_domains[1]` repeats an earlier item; items must be unique',
    ].join('; '),
  );
  const listed = await svc.client.listOptimizers({ accountId }, svc.as(principal()));
  assert.equal(listed.total, 0);
});

test('a page beyond the list bounds is refused, not cut down', async () => {
  const err = await refusal(svc.client.listOptimizers({ limit: 500 }, svc.as(principal())));
  assert.equal(err.rawMessage, '`limit` must be an integer from 1 to 100 (got 500)');
  const offset = await refusal(svc.client.listOptimizers({ offset: 100_001 }, svc.as(principal())));
  assert.equal(offset.rawMessage, '`offset` must be an integer from 0 to 100000 (got 100001)');
});

test('a review run or proposal named by an id that is not a UUID, or a run status that does not exist, is refused', async () => {
  const reviews = svc.clientOf(ReviewService);
  const runs = await refusal(reviews.listRuns({ optimizerId: 'opt-1' }, svc.as(principal())));
  assert.equal(runs.rawMessage, '`optimizer_id` must be a UUID (got "opt-1")');
  const status = await refusal(reviews.listRuns({ state: 99 as RunStatus }, svc.as(principal())));
  assert.equal(
    status.rawMessage,
    'status must be one of queued, claimed, completed, failed, cancelled (got 99)',
  );
  const proposal = await refusal(reviews.getProposal({ proposalId: 'p-1' }, svc.as(principal())));
  assert.equal(proposal.rawMessage, '`proposal_id` must be a UUID (got "p-1")');
});
