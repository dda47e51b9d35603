/**
 * The marketing item lists' field rules are their proto's, checked by the service itself: a caller
 * that is not the gateway gets the same refusal, naming the field and the rule, not a page cut
 * down or a filter that silently matches nothing.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { AssetService } from '@adsmcp/proto/marketing/v1/assets_pb';
import { CompetitorService } from '@adsmcp/proto/marketing/v1/competitors_pb';
import { Code, ConnectError } from '@connectrpc/connect';
import { principal, type RunningService, startService } from './service.ts';

let svc: RunningService;

before(async () => {
  svc = await startService();
});

after(async () => {
  await svc?.stop();
});

async function refusal(call: Promise<unknown>): Promise<string> {
  const err = await call.then(
    () => assert.fail('the call was not refused'),
    (e: unknown) => ConnectError.from(e),
  );
  assert.equal(Code[err.code], Code[Code.InvalidArgument], err.rawMessage);
  return err.rawMessage;
}

test('a list of marketing items out of its bounds is refused naming each field and its rule', async () => {
  assert.equal(
    await refusal(
      svc.client.listMarketingItems(
        { kind: 'poster', tag: 't'.repeat(101), limit: 1000 },
        svc.as(principal()),
      ),
    ),
    '`kind` must be one of brand, brief, playbook, inspiration, batch, creative (got "poster"); ' +
      '`tag` must be at most 100 characters (got 101); `limit` must be an integer from 1 to 100 (got 1000)',
  );
  assert.equal(
    await refusal(svc.client.getMarketingContext({ offset: -1 }, svc.as(principal()))),
    '`offset` must be an integer from 0 to 100000 (got -1)',
  );
  const page = await svc.client.listMarketingItems({ kind: 'brief', limit: 100 }, svc.as(principal()));
  assert.equal(page.total, 0);
});

test('competitor and campaign asset pages beyond their bounds are refused, not cut down', async () => {
  assert.equal(
    await refusal(svc.clientOf(CompetitorService).listCompetitorSources({ limit: 101 }, svc.as(principal()))),
    '`limit` must be an integer from 1 to 100 (got 101)',
  );
  assert.equal(
    await refusal(
      svc
        .clientOf(AssetService)
        .listCampaignAssets(
          { accountId: '3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90', offset: 100_001 },
          svc.as(principal()),
        ),
    ),
    '`offset` must be an integer from 0 to 100000 (got 100001)',
  );
});
