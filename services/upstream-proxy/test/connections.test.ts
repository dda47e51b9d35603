import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { CreateConnectionRequestSchema } from '@adsmcp/proto/upstream/v1/upstream_pb';
import {
  type CreateConnectionRequest,
  ListAccountsResponseSchema,
  UpstreamService,
} from '@adsmcp/proto/upstream/v1/upstream_pb';
import { assertRefused } from '@adsmcp/testkit/service-harness';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { toBinary } from '@bufbuild/protobuf';
import { Code, createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { principal, type SandboxAccount, type Stack, startStack } from './stack.ts';

let stack: Stack;

before(async () => {
  stack = await startStack();
});

after(async () => {
  await stack?.stop();
});

type ConnectionRequest = MessageInitShape<typeof CreateConnectionRequestSchema>;

function requestFor(
  account: SandboxAccount,
  overrides: Partial<CreateConnectionRequest> = {},
): ConnectionRequest {
  return {
    name: 'Main account',
    currency: 'USD',
    timeZone: 'America/New_York',
    canWrite: true,
    upstreamAccountId: account.accountId,
    upstreamCredential: account.credential,
    ...overrides,
  };
}

/** Asserts that `call` fails with `code` and a message matching `message`. */
async function storedConnections(workspaceId: string): Promise<number> {
  const { rows } = await stack.pool.query<{ n: number }>(
    'SELECT count(*) AS n FROM connections WHERE workspace_id = $1',
    [workspaceId],
  );
  return rows[0]?.n ?? 0;
}

describe('CreateConnection and ListAccounts', () => {
  it('connects an account as an admin and lists it without any credential', async () => {
    const admin = principal();
    const account = await stack.newSandboxAccount();
    const { account: created } = await stack.client.createConnection(requestFor(account), stack.as(admin));
    assert.ok(created);
    assert.match(created.accountId, /^[0-9a-f-]{36}$/);
    assert.ok(!Number.isNaN(Date.parse(created.createdAt)));

    const viewer = principal({ workspaceId: admin.workspaceId, role: 'viewer', scopes: ['read'] });
    const listed = await stack.client.listAccounts({}, stack.as(viewer));
    assert.equal(listed.accounts.length, 1);
    const [only] = listed.accounts;
    assert.deepEqual(
      {
        accountId: only?.accountId,
        name: only?.name,
        currency: only?.currency,
        timeZone: only?.timeZone,
        canWrite: only?.canWrite,
        upstreamAccountId: only?.upstreamAccountId,
        createdAt: only?.createdAt,
      },
      {
        accountId: created.accountId,
        name: 'Main account',
        currency: 'USD',
        timeZone: 'America/New_York',
        canWrite: true,
        upstreamAccountId: account.accountId,
        createdAt: created.createdAt,
      },
    );
    const wire = Buffer.from(toBinary(ListAccountsResponseSchema, listed));
    assert.equal(wire.includes(Buffer.from(account.credential)), false);
    assert.equal(wire.includes(Buffer.from(account.credential.slice(4, 20))), false);
  });

  it('lists a workspace’s accounts ordered by name, ignoring case', async () => {
    const admin = principal();
    for (const name of ['Charlie', 'alpha', 'Bravo']) {
      await stack.client.createConnection(
        requestFor(await stack.newSandboxAccount(), { name }),
        stack.as(admin),
      );
    }
    const { accounts } = await stack.client.listAccounts({}, stack.as(admin));
    assert.deepEqual(
      accounts.map((a) => a.name),
      ['alpha', 'Bravo', 'Charlie'],
    );
  });

  it('never shows one workspace the accounts of another', async () => {
    const a = principal();
    const b = principal();
    await stack.client.createConnection(
      requestFor(await stack.newSandboxAccount(), { name: 'A only' }),
      stack.as(a),
    );
    await stack.client.createConnection(
      requestFor(await stack.newSandboxAccount(), { name: 'B only' }),
      stack.as(b),
    );

    assert.deepEqual(
      (await stack.client.listAccounts({}, stack.as(a))).accounts.map((x) => x.name),
      ['A only'],
    );
    assert.deepEqual(
      (await stack.client.listAccounts({}, stack.as(b))).accounts.map((x) => x.name),
      ['B only'],
    );
    assert.deepEqual((await stack.client.listAccounts({}, stack.as(principal()))).accounts, []);
  });

  it('refuses a viewer or an editor with PermissionDenied and stores nothing', async () => {
    const account = await stack.newSandboxAccount();
    for (const caller of [
      principal({ role: 'viewer', scopes: ['read'] }),
      principal({ role: 'editor', scopes: ['read', 'write'] }),
      principal({ role: 'admin', scopes: ['read'] }),
    ]) {
      await assertRefused(
        stack.client.createConnection(requestFor(account), stack.as(caller)),
        Code.PermissionDenied,
        /connecting an ad account needs the admin role and the write scope; this caller has role \w+ and scopes \[/,
      );
      assert.equal(await storedConnections(caller.workspaceId), 0);
    }
  });

  it('refuses listing to a caller without the read scope', async () => {
    await assertRefused(
      stack.client.listAccounts({}, stack.as(principal({ scopes: ['write'] }))),
      Code.PermissionDenied,
      /listing accounts needs the read scope/,
    );
  });

  it('refuses a credential the platform does not accept', async () => {
    const admin = principal();
    const account = await stack.newSandboxAccount();
    await assertRefused(
      stack.client.createConnection(
        requestFor(account, { upstreamCredential: 'sbx_wrong' }),
        stack.as(admin),
      ),
      Code.InvalidArgument,
      /upstream_credential was refused by the ad platform \(HTTP 401\)/,
    );
    assert.equal(await storedConnections(admin.workspaceId), 0);
  });

  it('refuses a credential that belongs to another upstream account', async () => {
    const admin = principal();
    const mine = await stack.newSandboxAccount();
    const theirs = await stack.newSandboxAccount();
    await assertRefused(
      stack.client.createConnection(
        requestFor(mine, { upstreamCredential: theirs.credential }),
        stack.as(admin),
      ),
      Code.InvalidArgument,
      new RegExp(
        `upstream_credential belongs to upstream account ${theirs.accountId}, not to upstream_account_id ${mine.accountId}`,
      ),
    );
  });

  it('refuses a currency or time zone that differs from the platform’s', async () => {
    const admin = principal();
    const account = await stack.newSandboxAccount({ currency: 'EUR', time_zone: 'Europe/Berlin' });
    await assertRefused(
      stack.client.createConnection(
        requestFor(account, { currency: 'USD', timeZone: 'Europe/Berlin' }),
        stack.as(admin),
      ),
      Code.InvalidArgument,
      /currency USD does not match the ad account's currency on the platform, EUR/,
    );
    await assertRefused(
      stack.client.createConnection(
        requestFor(account, { currency: 'EUR', timeZone: 'Europe/Paris' }),
        stack.as(admin),
      ),
      Code.InvalidArgument,
      /time_zone Europe\/Paris does not match the ad account's time zone on the platform, Europe\/Berlin/,
    );
  });

  it('keeps a time zone by the name it was given, spelled as IANA spells it, and matches the platform’s by zone', async () => {
    const admin = principal();
    // The sandbox keeps the name too; a platform could answer an alias of the same zone.
    const account = await stack.newSandboxAccount({ currency: 'USD', time_zone: 'Asia/Kathmandu' });
    const { account: created } = await stack.client.createConnection(
      requestFor(account, { timeZone: 'asia/kathmandu' }),
      stack.as(admin),
    );
    assert.equal(created?.timeZone, 'Asia/Kathmandu');
    const alias = await stack.newSandboxAccount({ currency: 'USD', time_zone: 'Europe/Kiev' });
    const { account: kyiv } = await stack.client.createConnection(
      requestFor(alias, { name: 'Kyiv', timeZone: 'Europe/Kyiv' }),
      stack.as(admin),
    );
    assert.equal(kyiv?.timeZone, 'Europe/Kyiv');
  });

  it('refuses invalid fields with InvalidArgument naming the field', async () => {
    const admin = principal();
    const account = await stack.newSandboxAccount();
    const cases: [Partial<CreateConnectionRequest>, RegExp][] = [
      [{ name: '' }, /^name must be 1 to 200 characters/],
      [{ name: '   ' }, /^name must be/],
      [{ name: 'x'.repeat(201) }, /^name must be/],
      [{ currency: 'usd' }, /^currency must be 3 uppercase letters/],
      [{ timeZone: 'Mars/Olympus' }, /^time_zone must be an IANA time zone/],
      [{ timeZone: '' }, /^time_zone must be an IANA time zone/],
      [{ upstreamAccountId: ' ' }, /^upstream_account_id must be/],
      [{ upstreamCredential: '' }, /^upstream_credential is required/],
      [{ upstreamCredential: 'has\nnewline' }, /^upstream_credential must be 1 to 4096 visible ASCII/],
    ];
    for (const [overrides, message] of cases) {
      await assertRefused(
        stack.client.createConnection(requestFor(account, overrides), stack.as(admin)),
        Code.InvalidArgument,
        message,
      );
    }
    assert.equal(await storedConnections(admin.workspaceId), 0);
  });

  it('refuses connecting the same upstream account twice in a workspace', async () => {
    const admin = principal();
    const account = await stack.newSandboxAccount();
    await stack.client.createConnection(requestFor(account), stack.as(admin));
    await assertRefused(
      stack.client.createConnection(requestFor(account, { name: 'Again' }), stack.as(admin)),
      Code.AlreadyExists,
      new RegExp(`upstream account ${account.accountId} is already connected to this workspace`),
    );
    // Another workspace may connect the same platform account.
    await stack.client.createConnection(requestFor(account), stack.as(principal()));
  });

  it('refuses a call without a principal token, or with a forged one, as Unauthenticated', async () => {
    const anonymous = createClient(UpstreamService, createGrpcTransport({ baseUrl: stack.proxyUrl }));
    await assertRefused(anonymous.listAccounts({}), Code.Unauthenticated, /missing principal token/);
    await assertRefused(
      anonymous.listAccounts({}, { headers: { authorization: 'Bearer not.a.jwt' } }),
      Code.Unauthenticated,
      /invalid principal token/,
    );
  });

  it('stores the credential sealed to its row: not its bytes, and not openable elsewhere', async () => {
    const admin = principal();
    const account = await stack.newSandboxAccount();
    const { account: created } = await stack.client.createConnection(requestFor(account), stack.as(admin));
    assert.ok(created);
    const { rows } = await stack.pool.query<{ credential_ciphertext: Buffer }>(
      'SELECT credential_ciphertext FROM connections WHERE workspace_id = $1 AND account_id = $2',
      [admin.workspaceId, created.accountId],
    );
    const sealed = rows[0]?.credential_ciphertext;
    assert.ok(sealed);
    const plain = Buffer.from(account.credential);
    assert.notDeepEqual(sealed, plain);
    assert.equal(sealed.includes(plain), false);
    assert.equal(sealed.includes(plain.subarray(4, 16)), false);
    assert.equal(sealed.length, 12 + plain.length + 16);

    const binding = { workspaceId: admin.workspaceId, accountId: created.accountId };
    assert.equal(stack.cipher.open(sealed, binding), account.credential);
    assert.throws(() => stack.cipher.open(sealed, { ...binding, workspaceId: principal().workspaceId }));
  });
});
