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
  imported: Imported;
}
interface ImportedFigures {
  impressions: string | null;
  clicks: string | null;
  spend: string | null;
  conversions: string | null;
  revenue: string | null;
  row_count: number;
  import_ids: string[];
  partial_import_ids: string[];
}
interface ImportedComparison {
  currency: string;
  current: ImportedFigures;
  previous: ImportedFigures;
}
interface Imported {
  account_currency: ImportedComparison;
  other_currencies: ImportedComparison[];
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
  imported_totals: Imported;
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
let accountCurrency: string;
let campaignId: string;

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '1000', UPSTREAM_BURST: '1000' } });
  agent = await connectClient('v1', e2e.stack.mcpUrl, e2e.seed.token);
  account = e2e.seed.accounts[0]?.account_id as string;
  accountCurrency = e2e.seed.accounts[0]?.currency as string;
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

describe('metrics from performance imports', () => {
  test('rows imported for an ad within the period show on its row, summed exactly, apart per currency', async () => {
    const until = daysAgo(4);
    const since = addDays(until, -6);
    const ads = await ok<{ ads: { id: string }[] }>('ads_list_ads', { account_id: account, limit: 2 });
    const [adId, otherAdId] = ads.ads.map((a) => a.id) as [string, string];
    const otherCurrency = accountCurrency === 'EUR' ? 'USD' : 'EUR';
    const meta = {
      source: 'vendor_a_ads',
      attribution: '7-day click',
      timezone: 'UTC',
    };
    const imported = async (name: string, args: Record<string, unknown>) =>
      (
        await ok<{ import: { import_id: string; status: string } }>('ads_import_performance', {
          ...meta,
          name,
          ...args,
        })
      ).import;
    const first = await imported('First days', {
      currency: accountCurrency,
      since,
      until: addDays(since, 2),
      rows: [
        { ad_id: adId, impressions: 1000, clicks: 10, spend: 0.1, conversions: 1, revenue: 12.3 },
        { ad_id: adId, impressions: 500, clicks: null, spend: 0.2, conversions: 2, revenue: 0.005 },
      ],
    });
    const csvImport = await imported('Last days (CSV)', {
      currency: accountCurrency,
      since: addDays(since, 3),
      until,
      csv: ['Ad,Impr,Clicks,Cost,Conv,Rev', `${adId},1,2,0.70,0,1`, `${otherAdId},9,9,9,9,9`].join('\n'),
      column_mapping: {
        ad_id: 'Ad',
        impressions: 'Impr',
        clicks: 'Clicks',
        spend: 'Cost',
        conversions: 'Conv',
        revenue: 'Rev',
      },
    });
    const straddling = await imported('Across both periods', {
      currency: accountCurrency,
      since: addDays(since, -2),
      until: addDays(since, 1),
      rows: [{ ad_id: adId, impressions: 7, clicks: 7, spend: 7, conversions: 7, revenue: 7 }],
    });
    const foreign = await imported('Other currency', {
      currency: otherCurrency,
      since,
      until,
      rows: [{ ad_id: adId, impressions: 3, clicks: 1, spend: 4.25, conversions: 0, revenue: 8 }],
    });
    for (const i of [first, csvImport, straddling, foreign]) assert.equal(i.status, 'completed');

    const { report } = await ok<{ report: Report }>('ads_create_performance_report', {
      account_id: account,
      name: 'With imports',
      since,
      until,
    });
    const row = report.rows.find((r) => r.ad_id === adId) as Row;
    const mine = row.imported.account_currency;
    assert.equal(mine.currency, accountCurrency);
    assert.deepEqual(mine.current.import_ids, [first.import_id, csvImport.import_id].sort());
    assert.equal(mine.current.row_count, 3);
    assert.equal(mine.current.impressions, '1501');
    assert.equal(mine.current.spend, '1.00');
    assert.equal(mine.current.conversions, '3');
    assert.equal(mine.current.revenue, '13.305');
    // One summed row did not report clicks: unknown, never a partial sum.
    assert.equal(mine.current.clicks, null);
    assert.deepEqual(mine.current.partial_import_ids, [straddling.import_id]);
    assert.deepEqual(mine.previous.partial_import_ids, [straddling.import_id]);
    assert.equal(mine.previous.row_count, 0);
    assert.equal(mine.previous.spend, null);
    assert.deepEqual(
      row.imported.other_currencies.map((c) => [c.currency, c.current.spend, c.current.import_ids]),
      [[otherCurrency, '4.25', [foreign.import_id]]],
    );
    const other = report.rows.find((r) => r.ad_id === otherAdId) as Row;
    assert.equal(other.imported.account_currency.current.spend, '9');
    assert.equal(report.imported_totals.account_currency.current.spend, '10.00');
    assert.equal(report.imported_totals.other_currencies[0]?.current.spend, '4.25');

    const csv = await ok<{ content: string }>('ads_get_performance_report', {
      report_id: report.report_id,
      format: 'csv',
    });
    const records = parse(csv.content, { columns: true }) as Record<string, string>[];
    const lines = records.filter((r) => r.ad_id === adId);
    assert.deepEqual(
      lines.map((r) => [
        r.row_type,
        r.imported_currency,
        r.imported_spend,
        r.imported_revenue,
        r.imported_clicks,
      ]),
      [
        ['ad', accountCurrency, '1.00', '13.305', ''],
        ['ad_other_currency', otherCurrency, '4.25', '8', '1'],
      ],
    );
    const total = records.find((r) => r.row_type === 'total');
    assert.equal(total?.imported_spend, '10.00');

    const md = await ok<{ content: string }>('ads_get_performance_report', {
      report_id: report.report_id,
      format: 'markdown',
    });
    const otherLine = md.content.split('\n').find((l) => l.startsWith('| ad\\_other\\_currency |'));
    assert.ok(otherLine?.includes(`| ${otherCurrency} | ${foreign.import_id} |`), otherLine);
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
