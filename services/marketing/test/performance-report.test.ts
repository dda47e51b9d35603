import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { ReportService } from '@adsmcp/proto/marketing/v1/reports_pb';
import type { Principal } from '@adsmcp/runtime/principal';
import {
  assertRefused,
  type ServiceUnderTest,
  startServiceUnderTest,
  testPrincipal,
} from '@adsmcp/testkit/service-harness';
import { Code } from '@connectrpc/connect';
import { parse } from 'csv-parse/sync';
import { type AdCounts, compareMetrics, decimalText, metricsOf } from '../src/domain/performance-report.ts';
import { reportPeriod, todayIn } from '../src/domain/report-period.ts';
import { type ReportInput, saveReport } from '../src/handlers/report-handlers.ts';
import { buildServer, MIGRATIONS_DIR, SERVICE_NAME } from '../src/server.ts';
import { insertItem } from '../src/store/item-store.ts';

let svc: ServiceUnderTest<typeof ReportService>;

before(async () => {
  svc = await startServiceUnderTest({
    service: ReportService,
    name: SERVICE_NAME,
    migrations: MIGRATIONS_DIR,
    build: buildServer,
  });
});

after(async () => {
  await svc?.stop();
});

const ACCOUNT = '5b1f1c7e-4f7e-4c0e-9a55-0d3e6f1b2c3d';
/** A report's input as the tests vary it: the platform's counts as the service read them. */
interface CreateRequest {
  name: string;
  since: string;
  until: string;
  current: AdCounts[];
  previous: AdCounts[];
}

function ad(adId: string, counts: Partial<AdCounts['counts']>): AdCounts {
  return {
    adId,
    adName: `Ad ${adId}`,
    adGroupId: 'adg_1',
    adGroupName: 'Group A',
    campaignId: 'cmp_1',
    counts: {
      impressions: undefined,
      clicks: undefined,
      spend_micros: undefined,
      conversions: undefined,
      ...counts,
    },
  };
}

function createRequest(overrides: Partial<CreateRequest> = {}): ReportInput {
  const r: CreateRequest = {
    name: 'First week of March',
    since: '2025-03-01',
    until: '2025-03-07',
    current: [ad('ad_1', { impressions: 1000n, clicks: 50n, spend_micros: 25_000_000n, conversions: 5n })],
    previous: [ad('ad_1', { impressions: 800n, clicks: 40n, spend_micros: 30_000_000n, conversions: 0n })],
    ...overrides,
  };
  const timeZone = 'America/Los_Angeles';
  return {
    name: r.name,
    accountId: ACCOUNT,
    currency: 'USD',
    timeZone,
    period: reportPeriod(r.since, r.until, todayIn(timeZone, new Date())),
    current: r.current,
    previous: r.previous,
  };
}

/** A report saved from `input` as CreatePerformanceReport saves it, read back through the service. */
async function created(who: Principal, input: ReportInput) {
  const saved = await saveReport(svc.pool, who, input);
  const { report } = await svc.client.getPerformanceReport({ reportId: saved.reportId }, svc.as(who));
  return { report };
}

async function saveCreative(
  who: Principal,
  name: string,
  adId: string,
  accountId = ACCOUNT,
): Promise<string> {
  const itemId = randomUUID();
  await insertItem(svc.pool, {
    workspaceId: who.workspaceId,
    itemId,
    kind: 'creative',
    name,
    collection: '',
    tags: [],
    data: { account_id: accountId, ad_id: adId, hook: 'Spring', offer: '2 for 1' },
  });
  return itemId;
}

interface ImportRow {
  ad_id: string;
  impressions?: string | null;
  clicks?: string | null;
  spend?: string | null;
  conversions?: string | null;
  revenue?: string | null;
}

/** A performance import as the worker leaves it (status completed unless said), with its rows. */
async function saveImport(
  who: Principal,
  o: { since: string; until: string; currency?: string; status?: string; rows: ImportRow[] },
): Promise<string> {
  const importId = randomUUID();
  await svc.pool.query(
    `INSERT INTO performance_imports (workspace_id, import_id, source, name, currency, timezone, attribution,
       since, until, format, content_hash, status, created_by)
     VALUES ($1, $2, 'other', 'test', $3, 'UTC', '7-day click', $4, $5, 'rows', $6, $7, 'test')`,
    [
      who.workspaceId,
      importId,
      o.currency ?? 'USD',
      o.since,
      o.until,
      randomUUID().replace(/-/g, '').padEnd(64, '0'),
      o.status ?? 'completed',
    ],
  );
  for (const [i, r] of o.rows.entries()) {
    await svc.pool.query(
      `INSERT INTO performance_import_rows (workspace_id, import_id, row_number, ad_id, impressions, clicks,
         spend, conversions, revenue) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [
        who.workspaceId,
        importId,
        i + 1,
        r.ad_id,
        r.impressions ?? null,
        r.clicks ?? null,
        r.spend ?? null,
        r.conversions ?? null,
        r.revenue ?? null,
      ],
    );
  }
  return importId;
}

const full = (adId: string, spend: string, revenue: string): ImportRow => ({
  ad_id: adId,
  impressions: '100',
  clicks: '7',
  spend,
  conversions: '1.5',
  revenue,
});

describe('figures', () => {
  test('derived figures are exact decimals rounded half up; a zero or unknown denominator is null', () => {
    const m = metricsOf({ impressions: 3n, clicks: 2n, spend_micros: 1_000_001n, conversions: 0n });
    assert.equal(m.ctr, '0.666667');
    assert.equal(m.cpc_micros, '500001');
    assert.equal(m.cpa_micros, null);
    const unknown = metricsOf({ impressions: null, clicks: 2n, spend_micros: null, conversions: 1n });
    assert.equal(unknown.ctr, null);
    assert.equal(unknown.cpa_micros, null);
    assert.equal(decimalText(-1234n, 6), '-0.001234');
  });

  test('the change is current minus previous as shown, and the relative change null when previous is 0', () => {
    const c = compareMetrics(
      metricsOf({ impressions: 1000n, clicks: 50n, spend_micros: 25_000_000n, conversions: 5n }),
      metricsOf({ impressions: 800n, clicks: 40n, spend_micros: 30_000_000n, conversions: 0n }),
    );
    assert.equal(c.absolute_change.impressions, '200');
    assert.equal(c.relative_change.impressions, '0.2500');
    assert.equal(c.absolute_change.spend_micros, '-5000000');
    assert.equal(c.relative_change.spend_micros, '-0.1667');
    assert.equal(c.absolute_change.ctr, '0.000000');
    assert.equal(c.absolute_change.conversions, '5');
    assert.equal(c.relative_change.conversions, null);
    assert.equal(c.previous.cpa_micros, null);
    assert.equal(c.absolute_change.cpa_micros, null);
  });

  test('the preceding period has the same length and ends the day before since', () => {
    assert.deepEqual(reportPeriod('2024-03-01', '2024-03-31', '2024-04-02'), {
      since: '2024-03-01',
      until: '2024-03-31',
      previousSince: '2024-01-30',
      previousUntil: '2024-02-29',
      days: 31,
      preliminary: false,
    });
    assert.equal(reportPeriod('2024-04-01', '2024-04-02', '2024-04-02').preliminary, true);
  });
});

describe('CreatePerformanceReport', () => {
  test('stores the comparison with the preceding period and creative labels joined by ad', async () => {
    const who = testPrincipal();
    const labelId = await saveCreative(who, '=Spring hero', 'ad_1');
    await saveCreative(who, 'Other account', 'ad_1', randomUUID());
    await saveCreative(testPrincipal(), 'Other workspace', 'ad_1');
    const { report } = await created(who, createRequest());
    assert.ok(report);
    assert.equal(report.revision, 1);
    assert.equal(report.previousSince, '2025-02-22');
    assert.equal(report.previousUntil, '2025-02-28');
    assert.equal(report.preliminary, false);
    const row = report.rows[0];
    assert.deepEqual(
      row?.creativeLabels.map((l) => [l.itemId, l.name, l.hook, l.offer]),
      [[labelId, '=Spring hero', 'Spring', '2 for 1']],
    );
    assert.equal(row?.platform?.current?.ctr, '0.050000');
    assert.equal(row?.platform?.previous?.spendMicros, 30_000_000n);
    assert.equal(row?.platform?.absoluteChange?.clicks, '10');
    assert.equal(row?.platform?.relativeChange?.conversions, undefined);
    assert.equal(report.totals?.current?.impressions, 1000n);

    const { report: again } = await svc.client.getPerformanceReport(
      { reportId: report.reportId },
      svc.as(who),
    );
    assert.deepEqual(again, report);
  });

  test('an ad missing from one period has unknown figures there, never 0', async () => {
    const who = testPrincipal();
    const { report } = await created(
      who,
      createRequest({
        current: [
          ad('ad_1', { impressions: 10n, clicks: 1n, spend_micros: 1n, conversions: 0n }),
          ad('ad_2', { impressions: 5n }),
        ],
        previous: [ad('ad_1', { impressions: 10n, clicks: 1n, spend_micros: 1n, conversions: 0n })],
      }),
    );
    const second = report?.rows.find((r) => r.adId === 'ad_2');
    assert.equal(second?.platform?.current?.impressions, 5n);
    assert.equal(second?.platform?.current?.clicks, undefined);
    assert.equal(second?.platform?.previous?.impressions, undefined);
    assert.equal(second?.platform?.absoluteChange?.impressions, undefined);
    // A total over an unknown figure is unknown.
    assert.equal(report?.totals?.current?.clicks, undefined);
    assert.equal(report?.totals?.current?.impressions, 15n);
  });

  test('a name from the platform holding the NUL character is kept with U+FFFD in its place', async () => {
    const who = testPrincipal();
    const named = {
      ...ad('ad_1', { impressions: 1n }),
      adName: 'Spring\u0000hero',
      adGroupName: 'Group\u0000A',
    };
    const { report } = await created(who, createRequest({ current: [named], previous: [] }));
    assert.deepEqual(
      [report?.rows[0]?.adName, report?.rows[0]?.adGroupName],
      ['Spring\uFFFDhero', 'Group\uFFFDA'],
    );
    const { content } = await svc.client.getPerformanceReport(
      { reportId: report?.reportId ?? '', format: 'csv' },
      svc.as(who),
    );
    assert.match(content, /Spring\uFFFDhero/);
  });

  test('counts given with the request are refused, naming the fields: the service reads the platform itself', async () => {
    await assertRefused(
      svc.client.createPerformanceReport(
        {
          accountId: ACCOUNT,
          name: 'Given counts',
          since: '2025-03-01',
          until: '2025-03-07',
          currency: 'USD',
          current: [{ adId: 'ad_1', impressions: 1n }],
        },
        svc.as(testPrincipal()),
      ),
      Code.InvalidArgument,
      /^currency, current must not be given: the service reads the account and its insights from the ad platform itself$/,
    );
  });

  test('without the upstream-proxy a report is refused as unavailable, naming what the service lacks', async () => {
    await assertRefused(
      svc.client.createPerformanceReport(
        { accountId: ACCOUNT, name: 'No platform', since: '2025-03-01', until: '2025-03-07' },
        svc.as(testPrincipal()),
      ),
      Code.Unavailable,
      /cannot read the ad platform: it runs without UPSTREAM_PROXY_URL or MARKETING_PRIVATE_KEY/,
    );
  });

  test('a viewer may not create a report', async () => {
    const viewer = testPrincipal({ role: 'viewer', scopes: ['read'] });
    await assertRefused(
      svc.client.createPerformanceReport(
        { accountId: ACCOUNT, name: 'Viewed', since: '2025-03-01', until: '2025-03-07' },
        svc.as(viewer),
      ),
      Code.PermissionDenied,
      /write scope/,
    );
  });
});

describe('imported metrics joined by ad', () => {
  test('completed imports lying within a period are summed exactly per ad, with their ids, for both periods', async () => {
    const who = testPrincipal();
    // The report: 2025-03-01..07, the preceding period 2025-02-22..28.
    const a = await saveImport(who, {
      since: '2025-03-01',
      until: '2025-03-03',
      rows: [full('ad_1', '10.10', '30.005'), full('ad_1', '0.20', '1'), full('ad_other', '5', '5')],
    });
    const b = await saveImport(who, {
      since: '2025-03-04',
      until: '2025-03-07',
      rows: [full('ad_1', '0.7', '0')],
    });
    const before = await saveImport(who, {
      since: '2025-02-22',
      until: '2025-02-28',
      rows: [full('ad_1', '3', '-2.5')],
    });
    // Not counted: running, failed, or another workspace's.
    await saveImport(who, {
      since: '2025-03-01',
      until: '2025-03-07',
      status: 'running',
      rows: [full('ad_1', '99', '99')],
    });
    await saveImport(who, {
      since: '2025-03-01',
      until: '2025-03-07',
      status: 'failed',
      rows: [full('ad_1', '99', '99')],
    });
    await saveImport(testPrincipal(), {
      since: '2025-03-01',
      until: '2025-03-07',
      rows: [full('ad_1', '99', '99')],
    });

    const { report } = await created(who, createRequest());
    const imported = report?.rows[0]?.imported?.accountCurrency;
    assert.equal(imported?.currency, 'USD');
    assert.deepEqual(imported?.current?.importIds, [a, b].sort());
    assert.equal(imported?.current?.rowCount, 3);
    assert.equal(imported?.current?.impressions, '300');
    assert.equal(imported?.current?.clicks, '21');
    assert.equal(imported?.current?.spend, '11.00');
    assert.equal(imported?.current?.conversions, '4.5');
    assert.equal(imported?.current?.revenue, '31.005');
    assert.deepEqual(imported?.current?.partialImportIds, []);
    assert.deepEqual(imported?.previous?.importIds, [before]);
    assert.equal(imported?.previous?.spend, '3');
    assert.equal(imported?.previous?.revenue, '-2.5');
    assert.deepEqual(report?.rows[0]?.imported?.otherCurrencies, []);
    // The totals are the sum over the report's ads (ad_other is not one of them).
    assert.equal(report?.importedTotals?.accountCurrency?.current?.spend, '11.00');
    assert.equal(report?.importedTotals?.accountCurrency?.current?.rowCount, 3);
  });

  test('a metric a summed row did not report is unknown, never 0; an ad no import names has no figures', async () => {
    const who = testPrincipal();
    await saveImport(who, {
      since: '2025-03-01',
      until: '2025-03-07',
      rows: [full('ad_1', '1', '2'), { ad_id: 'ad_1', impressions: '5', clicks: null, spend: '2' }],
    });
    const { report } = await created(
      who,
      createRequest({
        current: [ad('ad_1', { impressions: 1n }), ad('ad_2', { impressions: 1n })],
      }),
    );
    const first = report?.rows.find((r) => r.adId === 'ad_1')?.imported?.accountCurrency?.current;
    assert.equal(first?.impressions, '105');
    assert.equal(first?.spend, '3');
    assert.equal(first?.clicks, undefined);
    assert.equal(first?.revenue, undefined);
    const second = report?.rows.find((r) => r.adId === 'ad_2')?.imported?.accountCurrency;
    assert.equal(second?.current?.rowCount, 0);
    assert.equal(second?.current?.spend, undefined);
    assert.deepEqual(second?.current?.importIds, []);
    // Totals: ad_2 has no rows, so the totals are ad_1's, and a metric unknown there is unknown.
    const totals = report?.importedTotals?.accountCurrency?.current;
    assert.equal(totals?.impressions, '105');
    assert.equal(totals?.clicks, undefined);
  });

  test('an import only partly inside a period is left out and named; another currency is reported apart', async () => {
    const who = testPrincipal();
    const straddling = await saveImport(who, {
      since: '2025-02-27',
      until: '2025-03-02',
      rows: [full('ad_1', '50', '50')],
    });
    const euros = await saveImport(who, {
      since: '2025-03-01',
      until: '2025-03-07',
      currency: 'EUR',
      rows: [full('ad_1', '8.25', '20')],
    });
    const { report } = await created(who, createRequest());
    const imported = report?.rows[0]?.imported;
    const usd = imported?.accountCurrency;
    assert.equal(usd?.current?.rowCount, 0);
    assert.equal(usd?.current?.spend, undefined);
    assert.deepEqual(usd?.current?.partialImportIds, [straddling]);
    assert.deepEqual(usd?.previous?.partialImportIds, [straddling]);
    assert.equal(imported?.otherCurrencies.length, 1);
    const eur = imported?.otherCurrencies[0];
    assert.equal(eur?.currency, 'EUR');
    assert.deepEqual(eur?.current?.importIds, [euros]);
    assert.equal(eur?.current?.spend, '8.25');
    assert.equal(eur?.previous?.rowCount, 0);
    assert.equal(report?.importedTotals?.otherCurrencies[0]?.current?.spend, '8.25');

    const csv = await svc.client.getPerformanceReport(
      { reportId: report?.reportId ?? '', format: 'csv' },
      svc.as(who),
    );
    const records = parse(csv.content, { columns: true }) as Record<string, string>[];
    assert.deepEqual(
      records.map((r) => [r.row_type, r.ad_id, r.imported_currency, r.imported_spend, r.spend_micros]),
      [
        ['ad', 'ad_1', 'USD', '', '25000000'],
        ['ad_other_currency', 'ad_1', 'EUR', '8.25', ''],
        ['total', '', 'USD', '', '25000000'],
        ['total_other_currency', '', 'EUR', '8.25', ''],
      ],
    );
    assert.equal(records[0]?.imported_partial_import_ids, straddling);
  });
});

describe('listing and reading reports', () => {
  test('lists the workspace’s reports, most recent first, with pages', async () => {
    const who = testPrincipal();
    for (const name of ['One', 'Two', 'Three']) {
      await created(who, createRequest({ name }));
    }
    const first = await svc.client.listPerformanceReports({ limit: 2 }, svc.as(who));
    assert.deepEqual(
      first.reports.map((r) => r.name),
      ['Three', 'Two'],
    );
    assert.equal(first.total, 3);
    assert.equal(first.nextOffset, 2);
    assert.equal(first.reports[0]?.adCount, 1);
    const last = await svc.client.listPerformanceReports({ offset: 2 }, svc.as(who));
    assert.deepEqual(
      last.reports.map((r) => r.name),
      ['One'],
    );
    assert.equal(last.nextOffset, undefined);
    const other = await svc.client.listPerformanceReports({}, svc.as(testPrincipal()));
    assert.equal(other.total, 0);
  });

  test('csv and markdown are rendered from the stored report; another workspace’s report is not found', async () => {
    const who = testPrincipal();
    await saveCreative(who, '=Spring hero', 'ad_1');
    const { report } = await created(who, createRequest());
    const reportId = report?.reportId ?? '';
    const csv = await svc.client.getPerformanceReport({ reportId, format: 'csv' }, svc.as(who));
    assert.equal(csv.mediaType, 'text/csv');
    assert.equal(csv.report, undefined);
    const records = parse(csv.content, { columns: true }) as Record<string, string>[];
    assert.equal(records[0]?.creative_labels, "'=Spring hero");
    assert.equal(records[0]?.spend_micros_change, '-5000000');
    const md = await svc.client.getPerformanceReport({ reportId, format: 'markdown' }, svc.as(who));
    assert.equal(md.mediaType, 'text/markdown');
    assert.match(md.content, /\| ad \| ad\\_1 \| Ad ad\\_1 \|.* \\=Spring hero \|/);
    await assertRefused(
      svc.client.getPerformanceReport({ reportId }, svc.as(testPrincipal())),
      Code.NotFound,
      /does not exist/,
    );
    await assertRefused(
      svc.client.getPerformanceReport({ reportId, format: 'xlsx' }, svc.as(who)),
      Code.InvalidArgument,
      /`format` must be one of json, csv, markdown/,
    );
  });
});
