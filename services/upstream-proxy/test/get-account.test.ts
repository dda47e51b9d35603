import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Code } from '@connectrpc/connect';
import { type FakePlatform, startFakePlatform } from './fake-platform.ts';
import { as, type Harness, principal, type Replica, refused, startHarness } from './proxy-harness.ts';

let harness: Harness;
let platform: FakePlatform;
let proxy: Replica;

before(async () => {
  harness = await startHarness();
  platform = await startFakePlatform();
  proxy = await harness.proxy({ platformUrl: platform.url });
});

after(async () => {
  await harness?.stop();
  await platform?.close();
});

describe('GetAccount', () => {
  it("returns an account of the caller's workspace, without its credential", async () => {
    const viewer = principal({ role: 'viewer', scopes: ['read'] });
    const accountId = await harness.connect(viewer.workspaceId, {
      canWrite: false,
      credential: 'sbx_secret_42',
    });
    const { account } = await proxy.client.getAccount({ accountId }, as(viewer));
    assert.equal(account?.accountId, accountId);
    assert.equal(account?.name, 'Test account');
    assert.equal(account?.currency, 'USD');
    assert.equal(account?.timeZone, 'UTC');
    assert.equal(account?.canWrite, false);
    assert.ok(!JSON.stringify(account).includes('sbx_secret_42'));
  });

  it("answers NotFound for another workspace's account, exactly as for one that does not exist", async () => {
    const owner = principal();
    const accountId = await harness.connect(owner.workspaceId);
    const stranger = principal();
    const other = await refused(
      proxy.client.getAccount({ accountId }, as(stranger)),
      Code.NotFound,
      new RegExp(`^no ad account ${accountId} in this workspace; ads_list_accounts lists them$`),
    );
    const missing = randomUUID();
    const nowhere = await refused(
      proxy.client.getAccount({ accountId: missing }, as(stranger)),
      Code.NotFound,
      /^no ad account .* in this workspace/,
    );
    assert.equal(nowhere.rawMessage.replace(missing, accountId), other.rawMessage);
    await refused(
      proxy.client.getAccount({ accountId: 'not-a-uuid' }, as(stranger)),
      Code.NotFound,
      /no ad account/,
    );
  });

  it('refuses a caller without the read scope', async () => {
    const writer = principal({ scopes: ['write'] });
    const accountId = await harness.connect(writer.workspaceId);
    await refused(
      proxy.client.getAccount({ accountId }, as(writer)),
      Code.PermissionDenied,
      /reading an account needs the read scope/,
    );
  });
});
