/**
 * More than one copy: two processes of every service (the sandbox, which is the ad platform,
 * stays one) on one database, the gateways behind one address. The tools work through them, and
 * a rolling restart of each service in turn (SIGTERM one replica, start it again, then the other)
 * while agents prepare, people approve and changes are applied loses no answered call and applies
 * every approved change exactly once, with the sandbox's ledger as witness.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { validData } from '@adsmcp/testkit/marketing-items';
import { type ClientKind, connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import { optimizerConfig } from '@adsmcp/testkit/optimizer-config';
import type { SeedResult, ServiceName, Stack } from '@adsmcp/testkit/stack';
import { sandboxLedger, toolCalls } from '@adsmcp/testkit/tool-calls';

const REPLICATED: readonly ServiceName[] = ['upstream-proxy', 'changes', 'marketing', 'optimizer', 'gateway'];

let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
let agent: McpTestClient;
let account: SeedResult['accounts'][number];
let ads: { id: string; name: string; status: string }[];
/** A signed-in dashboard session: its cookie and its CSRF token. */
let dashboard: { cookie: string; csrf: string };

interface ChangeView {
  change_id: string;
  status: string;
  digest: string;
  operation: { method: string; path: string; body: unknown };
}

const { ok, waitForChange } = toolCalls(() => agent);

/** Signs the seeded person in to the dashboard through its form (through the gateways' one address). */
async function signIn(): Promise<{ cookie: string; csrf: string }> {
  const origin = new URL(stack.gatewayUrl).origin;
  const res = await fetch(`${stack.gatewayUrl}/dashboard/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { origin, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ email: seed.dashboardUser, password: seed.dashboardPassword as string }),
  });
  assert.equal(res.status, 303, await res.text());
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0] as string;
  const page = await (await fetch(`${stack.gatewayUrl}/dashboard/members`, { headers: { cookie } })).text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1];
  assert.ok(csrf, 'a dashboard page carries the session CSRF token');
  return { cookie, csrf };
}

/** A person approves the change in the dashboard (a form post); resolves with the HTTP status. */
async function approveInDashboard(change: ChangeView): Promise<number> {
  const res = await fetch(`${stack.gatewayUrl}/dashboard/changes/${change.change_id}/approve`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      cookie: dashboard.cookie,
      origin: new URL(stack.gatewayUrl).origin,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ csrf: dashboard.csrf, digest: change.digest }),
  });
  await res.arrayBuffer();
  return res.status;
}

/** How many RPCs (or, for the gateway, HTTP requests) a replica logged among its recent lines. */
function servedBy(service: ServiceName, replica: number): number {
  const kind = service === 'gateway' ? '"msg":"http"' : '"msg":"rpc"';
  return stack.recentOutput(service, replica).filter((l) => l.includes(kind)).length;
}

before(async () => {
  e2e = await startSeededStack({
    replicas: 2,
    env: { MCP_RATE_PER_SECOND: '1000', MCP_RATE_BURST: '1000', APPLY_LEASE_MS: '5000' },
  });
  ({ stack, seed } = e2e);
  account = seed.accounts.find((a) => a.currency === 'USD') as SeedResult['accounts'][number];
  agent = await connectClient('v2-2026', stack.mcpUrl, seed.token);
  const list = await ok<{ ads: typeof ads }>('ads_list_ads', { account_id: account.account_id, limit: 20 });
  ads = list.ads.filter((a) => a.status !== 'archived');
  assert.ok(ads.length >= 5, 'the seeded account has ads to change');
  dashboard = await signIn();
});

after(async () => {
  await agent?.close();
  await e2e?.stop();
});

/** Prepare, approve in the dashboard, apply; resolves with the prepared change (applying or applied). */
async function prepareApproveApply(
  call: (name: string, args: Record<string, unknown>) => Promise<unknown>,
  adId: string,
  name: string,
): Promise<ChangeView> {
  const prepared = (await call('ads_update_ad', {
    account_id: account.account_id,
    ad_id: adId,
    body: { name },
  })) as ChangeView;
  const approved = await approveInDashboard(prepared);
  assert.equal(approved, 303, `approving ${prepared.change_id} answered ${approved}`);
  await call('ads_apply_change', { change_id: prepared.change_id });
  return prepared;
}

describe('two replicas of every service', () => {
  test('every service but the sandbox runs twice, each on its own port; the gateways share one address', () => {
    for (const service of REPLICATED) {
      const [a, b] = stack.replicaUrls[service];
      assert.ok(a && b && a !== b, `${service} has two addresses`);
      assert.equal(stack.replicaUrls[service].length, 2);
    }
    assert.equal(stack.replicaUrls['ads-sandbox'].length, 1);
    assert.equal(stack.urls.changes, stack.replicaUrls.changes.join(','), 'peers are given both addresses');
    assert.ok(!stack.replicaUrls.gateway.includes(stack.gatewayUrl), 'MCP clients use the one address');
  });

  test('reads, prepare -> approve -> apply, marketing items and optimizers work through them', async () => {
    const ad = ads[0] as (typeof ads)[number];
    for (let i = 0; i < 4; i++) {
      const got = await ok<{ ad: { id: string } }>('ads_get_ad', {
        account_id: account.account_id,
        ad_id: ad.id,
      });
      assert.equal(got.ad.id, ad.id);
    }
    const change = await prepareApproveApply(
      (name, args) => ok(name, args),
      ad.id,
      'Two replicas — reviewed copy',
    );
    const final = await waitForChange<ChangeView>(change.change_id, ['applied', 'failed']);
    assert.equal(final.status, 'applied', JSON.stringify(final));
    const rows = await sandboxLedger(stack, account.upstream_account_id, `/ads/${ad.id}`);
    assert.deepEqual(
      rows.map((r) => r.idempotency_key),
      [`change-${change.change_id}`],
      'applied exactly once',
    );

    const { item } = await ok<{ item: { item_id: string; revision: number } }>('ads_save_marketing_item', {
      kind: 'brand',
      name: 'Replicated brand',
      data: validData('brand'),
    });
    for (let i = 0; i < 4; i++) {
      const got = await ok<{ item: { item_id: string; name: string } }>('ads_get_marketing_item', {
        item_id: item.item_id,
      });
      assert.equal(got.item.name, 'Replicated brand');
    }
    const { optimizer } = await ok<{ optimizer: { optimizer_id: string } }>('ads_save_optimizer', {
      account_id: account.account_id,
      name: 'Replicated review',
      enabled: false,
      config: optimizerConfig(),
    });
    for (let i = 0; i < 4; i++) {
      const got = await ok<{ optimizer: { optimizer_id: string } }>('ads_get_optimizer', {
        optimizer_id: optimizer.optimizer_id,
      });
      assert.equal(got.optimizer.optimizer_id, optimizer.optimizer_id);
    }
    // The calls were spread: every replica of every service served some of them.
    for (const service of REPLICATED) {
      for (const replica of [0, 1]) {
        assert.ok(servedBy(service, replica) > 0, `${service} replica ${replica} served calls`);
      }
    }
  });

  test('a rolling restart of each service under load loses no answered call and applies every approved change once', async (t) => {
    const started = Date.now();
    const at = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
    /** What happened when, printed as it happens (a hung step shows where it hung). */
    const note = (what: string) => {
      t.diagnostic(`${at()} ${what}`);
      if (process.env.ADSMCP_TEST_VERBOSE) process.stderr.write(`replicas: ${at()} ${what}\n`);
    };
    /** Every call that did not succeed: a thrown (transport) error or an error result. */
    const failures: string[] = [];
    /** Changes whose prepare was answered, and those approved (then applied) among them, by ad. */
    const prepared: ChangeView[] = [];
    const approved = new Map<string, string[]>();
    let answered = 0;
    let loading = true;

    const tracked = (client: McpTestClient) => async (name: string, args: Record<string, unknown>) => {
      let res: Awaited<ReturnType<McpTestClient['callTool']>>;
      try {
        res = await client.callTool(name, args);
      } catch (err) {
        const cause = err instanceof Error && err.cause !== undefined ? ` (${String(err.cause)})` : '';
        failures.push(`${at()} ${name}: ${String(err)}${cause}`);
        throw err;
      }
      if (res.isError === true) {
        failures.push(`${at()} ${name}: ${JSON.stringify(res.structuredContent)}`);
        throw new Error(`${name} failed`);
      }
      answered++;
      return res.structuredContent as Record<string, unknown>;
    };

    /** An agent that prepares a change of its own ad, has it approved and applies it, over and over. */
    const changer = async (kind: ClientKind, ad: { id: string }) => {
      const client = await connectClient(kind, stack.mcpUrl, seed.token);
      const call = tracked(client);
      try {
        for (let n = 0; loading; n++) {
          const change = await prepareApproveApply(
            async (name, args) => {
              const out = await call(name, args);
              if (name === 'ads_update_ad') prepared.push(out as unknown as ChangeView);
              return out;
            },
            ad.id,
            `Rolling restart ${kind} ${n}`,
          );
          approved.set(ad.id, [...(approved.get(ad.id) ?? []), change.change_id]);
          // The next change of this ad is planned on the applied one.
          const deadline = Date.now() + 60_000;
          for (;;) {
            const got = (await call('ads_get_change', { change_id: change.change_id })) as { status: string };
            if (got.status === 'applied') break;
            if (got.status !== 'applying' || Date.now() > deadline) {
              failures.push(`${at()} change ${change.change_id} is ${got.status}`);
              return;
            }
            await new Promise((r) => setTimeout(r, 200));
          }
          note(`${kind}: change ${n} applied`);
        }
      } finally {
        await client.close();
      }
    };

    /** An agent that reads the account and keeps marketing items and optimizers. */
    const reader = async () => {
      const client = await connectClient('v2-2025', stack.mcpUrl, seed.token);
      const call = tracked(client);
      try {
        for (let n = 0; loading; n++) {
          await call('ads_list_ads', { account_id: account.account_id, limit: 5 });
          const saved = (await call('ads_save_marketing_item', {
            kind: 'brand',
            name: `Rolling brand ${n}`,
            data: validData('brand'),
          })) as { item: { item_id: string } };
          await call('ads_get_marketing_item', { item_id: saved.item.item_id });
          await call('ads_list_optimizers', { limit: 5 });
        }
      } finally {
        await client.close();
      }
    };

    const exits: string[] = [];
    const restarts = (async () => {
      try {
        // Every stop happens under load: the clients are connected and calling first.
        for (const until = Date.now() + 60_000; answered < 6 && Date.now() < until; ) {
          await new Promise((r) => setTimeout(r, 100));
        }
        for (const service of REPLICATED) {
          for (const replica of [0, 1]) {
            note(`SIGTERM ${service} replica ${replica}`);
            await stack.kill(service, 'SIGTERM', replica);
            note(`${service} replica ${replica} exited; starting it again`);
            const { exitCode, signalCode } = stack.process(service, replica);
            if (exitCode !== 0) {
              // What the process printed last says why it did not drain cleanly.
              const said = stack.recentOutput(service, replica).slice(-15).join('\n');
              exits.push(`${service} ${replica}: exit ${exitCode ?? signalCode}\n${said}`);
            }
            await stack.restart(service, replica);
            note(`${service} replica ${replica} listens again (${answered} calls answered so far)`);
            // Let the load reach the new process before its twin stops.
            await new Promise((r) => setTimeout(r, 250));
          }
        }
      } finally {
        loading = false;
      }
    })();
    // Load enough to be under way at every stop, light enough to leave the restarts some CPU.
    const load = [
      changer('v1', ads[1] as { id: string }),
      changer('v2-2026', ads[2] as { id: string }),
      reader(),
    ];
    const settled = await Promise.allSettled([restarts, ...load]);

    assert.deepEqual(exits, [], 'every replica drained and exited 0 on SIGTERM');
    assert.deepEqual(failures, [], 'no call failed during the rolling restart');
    for (const s of settled) if (s.status === 'rejected') throw s.reason;
    assert.ok(answered > 20, `the load kept going through the restarts (${answered} calls answered)`);
    const approvedIds = [...approved.values()].flat();
    assert.ok(approvedIds.length >= 6, `changes were approved and applied meanwhile (${approvedIds.length})`);

    // Each answered prepare is recorded; each approved change reached the account exactly once.
    for (const change of prepared) {
      const got = await ok<ChangeView>('ads_get_change', { change_id: change.change_id });
      assert.equal(got.digest, change.digest);
    }
    for (const [adId, ids] of approved) {
      for (const id of ids) assert.equal((await waitForChange(id, ['applied', 'failed'])).status, 'applied');
      const rows = await sandboxLedger(stack, account.upstream_account_id, `/ads/${adId}`);
      assert.deepEqual(
        rows.map((r) => r.idempotency_key).sort(),
        ids.map((id) => `change-${id}`).sort(),
        `ad ${adId}: every approved change applied exactly once, nothing else`,
      );
    }
  });
});
