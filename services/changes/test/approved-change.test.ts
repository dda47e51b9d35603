/**
 * RecordApprovedChange: the optimizer's worker records a change a person approved on the
 * optimizer's proposal page, and queues its apply; nobody else may, and the worker may do nothing
 * else to changes.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ChangesService, type RecordApprovedChangeRequestSchema } from '@adsmcp/proto/changes/v1/changes_pb';
import { migrateBus } from '@adsmcp/runtime/bus/outbox';
import {
  createPrincipalSigner,
  createPrincipalVerifier,
  GATEWAY_ISSUER,
  generatePrincipalKeys,
  type Principal,
} from '@adsmcp/runtime/principal';
import { createServiceClient } from '@adsmcp/runtime/service-client';
import { as, type ServiceUnderTest, startServiceUnderTest } from '@adsmcp/testkit/service-harness';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { type Client, Code, ConnectError } from '@connectrpc/connect';
import { buildServer, OPTIMIZER_ISSUER, SERVICE_NAME } from '../src/server.ts';
import { statusOf } from './changes-under-test.ts';
import { type LivePlatform, startLivePlatform } from './live-platform.ts';

let svc: ServiceUnderTest<typeof ChangesService>;
let platform: LivePlatform;
let account: string;
let ad: { id: string; revision: number };
/** Signs as the gateway, and as the optimizer's worker. */
let gateway: Client<typeof ChangesService>;
let optimizer: Client<typeof ChangesService>;

const workspace = randomUUID();
const approver = randomUUID();
const principal = (over: Partial<Principal> = {}): Principal => ({
  workspaceId: workspace,
  credentialId: 'optimizer-proposal:p1',
  userId: approver,
  role: 'editor',
  scopes: ['read', 'write'],
  via: 'worker',
  ...over,
});
const worker = principal();

const request = (changeId: string): MessageInitShape<typeof RecordApprovedChangeRequestSchema> => ({
  change: {
    accountId: account,
    tool: 'ads_update_ad',
    objectType: 'ad',
    effect: 'update',
    operation: {
      method: 'POST',
      path: `/ads/${ad.id}`,
      bodyJson: JSON.stringify({ creative: { title: 'Free shipping today' } }),
    },
    targetPath: `/ads/${ad.id}`,
  },
  changeId,
  approvedBy: `user:${approver} via dashboard (optimization proposal p1)`,
  approverUserId: approver,
});

async function refusal(p: Promise<unknown>): Promise<Code | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    return ConnectError.from(err).code;
  }
}

before(async () => {
  platform = await startLivePlatform(workspace);
  account = platform.accountId;
  const [first] = await platform.ads();
  assert.ok(first);
  ad = first;
  const gatewayKeys = await generatePrincipalKeys();
  const optimizerKeys = await generatePrincipalKeys();
  const verifier = await createPrincipalVerifier(
    { [GATEWAY_ISSUER]: gatewayKeys.publicKeyPem, [OPTIMIZER_ISSUER]: optimizerKeys.publicKeyPem },
    SERVICE_NAME,
  );
  svc = await startServiceUnderTest({
    service: ChangesService,
    name: SERVICE_NAME,
    migrations: fileURLToPath(new URL('../migrations', import.meta.url)),
    prepare: (p) => migrateBus(p, SERVICE_NAME),
    build: (deps) => buildServer({ ...deps, verifier, upstream: platform.upstream }),
  });
  gateway = createServiceClient(
    ChangesService,
    svc.url,
    SERVICE_NAME,
    await createPrincipalSigner(gatewayKeys.privateKeyPem),
  );
  optimizer = createServiceClient(
    ChangesService,
    svc.url,
    SERVICE_NAME,
    await createPrincipalSigner(optimizerKeys.privateKeyPem, OPTIMIZER_ISSUER),
  );
});

after(async () => {
  await platform?.stop();
  await svc?.stop();
});

describe('a change approved on an optimizer proposal', () => {
  test('is recorded approved by the person, applying, with one apply queued; a retry returns the same change', async () => {
    const changeId = randomUUID();
    const { change } = await optimizer.recordApprovedChange(request(changeId), as(worker));
    assert.equal(change?.changeId, changeId);
    assert.equal(statusOf(change), 'applying');
    assert.equal(change?.approvedBy, `user:${approver} via dashboard (optimization proposal p1)`);
    assert.match(change?.preparedBy ?? '', /via worker \(optimizer-proposal:p1\)/);
    assert.match(change?.summary ?? '', /title/);
    const again = await optimizer.recordApprovedChange(request(changeId), as(worker));
    assert.equal(again.change?.digest, change?.digest);
    const { rows } = await svc.pool.query(`SELECT topic FROM bus_outbox WHERE payload->>'change_id' = $1`, [
      changeId,
    ]);
    assert.deepEqual(rows, [{ topic: 'changes.apply' }]);
    // The gateway's callers read it as any change.
    const read = await gateway.getChange({ changeId }, as(principal({ via: 'mcp' })));
    assert.equal(statusOf(read.change), 'applying');
  });

  test('is refused from an MCP client or the dashboard', async () => {
    for (const via of ['mcp', 'dashboard'] as const) {
      const code = await refusal(gateway.recordApprovedChange(request(randomUUID()), as(principal({ via }))));
      assert.equal(code, Code.PermissionDenied, via);
    }
  });

  test('the worker cannot prepare, approve or apply a change', async () => {
    assert.equal(
      await refusal(optimizer.prepareChange(request(randomUUID()).change ?? {}, as(worker))),
      Code.PermissionDenied,
    );
    const { change } = await gateway.prepareChange(
      request(randomUUID()).change ?? {},
      as(principal({ via: 'mcp' })),
    );
    const id = change?.changeId ?? '';
    assert.equal(
      await refusal(optimizer.approveChange({ changeId: id, digest: change?.digest ?? '' }, as(worker))),
      Code.PermissionDenied,
    );
    assert.equal(
      await refusal(optimizer.applyChange({ changeId: id, digest: '', waitMs: 0 }, as(worker))),
      Code.PermissionDenied,
    );
  });

  test('is not accepted when the optimizer’s key is not trusted', async () => {
    const stranger = createServiceClient(
      ChangesService,
      svc.url,
      SERVICE_NAME,
      await createPrincipalSigner((await generatePrincipalKeys()).privateKeyPem, OPTIMIZER_ISSUER),
    );
    assert.equal(
      await refusal(stranger.recordApprovedChange(request(randomUUID()), as(worker))),
      Code.Unauthenticated,
    );
  });
});
