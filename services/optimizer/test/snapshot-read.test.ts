/**
 * A review run's snapshot read from a sandbox seeded larger than one insights page: 70 ads of one
 * ad group over 31 days are 2170 daily rows (a page holds 2000). Every ad's sums equal the
 * sandbox's own per-ad totals over the same range, to the unit, through the real upstream-proxy.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Principal } from '@adsmcp/runtime/principal';
import { testPrincipal } from '@adsmcp/testkit/service-harness';
import { type Stack, startStack } from '../../upstream-proxy/test/stack.ts';
import { readSnapshotAds } from '../src/work/snapshot-read.ts';

const ADS = 70;
const RANGE = '2026-10-01..2026-10-31';

let stack: Stack;
let admin: Principal;
let accountId: string;
let campaignId: string;
let adGroupId: string;

const json = (v: unknown) => JSON.stringify(v);

async function platform(
  method: 'GET' | 'POST',
  path: string,
  query: Record<string, string | string[]> = {},
  body?: unknown,
) {
  const res = await stack.client.call(
    {
      accountId,
      method,
      path,
      query: Object.entries(query).flatMap(([name, v]) =>
        (Array.isArray(v) ? v : [v]).map((value) => ({ name, value })),
      ),
      bodyJson: body === undefined ? '' : json(body),
      idempotencyKey: method === 'POST' ? crypto.randomUUID() : '',
    },
    stack.as(admin),
  );
  assert.ok(res.status >= 200 && res.status < 300, `${method} ${path}: ${res.status} ${res.bodyJson}`);
  return JSON.parse(res.bodyJson) as Record<string, unknown>;
}

before(async () => {
  stack = await startStack();
  admin = testPrincipal();
  const options = { name: 'Large account', currency: 'USD', time_zone: 'UTC', bulk_access: true };
  const sandbox = await stack.newSandboxAccount(options);
  const { account } = await stack.client.createConnection(
    {
      name: 'Large account',
      currency: 'USD',
      timeZone: 'UTC',
      canWrite: true,
      upstreamAccountId: sandbox.accountId,
      upstreamCredential: sandbox.credential,
    },
    stack.as(admin),
  );
  accountId = account?.accountId ?? '';
  const groups = (await platform('GET', '/ad_groups', { limit: '1' })).data as Record<string, string>[];
  adGroupId = groups[0]?.id ?? '';
  campaignId = groups[0]?.campaign_id ?? '';
  const operations = Array.from({ length: ADS }, (_, i) => ({
    type: 'create_ad',
    body: {
      ad_group_id: adGroupId,
      name: `Bulk ad ${i}`,
      creative: {
        type: 'chat_card',
        title: 'Hello',
        body: 'Bulk created',
        target_url: 'https://shop.example.com',
      },
    },
  }));
  await platform('POST', '/bulk_mutation_jobs', {}, { operations });
});

after(async () => {
  await stack?.stop();
});

test('the snapshot of a campaign with more ad-days than one insights page is exact: each ad as the sandbox totals it', async () => {
  const snapshot = await readSnapshotAds(stack.client, stack.as(admin), accountId, [campaignId], RANGE);
  assert.deepEqual(snapshot.daysWithoutRows, [], 'every day of the range has rows');
  const inGroup = snapshot.ads.filter((a) => a.adGroupId === adGroupId);
  assert.ok(
    inGroup.length > ADS,
    `the ad group holds its seeded ads and the ${ADS} new ones (got ${inGroup.length})`,
  );
  assert.ok(inGroup.length * 31 > 2000, 'its daily rows exceed one insights page');
  // The sandbox's own totals: one row per ad over the whole range, summed by the sandbox.
  const totals = new Map<string, Record<string, unknown>>();
  let after: string | undefined;
  do {
    const page = await platform('GET', `/ad_groups/${adGroupId}/insights`, {
      aggregation_level: 'ad',
      time_granularity: 'none',
      time_ranges: RANGE,
      fields: ['impressions', 'clicks', 'conversions', 'spend_micros'],
      limit: '2000',
      ...(after === undefined ? {} : { after }),
    });
    for (const row of page.data as Record<string, unknown>[]) totals.set(String(row.ad_id), row);
    const paging = page.paging as { after: string | null; has_more: boolean };
    after = paging.has_more && paging.after !== null ? paging.after : undefined;
  } while (after !== undefined);
  assert.equal(totals.size, inGroup.length);
  for (const ad of inGroup) {
    const sandbox = totals.get(ad.adId);
    assert.deepEqual(
      {
        impressions: ad.impressions,
        clicks: ad.clicks,
        conversions: ad.conversions,
        spend_micros: ad.spendMicros,
      },
      {
        impressions: sandbox?.impressions,
        clicks: sandbox?.clicks,
        conversions: sandbox?.conversions,
        spend_micros: sandbox?.spend_micros,
      },
      `ad ${ad.adId}`,
    );
  }
});

test('the days of the window the platform has no rows for yet are named, and the sums cover the others', async () => {
  const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
  const range = `${day(-2)}..${day(2)}`;
  const snapshot = await readSnapshotAds(stack.client, stack.as(admin), accountId, [campaignId], range);
  assert.deepEqual(snapshot.daysWithoutRows, [day(1), day(2)]);
  assert.ok(snapshot.ads.some((a) => a.impressions > 0));
});
