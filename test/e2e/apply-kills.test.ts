/**
 * A change whose every apply is killed on its last delivery still reaches an end: the changes
 * service (one delivery per apply message here, so each delivery is the last) is killed with
 * SIGKILL while the platform is answering the change, eight times. Each time the give-up path
 * ends the change as failed with its outcome unknown, the agent applies it again with the same
 * idempotency key, and in the end the sandbox's ledger shows it applied exactly once.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import type { SeedResult, Stack } from '@adsmcp/testkit/stack';
import { sandboxLedger, toolCalls } from '@adsmcp/testkit/tool-calls';

let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
let agent: McpTestClient;
let account: SeedResult['accounts'][number];

interface ChangeView {
  change_id: string;
  status: string;
  error?: string;
}

const { call, ok, waitForChange } = toolCalls(() => agent);

before(async () => {
  // Each apply message is delivered once: a delivery killed mid-send is the last one.
  e2e = await startSeededStack({ env: { APPLY_MAX_ATTEMPTS: '1', APPLY_LEASE_MS: '1000' } });
  ({ stack, seed } = e2e);
  account = seed.accounts.find((a) => a.currency === 'USD') as SeedResult['accounts'][number];
  agent = await connectClient('v2-2026', stack.mcpUrl, seed.token);
});

after(async () => {
  await agent?.close();
  await e2e?.stop();
});

/** Queues a delay of the platform's answer to the account's next update of `path`. */
async function slowNextUpdate(path: string): Promise<void> {
  const res = await fetch(`${stack.urls['ads-sandbox']}/_sandbox/faults`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${stack.secrets.sandboxAdminToken}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({
      account_id: account.upstream_account_id,
      method: 'POST',
      count: 1,
      path_prefix: path,
      kind: 'delay',
      delay_ms: 3000,
    }),
  });
  assert.ok(res.ok, `fault not accepted: ${res.status}`);
}

test('killed during the last delivery of its apply eight times, a change ends each time and is applied exactly once', async () => {
  const { ads } = await ok<{ ads: { id: string; status: string }[] }>('ads_list_ads', {
    account_id: account.account_id,
    limit: 20,
  });
  const ad = ads.find((a) => a.status !== 'archived') as { id: string };
  const path = `/ads/${ad.id}`;
  const prepared = await ok<ChangeView>('ads_update_ad', {
    account_id: account.account_id,
    ad_id: ad.id,
    body: { name: 'Killed eight times' },
  });
  await stack.admin(['approve', prepared.change_id, '--workspace', seed.workspaceId, '--yes']);

  for (let round = 1; round <= 8; round++) {
    await slowNextUpdate(path);
    // The first asks to apply it; each later one sends it again after its unknown outcome.
    const asked = call('ads_apply_change', { change_id: prepared.change_id });
    // The worker has re-read the ad and is waiting for the platform's answer, which takes 3 s.
    await sleep(1200);
    await stack.kill('changes', 'SIGKILL');
    // The call waiting for the outcome loses the service it asked: unavailable, nothing more.
    const during = await asked;
    if (during.isError) {
      const { code, message } = (during.data as { error: { code: string; message: string } }).error;
      assert.equal(code, 'unavailable', `round ${round}: ${JSON.stringify(during.data)}`);
      assert.match(message, /^the changes service this tool needs stopped answering during the call/);
    }
    if (round === 1) {
      // While it is down, a tool that needs it says which service is not answering.
      const down = await call('ads_get_change', { change_id: prepared.change_id });
      assert.ok(down.isError);
      assert.match(
        (down.data as { error: { message: string } }).error.message,
        /^the changes service this tool needs is not answering; retry shortly/,
      );
    }
    await stack.restart('changes');
    const ended = await waitForChange<ChangeView>(prepared.change_id, ['failed', 'applied'], 30_000);
    assert.equal(ended.status, 'failed', `round ${round}: ${JSON.stringify(ended)}`);
    assert.match(
      ended.error ?? '',
      /its apply stopped before it finished .*may or may not have been applied: apply it again/,
      `round ${round}`,
    );
  }

  const last = await ok<ChangeView>('ads_apply_change', { change_id: prepared.change_id });
  const final =
    last.status === 'applied'
      ? last
      : await waitForChange<ChangeView>(prepared.change_id, ['applied', 'failed']);
  assert.equal(final.status, 'applied', JSON.stringify(final));
  const ledger = await sandboxLedger(stack, account.upstream_account_id, path);
  assert.deepEqual(
    ledger.map((e) => e.idempotency_key),
    [`change-${prepared.change_id}`],
    'applied once, under the change key, however often it was sent',
  );
});
