/**
 * AccountsService/ListAccounts over real Connect and PostgreSQL, with the real sandbox behind the
 * real upstream-proxy: the workspace's accounts as the upstream-proxy holds them, each with the
 * freeze in force for it, and what the caller may do.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, beforeEach, test } from 'node:test';
import { AccountsService } from '@adsmcp/proto/changes/v1/accounts_pb';
import { ControlsService } from '@adsmcp/proto/changes/v1/controls_pb';
import { as } from '@adsmcp/testkit/service-harness';
import { type Client, Code } from '@connectrpc/connect';
import { type ChangesUnderTest, startChangesService } from './changes-under-test.ts';
import { type LivePlatform, startLivePlatform } from './live-platform.ts';
import { personIn, refusal } from './people.ts';

let svc: ChangesUnderTest;
let platform: LivePlatform;
let accounts: Client<typeof AccountsService>;
let controls: Client<typeof ControlsService>;

const workspace = randomUUID();
const person = personIn(workspace);
const agent = person();
const dashboardAdmin = person({ role: 'admin', via: 'dashboard', credentialId: 'dashboard:admin' });

before(async () => {
  platform = await startLivePlatform(workspace);
  svc = await startChangesService(platform);
  accounts = svc.clientOf(AccountsService);
  controls = svc.clientOf(ControlsService);
});

after(async () => {
  await platform?.stop();
  await svc?.stop();
});

beforeEach(async () => {
  await svc.pool.query('DELETE FROM freezes');
});

test('an open account is listed writable, with its connection and credential health', async () => {
  const { accounts: listed } = await accounts.listAccounts({}, as(agent));
  assert.equal(listed.length, 1);
  const [account] = listed;
  assert.equal(account?.accountId, platform.accountId);
  assert.equal(account?.name, 'Changes test account');
  assert.equal(account?.currency, 'USD');
  assert.equal(account?.timeZone, 'UTC');
  assert.equal(account?.canWrite, true);
  assert.equal(account?.connectionCanWrite, true);
  assert.equal(account?.freeze, undefined);
  assert.equal(account?.credentialStatus, 'ok');
  // A viewer reads the same accounts but may not prepare changes for any of them.
  const viewed = await accounts.listAccounts({}, as(person({ role: 'viewer', scopes: ['read'] })));
  assert.equal(viewed.accounts[0]?.canWrite, false);
  assert.equal(viewed.accounts[0]?.connectionCanWrite, true);
});

test('a frozen account shows its freeze and is not writable; a workspace freeze holds it too', async () => {
  await controls.freeze({ accountId: platform.accountId, reason: 'Budget review' }, as(dashboardAdmin));
  const own = (await accounts.listAccounts({}, as(agent))).accounts[0];
  assert.equal(own?.canWrite, false);
  assert.equal(own?.connectionCanWrite, true);
  assert.equal(own?.freeze?.scope, 'account');
  assert.equal(own?.freeze?.accountId, platform.accountId);
  assert.equal(own?.freeze?.reason, 'Budget review');
  assert.ok(own?.freeze?.frozenBy);
  assert.ok(Number.isFinite(Date.parse(own?.freeze?.frozenAt ?? '')));

  await controls.unfreeze({ accountId: platform.accountId }, as(dashboardAdmin));
  await controls.freeze({ reason: 'Quarter close' }, as(dashboardAdmin));
  const workspaceWide = (await accounts.listAccounts({}, as(agent))).accounts[0];
  assert.equal(workspaceWide?.canWrite, false);
  assert.equal(workspaceWide?.freeze?.scope, 'workspace');
  assert.equal(workspaceWide?.freeze?.accountId, undefined);
  assert.equal(workspaceWide?.freeze?.reason, 'Quarter close');
});

test('a caller without the read scope is refused, naming what it lacks', async () => {
  const refused = await refusal(accounts.listAccounts({}, as(person({ scopes: ['write'] }))));
  assert.equal(refused.code, Code.PermissionDenied);
  assert.equal(
    refused.message,
    'listing accounts needs the read scope; this caller has role editor and scopes [write]',
  );
});
