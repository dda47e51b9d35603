import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import {
  type Optimizer,
  type OptimizerConfigSchema,
  OptimizerService,
  type SaveOptimizerRequestSchema,
} from '@adsmcp/proto/optimizer/v1/optimizer_pb';
import type { Principal } from '@adsmcp/runtime/principal';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { principal, startService, type TestService } from './service.ts';

let svc: TestService;

before(async () => {
  svc = await startService();
});

after(async () => {
  await svc?.stop();
});

type ConfigInit = MessageInitShape<typeof OptimizerConfigSchema>;
type SaveInit = Omit<MessageInitShape<typeof SaveOptimizerRequestSchema>, '$typeName'>;

const config = (patch: Partial<ConfigInit> = {}): ConfigInit => ({
  campaignIds: ['cmp-1', 'cmp-2'],
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
  ...patch,
});

const HOUR = 3_600_000;

/** Asserts that `call` fails with `code` and a message matching `message`. */
async function refused(call: Promise<unknown>, code: Code, message: RegExp): Promise<void> {
  await assert.rejects(call, (err: unknown) => {
    assert.ok(err instanceof ConnectError, String(err));
    assert.equal(Code[err.code], Code[code], err.message);
    assert.match(err.rawMessage, message);
    return true;
  });
}

async function save(p: Principal, req: Partial<SaveInit> = {}): Promise<Optimizer> {
  const res = await svc.client.saveOptimizer(
    { accountId: randomUUID(), name: 'Copy review', config: config(), enabled: true, ...req },
    svc.as(p),
  );
  assert.ok(res.optimizer);
  return res.optimizer;
}

describe('saving and reading an optimizer', () => {
  test('a new optimizer is stored at revision 1, active, with its first review one cadence away', async () => {
    const admin = principal();
    const accountId = randomUUID();
    const res = await svc.client.saveOptimizer(
      {
        accountId,
        name: 'Copy review',
        config: config({
          goal: 'cpa',
          conversionGoalId: 'purchase',
          target: 12.5,
          brandInstructions: 'Calm.',
        }),
        enabled: true,
      },
      svc.as(admin),
    );
    assert.equal(res.created, true);
    const o = res.optimizer;
    assert.ok(o);
    assert.equal(o.accountId, accountId);
    assert.equal(o.revision, 1);
    assert.equal(o.status, 'active');
    assert.equal(o.enabled, true);
    assert.equal(o.pausedAt, undefined);
    assert.equal(o.createdAt, svc.now().toISOString());
    assert.equal(o.nextReviewAt, new Date(svc.now().getTime() + 24 * HOUR).toISOString());
    assert.equal(o.config?.target, 12.5);
    assert.equal(o.config?.conversionGoalId, 'purchase');
    assert.equal(o.config?.brandInstructions, 'Calm.');

    const got = await svc.client.getOptimizer({ optimizerId: o.optimizerId }, svc.as(admin));
    assert.deepEqual(got.optimizer, o);
  });

  test('optional configuration fields that were not given stay absent', async () => {
    const o = await save(principal());
    assert.equal(o.config?.target, undefined);
    assert.equal(o.config?.conversionGoalId, undefined);
    assert.equal(o.config?.brandInstructions, undefined);
  });

  test('an optimizer saved disabled is paused with no review due', async () => {
    const o = await save(principal(), { enabled: false });
    assert.equal(o.status, 'paused');
    assert.equal(o.pausedAt, svc.now().toISOString());
    assert.equal(o.nextReviewAt, undefined);
  });

  test('an update at the current revision replaces the optimizer and moves to the next revision', async () => {
    const admin = principal();
    const o = await save(admin);
    svc.advance(HOUR);
    const res = await svc.client.saveOptimizer(
      {
        optimizerId: o.optimizerId,
        expectedRevision: 1,
        accountId: o.accountId,
        name: 'Renamed',
        config: config({ cadenceHours: 48, allowedDomains: ['example.com', 'shop.example.com'] }),
        enabled: true,
      },
      svc.as(admin),
    );
    assert.equal(res.created, false);
    const updated = res.optimizer;
    assert.ok(updated);
    assert.equal(updated.optimizerId, o.optimizerId);
    assert.equal(updated.revision, 2);
    assert.equal(updated.name, 'Renamed');
    assert.deepEqual(updated.config?.allowedDomains, ['example.com', 'shop.example.com']);
    assert.equal(updated.createdAt, o.createdAt);
    assert.equal(updated.updatedAt, svc.now().toISOString());
    assert.equal(updated.nextReviewAt, new Date(svc.now().getTime() + 48 * HOUR).toISOString());
    const got = await svc.client.getOptimizer({ optimizerId: o.optimizerId }, svc.as(admin));
    assert.deepEqual(got.optimizer, updated);
  });

  test('a stale revision is refused with the current revision, and nothing changes', async () => {
    const admin = principal();
    const o = await save(admin);
    const update = { optimizerId: o.optimizerId, accountId: o.accountId, config: config(), enabled: true };
    await save(admin, { ...update, expectedRevision: 1, name: 'Second' });
    await refused(
      save(admin, { ...update, expectedRevision: 1, name: 'Lost update' }),
      Code.Aborted,
      /optimizer is at revision 2; read it again and retry with expected_revision 2/,
    );
    const got = await svc.client.getOptimizer({ optimizerId: o.optimizerId }, svc.as(admin));
    assert.equal(got.optimizer?.name, 'Second');
    assert.equal(got.optimizer?.revision, 2);
  });

  test('of two concurrent updates from the same revision, exactly one wins', async () => {
    const admin = principal();
    const o = await save(admin);
    const update = (name: string) =>
      save(admin, {
        optimizerId: o.optimizerId,
        expectedRevision: 1,
        accountId: o.accountId,
        config: config(),
        enabled: true,
        name,
      });
    const results = await Promise.allSettled([update('A'), update('B'), update('C')]);
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
    for (const r of results.filter((r) => r.status === 'rejected')) {
      assert.ok(r.reason instanceof ConnectError);
      assert.equal(r.reason.code, Code.Aborted);
    }
  });

  test('an update without expected_revision is refused', async () => {
    const admin = principal();
    const o = await save(admin);
    await refused(
      save(admin, { optimizerId: o.optimizerId, accountId: o.accountId }),
      Code.InvalidArgument,
      /expected_revision is required when updating/,
    );
  });

  test('an update may not move an optimizer to another account', async () => {
    const admin = principal();
    const o = await save(admin);
    await refused(
      save(admin, { optimizerId: o.optimizerId, expectedRevision: 1, accountId: randomUUID() }),
      Code.InvalidArgument,
      /account_id cannot change/,
    );
  });

  test('an update of an optimizer that does not exist is refused as not found', async () => {
    await refused(
      save(principal(), { optimizerId: randomUUID(), expectedRevision: 1 }),
      Code.NotFound,
      /no optimizer .* in this workspace/,
    );
  });

  test('a save without a configuration is refused, and nothing is stored', async () => {
    const admin = principal();
    await refused(save(admin, { config: undefined }), Code.InvalidArgument, /^`config` is required$/);
    const list = await svc.client.listOptimizers({}, svc.as(admin));
    assert.equal(list.total, 0);
  });

  test('a name longer than the table holds is an invalid argument, not an internal error', async () => {
    // The gateway refuses it first; this is a caller that skipped the gateway, held to the proto's rule.
    await refused(
      save(principal(), { name: 'n'.repeat(201) }),
      Code.InvalidArgument,
      /^`name` must be 1 to 200 characters \(got 201\)$/,
    );
  });

  test('UUIDs are case-insensitive: an update naming its optimizer and account in upper case updates the same optimizer', async () => {
    const admin = principal();
    const o = await save(admin);
    const updated = await save(admin, {
      optimizerId: o.optimizerId.toUpperCase(),
      accountId: o.accountId.toUpperCase(),
      expectedRevision: 1,
      name: 'Renamed',
    });
    assert.equal(updated.optimizerId, o.optimizerId);
    assert.equal(updated.accountId, o.accountId);
    assert.equal(updated.revision, 2);
    const got = await svc.client.getOptimizer({ optimizerId: o.optimizerId.toUpperCase() }, svc.as(admin));
    assert.equal(got.optimizer?.name, 'Renamed');
    const listed = await svc.client.listOptimizers({ accountId: o.accountId.toUpperCase() }, svc.as(admin));
    assert.deepEqual(
      listed.optimizers.map((x) => x.optimizerId),
      [o.optimizerId],
    );
  });

  test('a name counts characters as code points: 200 emoji are 200 characters and are stored', async () => {
    const o = await save(principal(), { name: '😀'.repeat(200) });
    assert.equal([...o.name].length, 200);
  });

  test('reading an optimizer id that is not a UUID is an invalid argument, not an internal error', async () => {
    await refused(
      svc.client.getOptimizer({ optimizerId: 'nope' }, svc.as(principal())),
      Code.InvalidArgument,
      /`optimizer_id` must be a UUID/,
    );
  });
});

describe('pausing', () => {
  test('pausing stops the schedule: status paused, enabled false, paused_at now, next revision', async () => {
    const admin = principal();
    const o = await save(admin);
    svc.advance(2 * HOUR);
    const res = await svc.client.pauseOptimizer({ optimizerId: o.optimizerId }, svc.as(admin));
    const paused = res.optimizer;
    assert.ok(paused);
    assert.equal(paused.status, 'paused');
    assert.equal(paused.enabled, false);
    assert.equal(paused.pausedAt, svc.now().toISOString());
    assert.equal(paused.nextReviewAt, undefined);
    assert.equal(paused.revision, 2);
    const got = await svc.client.getOptimizer({ optimizerId: o.optimizerId }, svc.as(admin));
    assert.deepEqual(got.optimizer, paused);
  });

  test('pausing a paused optimizer returns it unchanged', async () => {
    const admin = principal();
    const o = await save(admin);
    const first = await svc.client.pauseOptimizer({ optimizerId: o.optimizerId }, svc.as(admin));
    svc.advance(HOUR);
    const second = await svc.client.pauseOptimizer({ optimizerId: o.optimizerId }, svc.as(admin));
    assert.deepEqual(second.optimizer, first.optimizer);
  });

  test('a paused optimizer saved enabled at its current revision is active again', async () => {
    const admin = principal();
    const o = await save(admin);
    await svc.client.pauseOptimizer({ optimizerId: o.optimizerId }, svc.as(admin));
    const resumed = await save(admin, {
      optimizerId: o.optimizerId,
      expectedRevision: 2,
      accountId: o.accountId,
      enabled: true,
    });
    assert.equal(resumed.status, 'active');
    assert.equal(resumed.pausedAt, undefined);
    assert.equal(resumed.revision, 3);
  });

  test('pausing an optimizer that does not exist is refused as not found', async () => {
    await refused(
      svc.client.pauseOptimizer({ optimizerId: randomUUID() }, svc.as(principal())),
      Code.NotFound,
      /no optimizer/,
    );
  });
});

describe('listing', () => {
  test('lists newest first with the total and the next offset, page by page', async () => {
    const admin = principal();
    const saved: Optimizer[] = [];
    for (let i = 0; i < 5; i++) {
      saved.push(await save(admin, { name: `O${i}` }));
      svc.advance(1000);
    }
    const newestFirst = saved.map((o) => o.optimizerId).reverse();
    const first = await svc.client.listOptimizers({ limit: 2 }, svc.as(admin));
    assert.equal(first.total, 5);
    assert.equal(first.nextOffset, 2);
    assert.deepEqual(
      first.optimizers.map((o) => o.optimizerId),
      newestFirst.slice(0, 2),
    );
    const second = await svc.client.listOptimizers({ limit: 2, offset: 2 }, svc.as(admin));
    assert.deepEqual(
      second.optimizers.map((o) => o.optimizerId),
      newestFirst.slice(2, 4),
    );
    assert.equal(second.nextOffset, 4);
    const last = await svc.client.listOptimizers({ limit: 2, offset: 4 }, svc.as(admin));
    assert.deepEqual(
      last.optimizers.map((o) => o.optimizerId),
      newestFirst.slice(4),
    );
    assert.equal(last.nextOffset, undefined);
    const beyond = await svc.client.listOptimizers({ offset: 10 }, svc.as(admin));
    assert.deepEqual(beyond.optimizers, []);
    assert.equal(beyond.total, 5);
  });

  test('the page size defaults to 20', async () => {
    const admin = principal();
    for (let i = 0; i < 21; i++) await save(admin);
    const page = await svc.client.listOptimizers({}, svc.as(admin));
    assert.equal(page.optimizers.length, 20);
    assert.equal(page.total, 21);
    assert.equal(page.nextOffset, 20);
  });

  test('an account filter lists only that account’s optimizers', async () => {
    const admin = principal();
    const accountId = randomUUID();
    const mine = await save(admin, { accountId });
    await save(admin);
    const page = await svc.client.listOptimizers({ accountId }, svc.as(admin));
    assert.deepEqual(
      page.optimizers.map((o) => o.optimizerId),
      [mine.optimizerId],
    );
    assert.equal(page.total, 1);
  });
});

describe('workspaces and access', () => {
  test('another workspace can neither read, list, update nor pause an optimizer', async () => {
    const owner = principal();
    const o = await save(owner);
    const stranger = principal();
    await refused(
      svc.client.getOptimizer({ optimizerId: o.optimizerId }, svc.as(stranger)),
      Code.NotFound,
      /no optimizer/,
    );
    await refused(
      svc.client.pauseOptimizer({ optimizerId: o.optimizerId }, svc.as(stranger)),
      Code.NotFound,
      /no optimizer/,
    );
    await refused(
      save(stranger, { optimizerId: o.optimizerId, expectedRevision: 1, accountId: o.accountId }),
      Code.NotFound,
      /no optimizer/,
    );
    const list = await svc.client.listOptimizers({ accountId: o.accountId }, svc.as(stranger));
    assert.equal(list.total, 0);
    const got = await svc.client.getOptimizer({ optimizerId: o.optimizerId }, svc.as(owner));
    assert.deepEqual(got.optimizer, o);
  });

  test('a viewer may read optimizers but not save or pause them', async () => {
    const admin = principal();
    const o = await save(admin);
    const viewer = principal({ workspaceId: admin.workspaceId, role: 'viewer' });
    await refused(save(viewer), Code.PermissionDenied, /needs the write scope and the admin or editor role/);
    await refused(
      svc.client.pauseOptimizer({ optimizerId: o.optimizerId }, svc.as(viewer)),
      Code.PermissionDenied,
      /pausing an optimizer needs/,
    );
    const got = await svc.client.getOptimizer({ optimizerId: o.optimizerId }, svc.as(viewer));
    assert.equal(got.optimizer?.status, 'active');
    const list = await svc.client.listOptimizers({}, svc.as(viewer));
    assert.equal(list.total, 1);
  });

  test('a credential without the write scope may not save, even an admin’s', async () => {
    await refused(save(principal({ scopes: ['read'] })), Code.PermissionDenied, /write scope/);
  });

  test('an editor may save and pause', async () => {
    const editor = principal({ role: 'editor' });
    const o = await save(editor);
    const paused = await svc.client.pauseOptimizer({ optimizerId: o.optimizerId }, svc.as(editor));
    assert.equal(paused.optimizer?.status, 'paused');
  });

  test('a credential without the read scope may not read', async () => {
    await refused(
      svc.client.listOptimizers({}, svc.as(principal({ scopes: ['write'] }))),
      Code.PermissionDenied,
      /read scope/,
    );
  });

  test('a call without a principal token is unauthenticated', async () => {
    const anonymous = createClient(OptimizerService, createGrpcTransport({ baseUrl: svc.url }));
    await refused(anonymous.listOptimizers({}), Code.Unauthenticated, /missing principal token/);
    await refused(
      anonymous.saveOptimizer({ accountId: randomUUID(), name: 'x', config: config(), enabled: true }),
      Code.Unauthenticated,
      /missing principal token/,
    );
  });
});
