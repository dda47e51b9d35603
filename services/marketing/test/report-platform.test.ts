/**
 * A performance report read by the marketing service itself: the account, its ad groups and their
 * ad-level insights, through the real upstream-proxy (as the marketing service, with its own key)
 * from the ads sandbox. The counts are the platform's own, summed to the unit; the refusals keep
 * the codes and words the tool reports.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type PerformanceReport, ReportService } from '@adsmcp/proto/marketing/v1/reports_pb';
import { UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { REFUSAL_CODE_METADATA } from '@adsmcp/runtime/platform-read/refusal';
import { createPrincipalSigner, generatePrincipalKeys, type Principal } from '@adsmcp/runtime/principal';
import { createServiceClient } from '@adsmcp/runtime/service-client';
import { MARKETING_ISSUER } from '@adsmcp/runtime/trust';
import { assertRefused, startServiceUnderTest, testPrincipal } from '@adsmcp/testkit/service-harness';
import { Code, ConnectError } from '@connectrpc/connect';
import { timeRanges } from '../src/platform/report-reads.ts';
import { buildServer, MIGRATIONS_DIR, SERVICE_NAME } from '../src/server.ts';
import { type PlatformStack, startPlatformStack } from './platform-stack.ts';

let stack: PlatformStack;
let who: Principal;
let account: string;

const DAY_MS = 86_400_000;
/** A UTC date `days` before today: in the past in the account's time zone when days >= 2. */
const daysAgo = (days: number) => new Date(Date.now() - days * DAY_MS).toISOString().slice(0, 10);
const addDays = (date: string, days: number) =>
  new Date(Date.parse(`${date}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);
const COUNTS = ['impressions', 'clicks', 'spend_micros', 'conversions'] as const;

before(async () => {
  stack = await startPlatformStack();
  who = testPrincipal();
  account = await stack.connectAccount(who);
});

after(async () => {
  await stack?.stop();
});

const create = (
  p: Principal,
  args: { accountId: string; since: string; until: string; campaignId?: string },
) => stack.reports.client.createPerformanceReport({ name: 'Report', ...args }, stack.reports.as(p));

/** The sandbox's own per-ad counts over `ranges` (each read whole by the sandbox), summed here. */
async function sandboxCounts(ranges: string[]): Promise<Map<string, Record<string, bigint>>> {
  const groups = (await stack.platform(who, account, '/ad_groups', { limit: '500' })).data as {
    id: string;
  }[];
  const out = new Map<string, Record<string, bigint>>();
  for (const group of groups) {
    const page = await stack.platform(who, account, `/ad_groups/${group.id}/insights`, {
      aggregation_level: 'ad',
      time_granularity: 'none',
      time_ranges: ranges,
      fields: [...COUNTS],
      limit: '2000',
    });
    for (const row of page.data as Record<string, number | string>[]) {
      const sum = out.get(String(row.ad_id)) ?? {
        impressions: 0n,
        clicks: 0n,
        spend_micros: 0n,
        conversions: 0n,
      };
      for (const name of COUNTS) sum[name] = (sum[name] ?? 0n) + BigInt(row[name] ?? 0);
      out.set(String(row.ad_id), sum);
    }
  }
  return out;
}

const shown = (r: PerformanceReport, period: 'current' | 'previous') =>
  new Map(
    r.rows.map((row) => {
      const m = row.platform?.[period];
      return [
        row.adId,
        {
          impressions: m?.impressions,
          clicks: m?.clicks,
          spend_micros: m?.spendMicros,
          conversions: m?.conversions,
        },
      ];
    }),
  );

test('a period is read in the platform’s ranges of at most 93 days, covering every day once', () => {
  assert.deepEqual(timeRanges('2025-01-01', '2025-12-31'), [
    '2025-01-01..2025-04-03',
    '2025-04-04..2025-07-05',
    '2025-07-06..2025-10-06',
    '2025-10-07..2025-12-31',
  ]);
  assert.deepEqual(timeRanges('2025-03-01', '2025-03-01'), ['2025-03-01..2025-03-01']);
});

describe('CreatePerformanceReport reads the platform', () => {
  test('each ad’s counts over 100 days are the platform’s own, read in ranges and summed to the unit, for both periods', async () => {
    const until = daysAgo(5);
    const since = addDays(until, -99);
    const { report } = await create(who, { accountId: account, since, until });
    assert.ok(report);
    assert.equal(report.currency, 'USD');
    assert.equal(report.timeZone, 'America/New_York');
    assert.equal(report.previousSince, addDays(since, -100));
    assert.ok(report.rows.length > 0, 'the seeded ads are reported');
    // The sandbox's totals over another split of the same days than the report's 93-day ranges.
    const current = await sandboxCounts([
      `${since}..${addDays(since, 49)}`,
      `${addDays(since, 50)}..${until}`,
    ]);
    const previous = await sandboxCounts([
      `${report.previousSince}..${addDays(report.previousSince, 49)}`,
      `${addDays(report.previousSince, 50)}..${report.previousUntil}`,
    ]);
    assert.deepEqual(shown(report, 'current'), current);
    assert.deepEqual(shown(report, 'previous'), previous);
    const total = [...current.values()].reduce((t, c) => t + (c.impressions ?? 0n), 0n);
    assert.equal(report.totals?.current?.impressions, total);
    const { report: stored } = await stack.reports.client.getPerformanceReport(
      { reportId: report.reportId },
      stack.reports.as(who),
    );
    assert.deepEqual(stored, report);
  });

  test('a campaign’s report holds only its ads; an unknown campaign is not found, naming it', async () => {
    const campaigns = (await stack.platform(who, account, '/campaigns', { limit: '10' })).data as {
      id: string;
    }[];
    const campaignId = campaigns[0]?.id ?? '';
    const { report } = await create(who, {
      accountId: account,
      since: daysAgo(9),
      until: daysAgo(3),
      campaignId,
    });
    assert.ok((report?.rows.length ?? 0) > 0);
    assert.ok(report?.rows.every((r) => r.campaignId === campaignId));
    assert.equal(report?.campaignId, campaignId);
    await assertRefused(
      create(who, {
        accountId: account,
        since: daysAgo(9),
        until: daysAgo(3),
        campaignId: 'cmp_does_not_exist',
      }),
      Code.NotFound,
      /^no campaign cmp_does_not_exist in ad account .*; ads_list_campaigns lists them$/,
    );
  });

  test('bad periods are refused naming the rule, by the account’s local day, and nothing is saved', async () => {
    const p = testPrincipal();
    const mine = await stack.connectAccount(p);
    const refuse = (since: string, until: string, message: RegExp) =>
      assertRefused(create(p, { accountId: mine, since, until }), Code.InvalidArgument, message);
    await refuse(daysAgo(3), daysAgo(5), /since \(.*\) must not be after until/);
    await refuse('2025-02-30', daysAgo(5), /since must be a date/);
    await refuse(daysAgo(400), daysAgo(3), /spans 398 days; a report covers at most 366 days/);
    await refuse(daysAgo(3), addDays(daysAgo(0), 2), /after the account's current local day/);
    await refuse('2000-01-05', '2000-01-10', /would start before 2000-01-01/);
    const { total } = await stack.reports.client.listPerformanceReports({}, stack.reports.as(p));
    assert.equal(total, 0);
  });

  test('an ad account of another workspace is not found', async () => {
    await assertRefused(
      create(testPrincipal(), { accountId: account, since: daysAgo(9), until: daysAgo(3) }),
      Code.NotFound,
      /account/,
    );
  });

  test('an account with more ad groups than a report covers is refused as report_too_large, nothing saved', async () => {
    const p = testPrincipal();
    const big = await stack.connectAccount(p, { bulkAccess: true });
    const campaigns = (await stack.platform(p, big, '/campaigns', { limit: '1' })).data as { id: string }[];
    const operations = Array.from({ length: 100 }, (_, i) => ({
      type: 'create_ad_group',
      body: {
        campaign_id: campaigns[0]?.id,
        name: `Group ${i}`,
        status: 'paused',
        bidding_config: { billing_event_type: 'click', strategy: 'fixed_bid', max_bid_micros: 900_000 },
      },
    }));
    await stack.post(p, big, '/bulk_mutation_jobs', { operations });
    const refused = await create(p, { accountId: big, since: daysAgo(9), until: daysAgo(3) }).then(
      () => assert.fail('the report was made'),
      (err: unknown) => ConnectError.from(err),
    );
    assert.equal(refused.code, Code.FailedPrecondition);
    assert.equal(refused.metadata.get(REFUSAL_CODE_METADATA), 'report_too_large');
    assert.equal(
      refused.rawMessage,
      'the account has more than 100 ad groups; a report covers at most 100: give a campaign_id with fewer',
    );
    const { total } = await stack.reports.client.listPerformanceReports({}, stack.reports.as(p));
    assert.equal(total, 0);
  });
});

test('an upstream-proxy that does not trust the marketing service’s key is named as the cause, nothing saved', async () => {
  const untrusted = await generatePrincipalKeys();
  const upstream = createServiceClient(
    UpstreamService,
    stack.proxyUrl,
    'upstream-proxy',
    await createPrincipalSigner(untrusted.privateKeyPem, MARKETING_ISSUER),
  );
  const reports = await startServiceUnderTest({
    service: ReportService,
    name: SERVICE_NAME,
    migrations: MIGRATIONS_DIR,
    build: (deps) => buildServer({ ...deps, upstream }),
  });
  try {
    await assertRefused(
      reports.client.createPerformanceReport(
        { accountId: account, name: 'Untrusted', since: daysAgo(9), until: daysAgo(3) },
        reports.as(who),
      ),
      Code.Unavailable,
      /the upstream-proxy refused the marketing service's token .*MARKETING_PUBLIC_KEY; nothing was saved$/,
    );
  } finally {
    await reports.stop();
  }
});
