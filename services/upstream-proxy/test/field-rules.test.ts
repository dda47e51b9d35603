/**
 * The upstream-proxy's field rules are its proto's, checked by the service itself: a call whose
 * method, path, query or idempotency key breaks one is refused naming the field and the rule, and
 * nothing reaches the ad platform.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Principal } from '@adsmcp/runtime/principal';
import { Code, ConnectError } from '@connectrpc/connect';
import { type FakePlatform, startFakePlatform } from './fake-platform.ts';
import { as, type Harness, principal, type Replica, startHarness } from './proxy-harness.ts';

let harness: Harness;
let platform: FakePlatform;
let proxy: Replica;
let admin: Principal;
let accountId: string;

before(async () => {
  harness = await startHarness();
  platform = await startFakePlatform();
  proxy = await harness.proxy({ platformUrl: platform.url });
  admin = principal();
  accountId = await harness.connect(admin.workspaceId);
});

after(async () => {
  await harness?.stop();
  await platform?.close();
});

async function refusal(call: Promise<unknown>): Promise<string> {
  const err = await call.then(
    () => assert.fail('the call was not refused'),
    (e: unknown) => ConnectError.from(e),
  );
  assert.equal(Code[err.code], Code[Code.InvalidArgument], err.rawMessage);
  return err.rawMessage;
}

test('a platform call out of its rules is refused naming each field and its rule, and nothing is sent', async () => {
  assert.equal(
    await refusal(
      proxy.client.call(
        {
          accountId,
          method: 'PUT',
          path: `/${'a'.repeat(2048)}`,
          query: [{ name: '', value: 'x' }],
          idempotencyKey: 'k'.repeat(256),
        },
        as(admin),
      ),
    ),
    '`method` must be one of GET, POST (got "PUT"); `path` must be at most 2048 characters (got 2049); ' +
      '`query[0].name` must be 1 to 256 characters (got 0); `idempotency_key` must be at most 255 characters (got 256)',
  );
  assert.equal(platform.seen.length, 0);
});
