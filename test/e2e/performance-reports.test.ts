/**
 * Performance reports end to end: the official MCP client against every process and the sandbox's
 * seeded insights. A report's figures are the platform's own (the same numbers the insight tools
 * read), compared with the preceding period, with saved creative labels joined by ad, and
 * exported as JSON, formula-safe CSV and escaped Markdown.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import { toolCalls } from '@adsmcp/testkit/tool-calls';
import { parse } from 'csv-parse/sync';

let e2e: SeededStack;
let agent: McpTestClient;
const { ok, refused } = toolCalls(() => agent);

type Figures = Record<string, string | null>;
interface Comparison {
  current: Figures;
  previous: Figures;
  absolute_change: Figures;
  relative_change: Figures;
}
interface Row {
  ad_id: string;
  ad_name: string;
  ad_group_id: string;
  campaign_id: string;
  creative_labels: { item_id: string; name: string; hook: string; offer: string }[];
  platform: Comparison;
}
interface Report {
  report_id: string;
  name: string;
  account_id: string;
  campaign_id: string | null;
  since: string;
  until: string;
  previous_since: string;
  previous_until: string;
  currency: string;
  time_zone: string;
  preliminary: boolean;
  revision: number;
  rows: Row[];
  totals: Comparison;
}
interface InsightRow {
  ad_id: string;
  impressions: number;
  clicks: number;
  spend_micros: number;
  conversions: number;
}

const DAY_MS = 86_400_000;
/** A UTC date `days` before today: in the past in every account's time zone when days >= 2. */
const daysAgo = (days: number) => new Date(Date.now() - days * DAY_MS).toISOString().slice(0, 10);
const addDays = (date: string, days: number) =>
  new Date(Date.parse(`${date}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);

let account: string;
let campaignId: string;

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '1000', UPSTREAM_BURST: '1000' } });
  agent = await connectClient('v1', e2e.stack.mcpUrl, e2e.seed.token);
  account = e2e.seed.accounts[0]?.account_id as string;
  const campaigns = await ok<{ campaigns: { id: string }[] }>('ads_list_campaigns', { account_id: account });
  campaignId = campaigns.campaigns[0]?.id as string;
});

after(async () => {
  await agent?.close();
  await e2e?.stop();
});

/** The platform's own per-ad counts over `range`, read with the insight tools. */
async function insightsByAd(adGroupIds: string[], range: string): Promise<Map<string, InsightRow>> {
  const out = new Map<string, InsightRow>();
  for (const id of adGroupIds) {
    const res = await ok<{ insights: InsightRow[] }>('ads_get_ad_group_insights', {
      account_id: account,
      ad_group_id: id,
      aggregation_level: 'ad',
      time_ranges: [range],
      fields: ['impressions', 'clicks', 'spend_micros', 'conversions'],
      limit: 2000,
    });
    for (const row of res.insights) out.set(row.ad_id, row);
  }
  return out;
}

const countsOf = (r: InsightRow | undefined) => ({
  impressions: String(r?.impressions),
  clicks: String(r?.clicks),
  spend_micros: String(r?.spend_micros),
  conversions: String(r?.conversions),
});
const pick = (f: Figures) => ({
  impressions: f.impressions,
  clicks: f.clicks,
  spend_micros: f.spend_micros,
  conversions: f.conversions,
});

describe('ads_create_performance_report', () => {
  let report: Report;
  let creativeId: string;
  const until = daysAgo(3);
  const since = addDays(until, -6);

  before(async () => {
    const ads = await ok<{ ads: { id: string }[] }>('ads_list_ads', { account_id: account, limit: 1 });
    const adId = ads.ads[0]?.id as string;
    creativeId = (
      await ok<{ item: { item_id: string } }>('ads_save_marketing_item', {
        kind: 'creative',
        name: '=HYPERLINK("https://evil.example","spring")',
        data: { account_id: account, ad_id: adId, hook: 'Spring', offer: '2 for 1' },
      })
    ).item.item_id;
    report = (
      await ok<{ report: Report }>('ads_create_performance_report', {
        account_id: account,
        name: 'Last week | spring',
        since,
        until,
      })
    ).report;
  });

  test('every ad of the account is reported for the period and compared with the preceding one', async () => {
    assert.equal(report.since, since);
    assert.equal(report.until, until);
    assert.equal(report.previous_since, addDays(since, -7));
    assert.equal(report.previous_until, addDays(since, -1));
    assert.equal(report.revision, 1);
    assert.equal(report.preliminary, false);
    assert.equal(report.rows.length, 12);
    const groups = [...new Set(report.rows.map((r) => r.ad_group_id))];
    const current = await insightsByAd(groups, `${since}..${until}`);
    const previous = await insightsByAd(groups, `${report.previous_since}..${report.previous_until}`);
    for (const row of report.rows) {
      assert.deepEqual(pick(row.platform.current), countsOf(current.get(row.ad_id)), row.ad_id);
      assert.deepEqual(pick(row.platform.previous), countsOf(previous.get(row.ad_id)), row.ad_id);
      const change = BigInt(row.platform.current.clicks ?? '') - BigInt(row.platform.previous.clicks ?? '');
      assert.equal(row.platform.absolute_change.clicks, String(change));
    }
    const total = report.rows.reduce((t, r) => t + BigInt(r.platform.current.impressions ?? '0'), 0n);
    assert.equal(report.totals.current.impressions, String(total));
  });

  test('the saved creative label is joined to its ad, and only to it', () => {
    const labelled = report.rows.filter((r) => r.creative_labels.length > 0);
    assert.equal(labelled.length, 1);
    assert.deepEqual(labelled[0]?.creative_labels, [
      {
        item_id: creativeId,
        name: '=HYPERLINK("https://evil.example","spring")',
        hook: 'Spring',
        offer: '2 for 1',
      },
    ]);
  });

  test('json, csv and markdown come back from the stored report; a formula-like name is neutralised in CSV', async () => {
    const json = await ok<{ format: string; report: Report; media_type: string }>(
      'ads_get_performance_report',
      {
        report_id: report.report_id,
      },
    );
    assert.equal(json.format, 'json');
    assert.deepEqual(json.report, report);

    const csv = await ok<{ content: string; media_type: string; report: null }>(
      'ads_get_performance_report',
      {
        report_id: report.report_id,
        format: 'csv',
      },
    );
    assert.equal(csv.media_type, 'text/csv');
    assert.equal(csv.report, null);
    const records = parse(csv.content, { columns: true }) as Record<string, string>[];
    assert.equal(records.length, 13);
    const labelled = records.find((r) => r.creative_labels !== '');
    assert.equal(labelled?.creative_labels, `'=HYPERLINK("https://evil.example","spring")`);
    assert.equal(records[12]?.row_type, 'total');
    assert.equal(records[12]?.impressions, report.totals.current.impressions);

    const md = await ok<{ content: string; media_type: string }>('ads_get_performance_report', {
      report_id: report.report_id,
      format: 'markdown',
    });
    assert.equal(md.media_type, 'text/markdown');
    assert.ok(md.content.includes('| name | Last week \\| spring |'));
    assert.ok(md.content.includes('\\=HYPERLINK(&quot;https://evil.example&quot;,&quot;spring&quot;)'));
  });

  test('the report is listed, most recent first', async () => {
    const list = await ok<{ reports: { report_id: string; ad_count: number }[]; total: number }>(
      'ads_list_performance_reports',
      { limit: 100 },
    );
    assert.equal(list.reports[0]?.report_id, report.report_id);
    assert.equal(list.reports[0]?.ad_count, 12);
  });
});

describe('periods and campaigns', () => {
  test('a period longer than the platform’s 93-day range is read in pieces and summed exactly', async () => {
    const until = daysAgo(5);
    const since = addDays(until, -99);
    const { report } = await ok<{ report: Report }>('ads_create_performance_report', {
      account_id: account,
      name: 'A hundred days',
      since,
      until,
      campaign_id: campaignId,
    });
    assert.equal(report.rows.length, 6);
    assert.ok(report.rows.every((r) => r.campaign_id === campaignId));
    const row = report.rows[0] as Row;
    const res = await ok<{ insights: InsightRow[] }>('ads_get_ad_insights', {
      account_id: account,
      ad_id: row.ad_id,
      time_ranges: [`${since}..${addDays(since, 49)}`, `${addDays(since, 50)}..${until}`],
      fields: ['impressions', 'clicks', 'spend_micros', 'conversions'],
    });
    const sum = (name: keyof InsightRow) => String(res.insights.reduce((t, r) => t + BigInt(r[name]), 0n));
    assert.equal(row.platform.current.impressions, sum('impressions'));
    assert.equal(row.platform.current.spend_micros, sum('spend_micros'));
  });

  test('bad dates are refused naming the rule, before anything is saved', async () => {
    const before = (await ok<{ total: number }>('ads_list_performance_reports', {})).total;
    const base = { account_id: account, name: 'Bad' };
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ since: daysAgo(3), until: daysAgo(5) }, /since .* must not be after until/],
      [{ since: '2026-02-30', until: daysAgo(5) }, /since.* must be a date/],
      [{ since: daysAgo(400), until: daysAgo(3) }, /spans 398 days; a report covers at most 366 days/],
      [{ since: daysAgo(3), until: addDays(daysAgo(0), 2) }, /after the account's current local day/],
      [{ since: '2000-01-05', until: '2000-01-10' }, /would start before 2000-01-01/],
    ];
    for (const [args, message] of cases) {
      const error = await refused('ads_create_performance_report', { ...base, ...args });
      assert.equal(error.code, 'invalid_argument', JSON.stringify(args));
      assert.match(error.message, message);
    }
    const after = (await ok<{ total: number }>('ads_list_performance_reports', {})).total;
    assert.equal(after, before);
  });

  test('an unknown campaign or report is not found', async () => {
    const error = await refused('ads_create_performance_report', {
      account_id: account,
      name: 'Nope',
      since: daysAgo(9),
      until: daysAgo(3),
      campaign_id: 'cmp_does_not_exist',
    });
    assert.equal(error.code, 'not_found');
    assert.match(error.message, /no campaign cmp_does_not_exist/);
    const missing = await refused('ads_get_performance_report', {
      report_id: '00000000-0000-4000-8000-000000000000',
    });
    assert.equal(missing.code, 'not_found');
  });
});
