/**
 * The gateway answers the common exchange — one plain 2025-era tools/call — without the SDK's
 * per-request server. Whichever way a call is served, a client sees the same answer: the same
 * status, the same event-stream headers and the same JSON-RPC message. A `_meta` member sends
 * an otherwise identical call through the SDK, so the two can be compared side by side.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { rawPost } from '@adsmcp/testkit/mcp-clients';

let e2e: SeededStack;

before(async () => {
  e2e = await startSeededStack();
});

after(async () => {
  await e2e?.stop();
});

async function answer(id: string | number, name: string, args: unknown, viaSdk: boolean) {
  const params = {
    name,
    ...(args === undefined ? {} : { arguments: args }),
    ...(viaSdk ? { _meta: {} } : {}),
  };
  const res = await rawPost(
    e2e.stack.mcpUrl,
    { jsonrpc: '2.0', id, method: 'tools/call', params },
    { authorization: `Bearer ${e2e.seed.token}`, 'mcp-protocol-version': '2025-11-25' },
  );
  const events = res.text.split('\n').filter((l) => l.startsWith('data: '));
  return {
    status: res.status,
    contentType: res.headers.get('content-type'),
    cacheControl: res.headers.get('cache-control'),
    requestId: res.headers.get('x-request-id') !== null,
    events: events.length,
    message: events[0] === undefined ? undefined : (JSON.parse(events[0].slice(6)) as unknown),
  };
}

test('a plain tools/call is answered exactly as the SDK answers the same call', async () => {
  const account = e2e.seed.accounts[0]?.account_id;
  const calls: [string | number, string, unknown][] = [
    [1, 'ads_get_connection_context', {}],
    ['str-id', 'ads_get_connection_context', undefined],
    [2, 'ads_list_ads', { account_id: account, limit: 1 }],
    [3, 'ads_list_ads', { account_id: 'act_not_ours', limit: 1 }],
    [4, 'ads_list_ads', { limit: 'many' }],
    [5, 'ads_no_such_tool', {}],
  ];
  for (const [id, name, args] of calls) {
    const plain = await answer(id, name, args, false);
    const sdk = await answer(id, name, args, true);
    assert.equal(plain.status, 200, `${name}: ${JSON.stringify(plain)}`);
    assert.deepEqual(plain, sdk, `${name} (${JSON.stringify(args)})`);
  }
});
