import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import {
  type AdPeriodCounts,
  type AdPeriodCountsSchema,
  ReportService,
} from '@adsmcp/proto/marketing/v1/reports_pb';
import type { Principal } from '@adsmcp/runtime/principal';
import { type ServiceUnderTest, startServiceUnderTest, testPrincipal } from '@adsmcp/testkit/service-harness';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { parse } from 'csv-parse/sync';
import { compareMetrics, decimalText, metricsOf } from '../src/domain/performance-report.ts';
import { reportPeriod } from '../src/domain/report-period.ts';
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
/** A create request as the tests vary it. */
interface CreateRequest {
  accountId: string;
  name: string;
  since: string;
  until: string;
  currency: string;
  timeZone: string;
  current: Counts[];
  previous: Counts[];
}
type Counts = Omit<MessageInitShape<typeof AdPeriodCountsSchema>, '$typeName'>;

function ad(
  adId: string,
  counts: Partial<Pick<AdPeriodCounts, 'impressions' | 'clicks' | 'spendMicros' | 'conversions'>>,
): Counts {
  return {
    adId,
    adName: `Ad ${adId}`,
    adGroupId: 'adg_1',
    adGroupName: 'Group A',
    campaignId: 'cmp_1',
    ...counts,
  };
}

function createRequest(overrides: Partial<CreateRequest> = {}): CreateRequest {
  return {
    accountId: ACCOUNT,
    name: 'First week of March',
    since: '2025-03-01',
    until: '2025-03-07',
    currency: 'USD',
    timeZone: 'America/Los_Angeles',
    current: [ad('ad_1', { impressions: 1000n, clicks: 50n, spendMicros: 25_000_000n, conversions: 5n })],
    previous: [ad('ad_1', { impressions: 800n, clicks: 40n, spendMicros: 30_000_000n, conversions: 0n })],
    ...overrides,
  };
}

async function assertRefused(call: Promise<unknown>, code: Code, message: RegExp): Promise<void> {
  await assert.rejects(call, (err: unknown) => {
    assert.ok(err instanceof ConnectError, String(err));
    assert.equal(Code[err.code], Code[code], err.rawMessage);
    assert.match(err.rawMessage, message);
    return true;
  });
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
    const { report } = await svc.client.createPerformanceReport(createRequest(), svc.as(who));
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
    const { report } = await svc.client.createPerformanceReport(
      createRequest({
        current: [
          ad('ad_1', { impressions: 10n, clicks: 1n, spendMicros: 1n, conversions: 0n }),
          ad('ad_2', { impressions: 5n }),
        ],
        previous: [ad('ad_1', { impressions: 10n, clicks: 1n, spendMicros: 1n, conversions: 0n })],
      }),
      svc.as(who),
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

  test('bad periods are refused naming the rule', async () => {
    const who = testPrincipal();
    const refuse = (o: Partial<CreateRequest>, message: RegExp) =>
      assertRefused(
        svc.client.createPerformanceReport(createRequest(o), svc.as(who)),
        Code.InvalidArgument,
        message,
      );
    await refuse({ since: '2025-03-08' }, /since \(2025-03-08\) must not be after until/);
    await refuse({ since: '2025-02-30' }, /since must be a date/);
    await refuse({ since: '2024-01-01', until: '2025-03-01' }, /spans 426 days; a report covers at most 366/);
    await refuse({ since: '2999-01-01', until: '2999-01-02' }, /after the account's current local day/);
    await refuse({ since: '2000-01-05', until: '2000-01-10' }, /would start before 2000-01-01/);
    await refuse({ timeZone: 'Mars/Olympus' }, /time_zone must be an IANA time zone/);
    const twice = [ad('ad_1', {}), ad('ad_1', {})];
    await refuse({ current: twice }, /current\.1\.ad_id ad_1 is listed twice/);
  });

  test('a viewer may not create a report', async () => {
    const viewer = testPrincipal({ role: 'viewer', scopes: ['read'] });
    await assertRefused(
      svc.client.createPerformanceReport(createRequest(), svc.as(viewer)),
      Code.PermissionDenied,
      /write scope/,
    );
  });
});

describe('listing and reading reports', () => {
  test('lists the workspace’s reports, most recent first, with pages', async () => {
    const who = testPrincipal();
    for (const name of ['One', 'Two', 'Three']) {
      await svc.client.createPerformanceReport(createRequest({ name }), svc.as(who));
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
    const { report } = await svc.client.createPerformanceReport(createRequest(), svc.as(who));
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
      /format must be one of json, csv, markdown/,
    );
  });
});
