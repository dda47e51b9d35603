/**
 * The changes service's field rules are its proto's, checked by the service itself: the
 * operator's command or any other caller that is not the gateway gets the same refusal, naming
 * the field and the rule, before anything is read or written.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { StandardsService } from '@adsmcp/proto/changes/v1/standards_pb';
import { testPrincipal } from '@adsmcp/testkit/service-harness';
import { Code, ConnectError } from '@connectrpc/connect';
import { type ChangesUnderTest, startChangesService } from './changes-under-test.ts';
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

test('a list of changes out of the contract is refused naming each field and its rule, not cut down', async () => {
  assert.equal(
    await refusal(
      svc.client.listChanges(
        { status: 'done', accountId: 'acct-1', limit: 5000, offset: 0 },
        svc.as(operator),
      ),
    ),
    '`status` must be one of prepared, approved, expired, rejected, applying, applied, failed (got "done"); ' +
      '`account_id` must be a UUID (got "acct-1"); `limit` must be an integer from 1 to 200 (got 5000)',
  );
  // Unset fields keep their defaults: 0 and "" are not refused.
  const all = await svc.client.listChanges({}, svc.as(operator));
  assert.equal(all.total, 0);
});

test('a standard saved straight to the service is held to the same bounds as the tool', async () => {
  const standards = svc.clientOf(StandardsService);
  assert.equal(
    await refusal(
      standards.saveAccountStandard(
        { accountId: platform.accountId, name: 'x'.repeat(201), kind: 'rule', data: {} },
        svc.as(operator),
      ),
    ),
    '`name` must be 1 to 200 characters (got 201); `kind` must be one of standard, template (got "rule")',
  );
  assert.match(
    await refusal(
      standards.listAccountStandards({ accountId: platform.accountId, limit: 0 }, svc.as(operator)),
    ),
    /^`limit` must be an integer from 1 to 100 \(got 0\)$/,
  );
});
