/**
 * The stack on a real Kafka broker (`KAFKA_BROKERS`, one KRaft node) that is restarted while 200
 * approved changes are being applied through `changes.apply`: none is lost and none is applied
 * twice, with the ad platform's ledger as the witness (exactly one mutation per change, under the
 * change's idempotency key, and nothing else).
 *
 * While the broker is down the apply requests still succeed (the work waits in the changes
 * service's outbox), the relay's publishes fail and are retried, and the apply consumer rejoins
 * its group when the broker is back.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { dashboardFormPost } from '@adsmcp/testkit/dashboard';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { type KafkaBrokerCluster, startKafkaBroker } from '@adsmcp/testkit/kafka-broker';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import type { LedgerEntry } from '@adsmcp/testkit/tool-calls';
import { toolCalls } from '@adsmcp/testkit/tool-calls';
import pg from 'pg';

const CHANGES = 200;
const BROKER_DOWN_MS = 15_000;
const APPLY_EVERY_MS = 150;

let broker: KafkaBrokerCluster;
let e2e: SeededStack;
let agent: McpTestClient;

const { ok } = toolCalls(() => agent);

interface Prepared {
  change_id: string;
  digest: string;
}

async function query<T extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: e2e.db.url });
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

/** Every mutation the sandbox applied to `upstreamAccountId`. */
async function ledger(upstreamAccountId: string): Promise<LedgerEntry[]> {
  const res = await fetch(
    `${e2e.stack.urls['ads-sandbox']}/_sandbox/ledger?account_id=${encodeURIComponent(upstreamAccountId)}`,
    { headers: { authorization: `Bearer ${e2e.stack.secrets.sandboxAdminToken}` } },
  );
  assert.equal(res.status, 200);
  return ((await res.json()) as { entries: LedgerEntry[] }).entries;
}

/** Runs `fn` on every item, `concurrency` at a time. */
async function eachLimited<T>(items: readonly T[], concurrency: number, fn: (t: T) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}

/** Approves each change as a person does: signed in to the dashboard, its review page read, Approve posted. */
async function approveInDashboard(changes: Prepared[]): Promise<void> {
  const gateway = e2e.stack.gatewayUrl;
  const signIn = await fetch(`${gateway}/dashboard/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { origin: new URL(gateway).origin, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      email: e2e.seed.dashboardUser,
      password: e2e.seed.dashboardPassword ?? '',
    }).toString(),
  });
  const cookie = signIn.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .find((c) => c?.startsWith('adsmcp_session='));
  assert.equal(signIn.status, 303);
  assert.ok(cookie, 'signed in to the dashboard');
  await eachLimited(changes, 4, async (c) => {
    const html = await (
      await fetch(`${gateway}/dashboard/changes/${c.change_id}`, { headers: { cookie } })
    ).text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1];
    assert.ok(csrf, `the review page of ${c.change_id} has its form`);
    const res = await dashboardFormPost(gateway, `/dashboard/changes/${c.change_id}/approve`, cookie, {
      csrf,
      digest: c.digest,
    });
    assert.equal(res.status, 303, `approving ${c.change_id}`);
  });
}

before(async () => {
  broker = await startKafkaBroker();
  e2e = await startSeededStack({
    env: { KAFKA_BROKERS: broker.brokers, MCP_RATE_PER_SECOND: '10000', MCP_RATE_BURST: '100000' },
  });
  agent = await connectClient('v2-2026', e2e.stack.mcpUrl, e2e.seed.token);
});

after(async () => {
  await agent?.close();
  await e2e?.stop();
  await broker?.stop();
});

describe('the Kafka broker restarted under load', () => {
  test(`restarting the broker while ${CHANGES} approved changes are applied loses none and doubles none: one mutation per change on the ad platform`, async () => {
    const account = e2e.seed.accounts[0];
    assert.ok(account, 'the seed has an ad account');
    const { campaigns } = await ok<{ campaigns: { id: string; status: string }[] }>('ads_list_campaigns', {
      account_id: account.account_id,
      limit: 50,
    });
    const campaign = campaigns.find((c) => c.status !== 'archived');
    assert.ok(campaign, 'the account has a campaign to add ad groups to');

    // Creates: each its own object, so only the idempotency key can keep it single.
    const prepared: Prepared[] = [];
    await eachLimited(
      Array.from({ length: CHANGES }, (_, i) => i),
      4,
      async (i) => {
        prepared.push(
          await ok<Prepared>('ads_create_ad_group', {
            account_id: account.account_id,
            body: {
              campaign_id: campaign.id,
              name: `Broker restart ${i + 1}`,
              status: 'paused',
              bidding_config: { billing_event_type: 'click' },
            },
          }),
        );
      },
    );
    await approveInDashboard(prepared);
    const ids = prepared.map((c) => c.change_id);

    // Apply requests go on at a steady pace (each waits up to 5 s for its outcome), while the
    // broker is stopped and started again once a part of the changes reached the platform.
    let requested = 0;
    let requestedDuringRestart = 0;
    let restarting = false;
    const applying = Promise.all(
      prepared.map(async (c, i) => {
        await sleep(i * APPLY_EVERY_MS);
        if (restarting) requestedDuringRestart++;
        await ok('ads_apply_change', { change_id: c.change_id, digest: c.digest });
        requested++;
      }),
    );
    const mutations = async () => (await ledger(account.upstream_account_id)).length;
    const deadline = Date.now() + 120_000;
    while ((await mutations()) < 30 && Date.now() < deadline) await sleep(100);
    const appliedBeforeRestart = await mutations();
    restarting = true;
    const restartAt = Date.now();
    // Down for longer than the relay's producer retries a send: its publishes fail and are
    // rolled back, and the consumer's connection is lost, not just slowed.
    await broker.restart({ downMs: BROKER_DOWN_MS });
    const restartMs = Date.now() - restartAt;
    restarting = false;
    await applying;
    assert.equal(requested, CHANGES);
    assert.ok(
      appliedBeforeRestart >= 30 && appliedBeforeRestart < CHANGES,
      `the broker was restarted mid-load (${appliedBeforeRestart} of ${CHANGES} applied before it)`,
    );

    const statuses = async () =>
      query<{ status: string; n: number }>(
        'SELECT status, count(*)::int AS n FROM changes.changes WHERE change_id = ANY($1) GROUP BY status ORDER BY status',
        [ids],
      );
    const settled = Date.now() + 180_000;
    while (Date.now() < settled) {
      const now = await statuses();
      if (now.length === 1 && now[0]?.status === 'applied') break;
      await sleep(500);
    }
    assert.deepEqual(await statuses(), [{ status: 'applied', n: CHANGES }], 'every change is applied');

    const entries = await ledger(account.upstream_account_id);
    const perKey = new Map<string, number>();
    for (const e of entries)
      perKey.set(e.idempotency_key ?? '', (perKey.get(e.idempotency_key ?? '') ?? 0) + 1);
    assert.deepEqual(
      [...perKey].filter(([, n]) => n !== 1),
      [],
      'no change was applied twice',
    );
    assert.deepEqual(
      [...perKey.keys()].sort(),
      ids.map((id) => `change-${id}`).sort(),
      'one mutation for each change, and none of any other key',
    );
    process.stdout.write(
      `# broker restarted (down ${BROKER_DOWN_MS / 1000} s) in ${(restartMs / 1000).toFixed(1)} s after ${appliedBeforeRestart} of ${CHANGES} changes were applied; ${requestedDuringRestart} apply requests were made while it was down\n`,
    );
  });
});
