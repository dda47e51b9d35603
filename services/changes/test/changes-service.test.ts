/** The changes service over real gRPC and PostgreSQL: the lifecycle rules a change obeys. */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ChangesService } from '@adsmcp/proto/changes/v1/changes_pb';
import { UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { migrateBus } from '@adsmcp/runtime/bus/outbox';
import type { Pool } from '@adsmcp/runtime/db';
import type { Principal } from '@adsmcp/runtime/principal';
import { createPrincipalSigner, generatePrincipalKeys } from '@adsmcp/runtime/principal';
import { createServiceClient } from '@adsmcp/runtime/service-client';
import { as, type ServiceUnderTest, startServiceUnderTest } from '@adsmcp/testkit/service-harness';
import { type Client, Code, ConnectError } from '@connectrpc/connect';
import { digestOf } from '../src/domain/change.ts';
import { buildServer, ISSUER, SERVICE_NAME } from '../src/server.ts';
import { insertChange } from '../src/store/change-store.ts';

let svc: ServiceUnderTest<typeof ChangesService>;
let pool: Pool;
let client: Client<typeof ChangesService>;

const workspace = randomUUID();
const account = randomUUID();
const person = (over: Partial<Principal> = {}): Principal => ({
  workspaceId: workspace,
  credentialId: 'cred',
  userId: randomUUID(),
  role: 'editor',
  scopes: ['read', 'write'],
  via: 'mcp',
  ...over,
});
const agent = person();
const reviewer = person({ via: 'dashboard', credentialId: 'dashboard:x' });

async function code(p: Promise<unknown>): Promise<{ code: Code; message: string } | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    const e = ConnectError.from(err);
    return { code: e.code, message: e.rawMessage };
  }
}

const body = { name: 'New name', status: 'paused' };
/**
 * A prepared change, recorded as PrepareChange records one after planning it against the live ad
 * (planning reads the platform: the end-to-end tests prove it through the real upstream-proxy).
 */
async function prepare(p: Principal = agent) {
  const op = { method: 'POST', path: '/ads/ad_1', bodyJson: JSON.stringify(body) };
  const row = await insertChange(pool, {
    change_id: randomUUID(),
    workspace_id: p.workspaceId,
    account_id: account,
    tool: 'ads_update_ad',
    summary: 'Update ad 1: name → New name; status → paused',
    method: op.method,
    path: op.path,
    body_json: op.bodyJson,
    digest: digestOf(op),
    target_path: '/ads/ad_1',
    target_before_json: JSON.stringify({ id: 'ad_1', name: 'Old', status: 'active', revision: 3 }),
    prepared_by: `user:${p.userId} via ${p.via} (${p.credentialId})`,
  });
  return (await client.getChange({ changeId: row.change_id }, as(p))).change as NonNullable<
    Awaited<ReturnType<typeof client.getChange>>['change']
  >;
}

/** Nothing listens here: a test that reached the platform would fail with Unavailable. */
const NO_PLATFORM = 'http://127.0.0.1:9';

before(async () => {
  const signer = await createPrincipalSigner((await generatePrincipalKeys()).privateKeyPem, ISSUER);
  svc = await startServiceUnderTest({
    service: ChangesService,
    name: SERVICE_NAME,
    migrations: fileURLToPath(new URL('../migrations', import.meta.url)),
    prepare: (p) => migrateBus(p, SERVICE_NAME),
    build: (deps) =>
      buildServer({
        ...deps,
        upstream: createServiceClient(UpstreamService, NO_PLATFORM, 'upstream-proxy', signer),
      }),
  });
  pool = svc.pool;
  client = svc.client;
});

after(async () => {
  await svc?.stop();
});

describe('prepare', () => {
  test('refuses a viewer, a path that is not a platform path, a body that is not an object and an unknown object, before reading the platform', async () => {
    const request = (over: Record<string, unknown> = {}, op: Record<string, unknown> = {}) =>
      client.prepareChange(
        {
          accountId: account,
          tool: 'ads_update_ad',
          objectType: 'ad',
          effect: 'update',
          operation: { method: 'POST', path: '/ads/ad_1', bodyJson: '{"name":"New"}', ...op },
          targetPath: '/ads/ad_1',
          ...over,
        },
        as(agent),
      );
    const viewer = await code(
      client.prepareChange({ accountId: account, tool: 'ads_update_ad' }, as(person({ role: 'viewer' }))),
    );
    assert.equal(viewer?.code, Code.PermissionDenied);
    const bad = await code(request({}, { path: 'https://evil.example/x' }));
    assert.equal(bad?.code, Code.InvalidArgument);
    assert.match(bad?.message ?? '', /operation.path/);
    const notObject = await code(request({}, { bodyJson: '[1]' }));
    assert.match(notObject?.message ?? '', /body_json must be a JSON object/);
    const unknownObject = await code(request({ objectType: 'planet' }));
    assert.match(unknownObject?.message ?? '', /object_type must be one of ad/);
    const unknownEffect = await code(request({ effect: 'explode' }));
    assert.match(unknownEffect?.message ?? '', /effect for ad must be one of update, archive/);
    // Each was refused by its own rule, not because the platform (which is not there) was reached.
    for (const e of [bad, notObject, unknownObject, unknownEffect])
      assert.equal(e?.code, Code.InvalidArgument);
  });
});

describe('approval belongs to people', () => {
  test('an MCP client cannot approve or reject, whatever its role', async () => {
    const c = await prepare();
    for (const p of [agent, person({ role: 'admin' })]) {
      const denied = await code(client.approveChange({ changeId: c.changeId, digest: c.digest }, as(p)));
      assert.equal(denied?.code, Code.PermissionDenied);
      assert.match(denied?.message ?? '', /approved or rejected by a person in the dashboard/);
      assert.equal(
        (await code(client.rejectChange({ changeId: c.changeId, reason: 'no' }, as(p))))?.code,
        Code.PermissionDenied,
      );
    }
    const { change } = await client.getChange({ changeId: c.changeId }, as(agent));
    assert.equal(change?.status, 'prepared');
  });

  test('a person approves exactly the digest they reviewed, once', async () => {
    const c = await prepare();
    const wrong = await code(
      client.approveChange({ changeId: c.changeId, digest: 'a'.repeat(64) }, as(reviewer)),
    );
    assert.equal(wrong?.code, Code.FailedPrecondition);
    const { change } = await client.approveChange({ changeId: c.changeId, digest: c.digest }, as(reviewer));
    assert.equal(change?.status, 'approved');
    assert.match(change?.approvedBy ?? '', /via dashboard/);
    const again = await code(client.approveChange({ changeId: c.changeId, digest: c.digest }, as(reviewer)));
    assert.equal(again?.code, Code.FailedPrecondition);
  });

  test('a viewer signed in to the dashboard cannot approve', async () => {
    const c = await prepare();
    const denied = await code(
      client.approveChange(
        { changeId: c.changeId, digest: c.digest },
        as(person({ via: 'dashboard', role: 'viewer' })),
      ),
    );
    assert.equal(denied?.code, Code.PermissionDenied);
  });
});

describe('apply', () => {
  test('refuses a change that is not approved, and one that was rejected', async () => {
    const c = await prepare();
    const early = await code(client.applyChange({ changeId: c.changeId, digest: '', waitMs: 0 }, as(agent)));
    assert.equal(early?.code, Code.FailedPrecondition);
    assert.match(early?.message ?? '', /not approved yet/);
    await client.rejectChange({ changeId: c.changeId, reason: 'wrong ad' }, as(reviewer));
    const rejected = await code(
      client.applyChange({ changeId: c.changeId, digest: '', waitMs: 0 }, as(agent)),
    );
    assert.match(rejected?.message ?? '', /rejected/);
  });

  test('moves an approved change to applying and queues exactly one apply message in the same commit', async () => {
    const c = await prepare();
    await client.approveChange({ changeId: c.changeId, digest: c.digest }, as(reviewer));
    const wrongDigest = await code(
      client.applyChange({ changeId: c.changeId, digest: 'b'.repeat(64), waitMs: 0 }, as(agent)),
    );
    assert.equal(wrongDigest?.code, Code.FailedPrecondition);
    const { change } = await client.applyChange(
      { changeId: c.changeId, digest: c.digest, waitMs: 0 },
      as(agent),
    );
    assert.equal(change?.status, 'applying');
    // Asking again while it applies returns it as it stands, and queues nothing more.
    const again = await client.applyChange({ changeId: c.changeId, digest: '', waitMs: 0 }, as(agent));
    assert.equal(again.change?.status, 'applying');
    const { rows } = await pool.query('SELECT topic, payload FROM bus_outbox WHERE key = $1', [c.changeId]);
    assert.deepEqual(rows, [
      { topic: 'changes.apply', payload: { change_id: c.changeId, workspace_id: workspace } },
    ]);
  });
});

describe('workspaces', () => {
  test("another workspace's change is not found, for reading, deciding or applying", async () => {
    const c = await prepare();
    const stranger = person({ workspaceId: randomUUID() });
    const calls = [
      () => client.getChange({ changeId: c.changeId }, as(stranger)),
      () =>
        client.approveChange(
          { changeId: c.changeId, digest: c.digest },
          as({ ...stranger, via: 'dashboard' }),
        ),
      () => client.applyChange({ changeId: c.changeId, digest: '', waitMs: 0 }, as(stranger)),
    ];
    for (const call of calls) {
      assert.equal((await code(call()))?.code, Code.NotFound);
    }
    const { changes, total } = await client.listChanges(
      { status: '', accountId: '', limit: 100, offset: 0 },
      as(stranger),
    );
    assert.equal(total, 0);
    assert.deepEqual(changes, []);
  });

  test('lists newest first with status filter and offset pagination', async () => {
    const { total } = await client.listChanges(
      { status: '', accountId: '', limit: 100, offset: 0 },
      as(agent),
    );
    const page = await client.listChanges({ status: '', accountId: '', limit: 2, offset: 0 }, as(agent));
    assert.equal(page.changes.length, 2);
    assert.equal(page.nextOffset, 2);
    assert.ok((page.changes[0]?.preparedAt ?? '') >= (page.changes[1]?.preparedAt ?? ''));
    const prepared = await client.listChanges(
      { status: 'prepared', accountId: '', limit: 100, offset: 0 },
      as(agent),
    );
    assert.ok(prepared.changes.every((c) => c.status === 'prepared'));
    assert.ok(total > prepared.total);
    const bad = await code(
      client.listChanges({ status: 'done', accountId: '', limit: 10, offset: 0 }, as(agent)),
    );
    assert.equal(bad?.code, Code.InvalidArgument);
  });
});
