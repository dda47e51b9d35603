/**
 * A replica holds the connections it has read, with their credentials opened, between calls: a
 * change to a connection committed in the database is nonetheless seen by the very next call,
 * whichever process made it. Real PostgreSQL, the real sandbox over HTTP.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Code } from '@connectrpc/connect';
import { refused } from './proxy-harness.ts';
import { principal, type Stack, startStack } from './stack.ts';

let stack: Stack;

before(async () => {
  stack = await startStack();
});

after(async () => {
  await stack?.stop();
});

describe('Call after a connection changes', () => {
  it('uses a replaced credential from the next call on, and refuses the call once the connection is removed', async () => {
    const admin = principal();
    const first = await stack.newSandboxAccount({ name: 'First account' });
    const second = await stack.newSandboxAccount({ name: 'Second account' });
    const { account } = await stack.client.createConnection(
      {
        name: 'Main account',
        currency: 'USD',
        timeZone: 'America/New_York',
        canWrite: true,
        upstreamAccountId: first.accountId,
        upstreamCredential: first.credential,
      },
      stack.as(admin),
    );
    assert.ok(account);
    const accountId = account.accountId;
    /** Which platform account the connection's credential opens, asked through the proxy. */
    const platformAccount = async () => {
      const res = await stack.client.call({ accountId, method: 'GET', path: '/me' }, stack.as(admin));
      assert.equal(res.status, 200, res.bodyJson);
      return (JSON.parse(res.bodyJson) as { id: string }).id;
    };

    // Read twice, so the second call is answered from what the replica holds.
    assert.equal(await platformAccount(), first.accountId);
    assert.equal(await platformAccount(), first.accountId);

    // The connection now holds another credential, changed outside this replica.
    await stack.pool.query(
      'UPDATE connections SET credential_ciphertext = $2, upstream_account_id = $3 WHERE account_id = $1',
      [
        accountId,
        stack.cipher.seal(second.credential, { workspaceId: admin.workspaceId, accountId }),
        second.accountId,
      ],
    );
    assert.equal(await platformAccount(), second.accountId);

    await stack.pool.query('DELETE FROM connections WHERE account_id = $1', [accountId]);
    await refused(
      stack.client.call({ accountId, method: 'GET', path: '/me' }, stack.as(admin)),
      Code.NotFound,
      new RegExp(`no ad account ${accountId} in this workspace`),
    );
  });
});
