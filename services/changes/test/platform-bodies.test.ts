/**
 * A change's body is held to the platform body its prepare tool publishes by the changes service
 * itself: the operator's command, a worker or any caller that is not the gateway gets the refusal
 * an agent gets from the tool, naming `body.<field>` and the rule, and nothing is recorded.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { PrepareChangeRequestSchema } from '@adsmcp/proto/changes/v1/changes_pb';
import { testPrincipal } from '@adsmcp/testkit/service-harness';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { type ChangesUnderTest, creating, startChangesService } from './changes-under-test.ts';
import { type LivePlatform, startLivePlatform } from './live-platform.ts';

const workspaceId = randomUUID();
const operator = testPrincipal({ workspaceId, via: 'operator' });
let platform: LivePlatform;
let svc: ChangesUnderTest;

before(async () => {
  platform = await startLivePlatform(workspaceId);
  svc = await startChangesService(platform);
});

after(async () => {
  await svc?.stop();
  await platform?.stop();
});

async function refusal(call: Promise<unknown>): Promise<string> {
  const err = await call.then(
    () => assert.fail('the call was not refused'),
    (e: unknown) => ConnectError.from(e),
  );
  assert.equal(Code[err.code], Code[Code.InvalidArgument], err.rawMessage);
  return err.rawMessage;
}

async function recordedChanges(): Promise<number> {
  const { rows } = await svc.pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM changes WHERE workspace_id = $1',
    [workspaceId],
  );
  return rows[0]?.n ?? -1;
}

type PrepareInit = MessageInitShape<typeof PrepareChangeRequestSchema>;

test('an ad update over the bounds its tool publishes, sent straight to PrepareChange, is refused naming each field and rule, and nothing is recorded', async () => {
  const [ad] = await platform.ads();
  assert.ok(ad !== undefined, 'the sandbox account has an ad');
  const request: PrepareInit = {
    accountId: platform.accountId,
    tool: 'ads_update_ad',
    objectType: 'ad',
    effect: 'update',
    operation: {
      method: 'POST',
      path: `/ads/${ad.id}`,
      bodyJson: JSON.stringify({ name: 'x'.repeat(1001), creative: { title: 't'.repeat(51) } }),
    },
    targetPath: `/ads/${ad.id}`,
  };
  const words =
    '`body.name` must be 3 to 1000 characters (got 1001); `body.creative.title` must be 1 to 50 characters (got 51)';
  assert.equal(await refusal(svc.client.prepareChange(request, svc.as(operator))), words);
  // A preflight of the same change says the same.
  assert.equal(await refusal(svc.client.planChange({ change: request }, svc.as(operator))), words);
  assert.equal(await recordedChanges(), 0);
});

test('an ad group create with a field its tool does not take, or a bid over the largest, is refused by name', async () => {
  const create = (body: Record<string, unknown>): PrepareInit =>
    creating(platform.accountId, 'ads_create_ad_group', 'ad_group', '/ad_groups', body);
  const body = {
    campaign_id: 'cmp_0123456789abcdef',
    name: 'Spring Sale — Group C',
    status: 'paused',
    bidding_config: {
      billing_event_type: 'click',
      strategy: 'fixed_bid',
      max_bid_micros: 30_400_000_000_001,
    },
    countries: ['US'],
  };
  assert.equal(
    await refusal(svc.client.prepareChange(create(body), svc.as(operator))),
    'unknown property of `body` `countries`; allowed: campaign_id, name, description, context_hints, status, ' +
      'bidding_config, product_set, landing_page_configuration; `body.bidding_config.max_bid_micros` must be an ' +
      'integer from 1 to 30400000000000 (got 30400000000001)',
  );
  assert.equal(await recordedChanges(), 0);
});
