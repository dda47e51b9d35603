/**
 * The changes service's field rules are its proto's, checked by the service itself: the
 * operator's command or any other caller that is not the gateway gets the same refusal, naming
 * the field and the rule, before anything is read or written.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { AuditService } from '@adsmcp/proto/changes/v1/audit_pb';
import { BatchService } from '@adsmcp/proto/changes/v1/batches_pb';
import type { ChangeStatus } from '@adsmcp/proto/changes/v1/changes_pb';
import { ControlsService } from '@adsmcp/proto/changes/v1/controls_pb';
import { RevertService } from '@adsmcp/proto/changes/v1/revert_pb';
import { StandardsService } from '@adsmcp/proto/changes/v1/standards_pb';
import { WebhooksService } from '@adsmcp/proto/changes/v1/webhooks_pb';
import { migrateBus } from '@adsmcp/runtime/bus/outbox';
import { startServiceUnderTest, testPrincipal } from '@adsmcp/testkit/service-harness';
import { Code, ConnectError } from '@connectrpc/connect';
import { buildServer, SERVICE_NAME } from '../src/server.ts';
import { createSecretCipher } from '../src/webhooks/secret-cipher.ts';
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
    await refusal(svc.client.listChanges({ accountId: 'acct-1', limit: 5000, offset: 0 }, svc.as(operator))),
    '`account_id` must be a UUID (got "acct-1"); `limit` must be an integer from 1 to 200 (got 5000)',
  );
  // A status the enum lacks (a newer caller's value) would match nothing: refused, naming the words.
  assert.equal(
    await refusal(svc.client.listChanges({ state: 99 as ChangeStatus }, svc.as(operator))),
    'state must be one of prepared, approved, expired, rejected, applying, applied, failed (got 99)',
  );
  // Unset fields keep their defaults: 0 and "" are not refused.
  const all = await svc.client.listChanges({}, svc.as(operator));
  assert.equal(all.total, 0);
});

test('an apply request naming no change by its UUID, or a digest that is not one, is refused before anything is read', async () => {
  assert.equal(
    await refusal(svc.client.applyChange({ changeId: 'chg-1', digest: 'ABC', waitMs: 0 }, svc.as(operator))),
    '`change_id` must be a UUID (got "chg-1"); `digest` must match ^[0-9a-f]{64}$ (got "ABC")',
  );
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

test('account controls asked for an account that is not a UUID are refused naming the field', async () => {
  const controls = svc.clientOf(ControlsService);
  assert.equal(
    await refusal(controls.setSpendEnvelope({ accountId: 'acct-1', envelopeMicros: 1n }, svc.as(operator))),
    '`account_id` must be a UUID (got "acct-1")',
  );
  assert.equal(
    await refusal(controls.getEnvelopeUse({ changeId: 'chg-1' }, svc.as(operator))),
    '`change_id` must be a UUID (got "chg-1")',
  );
});

test('an audit page or batch beyond its bounds is refused naming the field and the rule', async () => {
  const audit = svc.clientOf(AuditService);
  assert.equal(
    await refusal(
      audit.listAuditEvents(
        { limit: 501, actorPrefixes: Array.from({ length: 101 }, (_, i) => `user:${i}`) },
        svc.as(operator),
      ),
    ),
    '`limit` must be an integer from 1 to 500 (got 501); `actor_prefixes` must have at most 100 items (got 101)',
  );
  assert.equal(
    await refusal(audit.appendAuditEvents({ events: [] }, svc.as(operator))),
    '`events` must have 1 to 500 items (got 0)',
  );
  assert.equal(
    await refusal(
      audit.appendAuditEvents(
        { events: [{ actor: 'a'.repeat(301), kind: 'change.approved' }] },
        svc.as(operator),
      ),
    ),
    '`events[0].actor` must be at most 300 characters (got 301)',
  );
});

test('a webhook call with a page or id out of its rules is refused before any webhook is read', async () => {
  // WebhooksService is served only with a secret cipher, as main.ts gives it.
  const hooks = await startServiceUnderTest({
    service: WebhooksService,
    name: SERVICE_NAME,
    migrations: fileURLToPath(new URL('../migrations', import.meta.url)),
    prepare: (p) => migrateBus(p, SERVICE_NAME),
    build: (deps) =>
      buildServer({
        ...deps,
        upstream: platform.upstream,
        webhooks: { cipher: createSecretCipher(randomBytes(32)), allowHosts: [] },
      }),
  });
  try {
    assert.equal(
      await refusal(hooks.client.listWebhookDeliveries({ limit: 201 }, hooks.as(operator))),
      '`limit` must be an integer from 1 to 200 (got 201)',
    );
    assert.equal(
      await refusal(hooks.client.deleteWebhook({ webhookId: 'hook-1' }, hooks.as(operator))),
      '`webhook_id` must be a UUID (got "hook-1")',
    );
  } finally {
    await hooks.stop();
  }
});

test('an ad batch planned straight to the service is held to the tool bounds, naming each nested field', async () => {
  const batches = svc.clientOf(BatchService);
  assert.equal(await refusal(batches.planAdBatch({}, svc.as(operator))), '`batch` is required');
  assert.equal(
    await refusal(
      batches.planAdBatch(
        {
          batch: {
            accountId: platform.accountId,
            itemId: 'item-1',
            itemRevision: 0,
            campaignName: 'Spring',
            budgetAmount: 50,
            budgetType: 'daily',
            objective: 'conversions',
            bidMicros: 800_000n,
            countries: ['US'],
          },
        },
        svc.as(operator),
      ),
    ),
    '`batch.item_id` must be a UUID (got "item-1"); `batch.item_revision` must be an integer of at least 1 (got 0); ' +
      '`batch.objective` must be one of clicks, impressions (got "conversions")',
  );
  assert.equal(
    await refusal(
      batches.planWorkbook({ accountId: platform.accountId, workbookBase64: '' }, svc.as(operator)),
    ),
    '`workbook_base64` must be 1 to 800000 characters (got 0)',
  );
});

test('a revert whose change id or reason breaks its rule is refused naming both', async () => {
  assert.equal(
    await refusal(
      svc
        .clientOf(RevertService)
        .prepareRevert({ changeId: 'chg-1', reason: 'r'.repeat(501) }, svc.as(operator)),
    ),
    '`change_id` must be a UUID (got "chg-1"); `reason` must be at most 500 characters (got 501)',
  );
});
