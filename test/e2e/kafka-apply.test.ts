/**
 * The stack with its bus on Kafka (`KAFKA_BROKERS`): a change prepared through the MCP client,
 * approved by an operator and applied goes from the changes service's outbox to the
 * `changes.apply` topic and back to its apply worker, and reaches the ad platform exactly once,
 * with the sandbox's ledger as the witness.
 *
 * The broker is a real Apache Kafka (one KRaft node, testkit/kafka-broker.ts) that creates no
 * topic on first use: `changes.apply` and `changes.apply.dead` are the changes service's own.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { type KafkaBrokerCluster, startKafkaBroker } from '@adsmcp/testkit/kafka-broker';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import type { SeedResult, Stack } from '@adsmcp/testkit/stack';
import { sandboxLedger, toolCalls } from '@adsmcp/testkit/tool-calls';
import { Kafka, type KafkaMessage, logLevel } from 'kafkajs';
import pg from 'pg';

let cluster: KafkaBrokerCluster;
let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
let agent: McpTestClient;
let account: SeedResult['accounts'][number];

interface ChangeView {
  change_id: string;
  status: string;
  digest: string;
  operation: { method: string; path: string; body: unknown };
}

const { ok, refused, waitForChange } = toolCalls(() => agent);

/** Reads the whole of `topic` with a consumer group of its own until `want` says it has enough. */
async function readTopic(topic: string, want: (seen: KafkaMessage[]) => boolean): Promise<KafkaMessage[]> {
  const kafka = new Kafka({
    clientId: 'e2e-reader',
    brokers: cluster.brokers.split(','),
    logLevel: logLevel.NOTHING,
  });
  const consumer = kafka.consumer({ groupId: `e2e-reader-${Date.now()}`, maxWaitTimeInMs: 200 });
  const seen: KafkaMessage[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => void seen.push(message) });
    const deadline = Date.now() + 20_000;
    while (!want(seen) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  } finally {
    await consumer.disconnect();
  }
  return seen;
}

async function query<T extends pg.QueryResultRow>(sql: string, params: unknown[]): Promise<T[]> {
  const client = new pg.Client({ connectionString: e2e.db.url });
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

before(async () => {
  cluster = await startKafkaBroker();
  e2e = await startSeededStack({ env: { KAFKA_BROKERS: cluster.brokers, MCP_RATE_BURST: '500' } });
  ({ stack, seed } = e2e);
  account = seed.accounts.find((a) => a.currency === 'USD') as SeedResult['accounts'][number];
  agent = await connectClient('v2-2026', stack.mcpUrl, seed.token);
});

after(async () => {
  await agent?.close();
  await e2e?.stop();
  await cluster?.stop();
});

describe('apply through Kafka', () => {
  test('an approved change is applied exactly once through the changes.apply topic', async () => {
    const { ads } = await ok<{ ads: { id: string; status: string }[] }>('ads_list_ads', {
      account_id: account.account_id,
      limit: 5,
    });
    const ad = ads.find((a) => a.status !== 'archived');
    assert.ok(ad, 'the seeded account has an ad to change');
    const path = `/ads/${ad.id}`;
    const body = { name: 'Kafka-applied copy', status: 'paused' };
    const ledger = () => sandboxLedger(stack, account.upstream_account_id, path);

    const prepared = await ok<ChangeView>('ads_update_ad', {
      account_id: account.account_id,
      ad_id: ad.id,
      body,
    });
    assert.equal(prepared.status, 'prepared');
    await stack.admin(['approve', prepared.change_id, '--workspace', seed.workspaceId, '--yes']);
    assert.deepEqual(await ledger(), [], 'approving changed nothing upstream');

    const applying = await ok<ChangeView>('ads_apply_change', {
      change_id: prepared.change_id,
      digest: prepared.digest,
    });
    const final =
      applying.status === 'applied'
        ? applying
        : await waitForChange<ChangeView>(prepared.change_id, ['applied', 'failed'], 60_000);
    assert.equal(final.status, 'applied', JSON.stringify(final));

    const rows = await ledger();
    assert.equal(rows.length, 1, 'applied exactly once');
    assert.equal(rows[0]?.idempotency_key, `change-${prepared.change_id}`);
    assert.deepEqual(rows[0]?.request_body, body, 'the reviewed payload is the applied payload');

    // The work went through Kafka: the apply message is on its topic, keyed by the object it
    // changes, and the changes service's Kafka consumer counted its delivery (the PostgreSQL
    // queue never does).
    const onTopic = (await readTopic('changes.apply', (seen) => seen.length > 0)).filter(
      (m) => m.value?.toString().includes(prepared.change_id) === true,
    );
    const key = onTopic[0]?.key?.toString() ?? '';
    assert.ok(key.endsWith(` ${path}`), `keyed by the account and the ad's path, got "${key}"`);
    assert.equal(onTopic.length, 1, 'one apply message for the change on changes.apply');
    const messageId = onTopic[0]?.headers?.['bus-message-id']?.toString();
    assert.ok(messageId, 'the message carries its outbox id');
    const outbox = await query<{ status: string }>('SELECT status FROM changes.bus_outbox WHERE id = $1', [
      messageId,
    ]);
    assert.deepEqual(outbox, [{ status: 'done' }], 'the relay marked the outbox row published');
    const deliveries = await query<{ consumer: string; attempts: number }>(
      'SELECT consumer, attempts FROM changes.bus_deliveries WHERE message_id = $1',
      [messageId],
    );
    assert.deepEqual(deliveries, [{ consumer: 'changes-apply', attempts: 1 }]);
    const inbox = await query<{ consumer: string }>(
      'SELECT consumer FROM changes.bus_inbox WHERE message_id = $1',
      [messageId],
    );
    assert.deepEqual(inbox, [{ consumer: 'changes-apply' }], 'the inbox recorded the message once');

    // The changes service made its topics with the admin client: the broker makes none itself.
    const admin = new Kafka({
      clientId: 'e2e-admin',
      brokers: cluster.bootstrap,
      logLevel: logLevel.NOTHING,
    }).admin();
    await admin.connect();
    try {
      const topics = await admin.listTopics();
      assert.ok(topics.includes('changes.apply') && topics.includes('changes.apply.dead'), topics.join(', '));
    } finally {
      await admin.disconnect();
    }

    const twice = await refused('ads_apply_change', { change_id: prepared.change_id });
    assert.match(twice.message, /already applied/);
    assert.equal((await ledger()).length, 1, 'applying twice never doubles the effect');
  });
});
