import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import type { Principal } from '@adsmcp/runtime/principal';
import { Code } from '@connectrpc/connect';
import { type FakePlatform, json, startFakePlatform } from './fake-platform.ts';
import { as, type Harness, principal, type Replica, refused, startHarness } from './proxy-harness.ts';

let harness: Harness;
let platform: FakePlatform;
let trusting: Replica;
let untrusting: Replica;
let worker: Principal;
let accountId: string;

before(async () => {
  harness = await startHarness();
  platform = await startFakePlatform(json({ id: 'ad_1', status: 'paused' }));
  trusting = await harness.proxy({ platformUrl: platform.url, trustChanges: true });
  untrusting = await harness.proxy({ platformUrl: platform.url, trustChanges: false });
  worker = principal({ via: 'worker', userId: null, role: 'editor' });
  accountId = await harness.connect(worker.workspaceId);
});

afterEach(() => {
  platform.seen.length = 0;
});

after(async () => {
  await harness?.stop();
  await platform?.close();
});

const apply = () => ({
  accountId,
  method: 'POST',
  path: '/ads/ad_1',
  bodyJson: '{"status":"paused"}',
  idempotencyKey: 'change-1',
});

describe("the changes worker's principal", () => {
  it('is accepted, as issuer adsmcp-changes on the worker channel, when CHANGES_PUBLIC_KEY is configured', async () => {
    const res = await harness.workerClient(trusting).call(apply(), as(worker));
    assert.equal(res.status, 200);
    assert.equal(platform.seen[0]?.headers['idempotency-key'], 'change-1');
  });

  it('is refused as Unauthenticated when CHANGES_PUBLIC_KEY is not configured', async () => {
    await refused(
      harness.workerClient(untrusting).call(apply(), as(worker)),
      Code.Unauthenticated,
      /invalid principal token/,
    );
    assert.equal(platform.seen.length, 0);
  });

  it('is refused when it claims a channel other than worker', async () => {
    for (const via of ['mcp', 'dashboard', 'operator'] as const) {
      await refused(
        harness.workerClient(trusting).call(apply(), as({ ...worker, via })),
        Code.Unauthenticated,
        /invalid principal token/,
      );
    }
    assert.equal(platform.seen.length, 0);
  });

  it('cannot be claimed by the gateway: a gateway token on the worker channel is refused', async () => {
    await refused(trusting.client.call(apply(), as(worker)), Code.Unauthenticated, /invalid principal token/);
    assert.equal(platform.seen.length, 0);
  });
});
