/** ReportService: proto <-> domain for the workspace's performance reports. */

import { randomUUID } from 'node:crypto';
import {
  type CreatePerformanceReportRequest,
  ImportedMetricsSchema,
  PerformanceReportRowSchema,
  type PerformanceReportSchema,
  type PerformanceReportSummarySchema,
  ReportComparisonSchema,
  type ReportService,
} from '@adsmcp/proto/marketing/v1/reports_pb';
import { principalOf } from '@adsmcp/runtime/connect-server';
import type { Pool } from '@adsmcp/runtime/db';
import { InvalidArgumentError, NotFoundError, UnavailableError } from '@adsmcp/runtime/errors';
import { nextOffset } from '@adsmcp/runtime/paging';
import type { Principal } from '@adsmcp/runtime/principal';
import { readingFor } from '@adsmcp/runtime/service-client';
import { fromJson, type JsonValue, type MessageInitShape } from '@bufbuild/protobuf';
import type { ServiceImpl } from '@connectrpc/connect';
import { listQueryOf } from '../domain/marketing-item.ts';
import { type AdCounts, importedByAd, importedTotals, reportFigures } from '../domain/performance-report.ts';
import { type ReportPeriod, reportPeriod, todayIn } from '../domain/report-period.ts';
import { renderCsv, renderMarkdown } from '../domain/report-render.ts';
import { readReportCounts, reportAccount, type Upstream } from '../platform/report-reads.ts';
import { importedSums } from '../store/import-store.ts';
import {
  creativeLabels,
  findReport,
  insertReport,
  listReports,
  type ReportSummary,
  type StoredReport,
} from '../store/report-store.ts';

export interface ReportHandlerDeps {
  pool: Pool;
  /** The clock that decides the account's current local day (a test may fix it). */
  now?: () => Date;
  /**
   * The upstream-proxy, called with this service's own key (MARKETING_PRIVATE_KEY) for the
   * caller's workspace; none without UPSTREAM_PROXY_URL, and then no report can be created.
   */
  upstream?: Upstream;
}

const FORMATS = { json: 'application/json', csv: 'text/csv', markdown: 'text/markdown' } as const;
type Format = keyof typeof FORMATS;

/**
 * A text of the platform as a report stores it: PostgreSQL cannot store the NUL character (in text
 * or JSON), which the platform's names may hold, so it is kept as U+FFFD, the replacement
 * character, rather than refusing the whole report over an ad's name.
 */
const storable = (text: string): string => text.replaceAll('\u0000', '\uFFFD');

function storableCounts(a: AdCounts): AdCounts {
  return {
    ...a,
    adId: storable(a.adId),
    adName: storable(a.adName),
    adGroupId: storable(a.adGroupId),
    adGroupName: storable(a.adGroupName),
    campaignId: storable(a.campaignId),
  };
}

/** What a report is saved from: the account as the platform has it, the period, the ads' counts. */
export interface ReportInput {
  name: string;
  accountId: string;
  campaignId?: string;
  currency: string;
  timeZone: string;
  period: ReportPeriod;
  current: readonly AdCounts[];
  previous: readonly AdCounts[];
}

/**
 * saveReport joins the workspace's creative labels and performance imports to the ads' counts,
 * computes the comparison and stores the report (revision 1).
 */
export async function saveReport(
  pool: Pool,
  principal: Principal,
  input: ReportInput,
): Promise<StoredReport> {
  const { period } = input;
  const current = input.current.map(storableCounts);
  const previous = input.previous.map(storableCounts);
  const adIds = [...new Set([...current, ...previous].map((a) => a.adId))];
  const workspaceId = principal.workspaceId;
  const labels = await creativeLabels(pool, workspaceId, input.accountId, adIds);
  const sums = await importedSums(pool, workspaceId, adIds, {
    current: { since: period.since, until: period.until },
    previous: { since: period.previousSince, until: period.previousUntil },
  });
  const figures = reportFigures(
    current,
    previous,
    (adId) => labels.get(adId) ?? [],
    importedByAd(sums, input.currency),
  );
  return insertReport(pool, {
    workspaceId,
    reportId: randomUUID(),
    name: input.name,
    accountId: input.accountId.toLowerCase(),
    campaignId: input.campaignId ?? null,
    since: period.since,
    until: period.until,
    previousSince: period.previousSince,
    previousUntil: period.previousUntil,
    currency: input.currency,
    timeZone: input.timeZone,
    preliminary: period.preliminary,
    rows: figures.rows,
    totals: figures.totals,
    createdBy: principal.userId,
  });
}

/**
 * The fields a report was once created from, when the gateway read the platform: the service
 * reads the platform itself now, so a request that still gives them is refused rather than
 * silently not used.
 */
function refuseGivenCounts(req: CreatePerformanceReportRequest): void {
  const given = [
    req.currency === '' ? undefined : 'currency',
    req.timeZone === '' ? undefined : 'time_zone',
    req.current.length === 0 ? undefined : 'current',
    req.previous.length === 0 ? undefined : 'previous',
  ].filter((f) => f !== undefined);
  if (given.length > 0) {
    throw new InvalidArgumentError(
      `${given.join(', ')} must not be given: the service reads the account and its insights from the ad platform itself`,
    );
  }
}

/** The fields a summary and a whole report share. */
function reportFields(r: ReportSummary) {
  return {
    reportId: r.reportId,
    name: r.name,
    accountId: r.accountId,
    ...(r.campaignId === null ? {} : { campaignId: r.campaignId }),
    since: r.since,
    until: r.until,
    previousSince: r.previousSince,
    previousUntil: r.previousUntil,
    currency: r.currency,
    timeZone: r.timeZone,
    preliminary: r.preliminary,
    revision: r.revision,
    createdAt: r.createdAt.toISOString(),
  };
}

function toSummaryMessage(r: ReportSummary): MessageInitShape<typeof PerformanceReportSummarySchema> {
  return { ...reportFields(r), adCount: r.adCount };
}

function toReportMessage(r: StoredReport): MessageInitShape<typeof PerformanceReportSchema> {
  // Not stored: summed from the rows' imported figures (exact), so every format shows the same.
  const imported = importedTotals(r.rows, r.currency);
  // The stored rows and totals are the proto JSON of their messages: snake_case names, figures as
  // decimal strings, null for unknown.
  return {
    ...reportFields(r),
    rows: r.rows.map((row) => fromJson(PerformanceReportRowSchema, row as unknown as JsonValue)),
    totals: fromJson(ReportComparisonSchema, r.totals as unknown as JsonValue),
    ...(imported === undefined
      ? {}
      : { importedTotals: fromJson(ImportedMetricsSchema, imported as unknown as JsonValue) }),
  };
}

function formatOf(format: string | undefined): Format {
  const f = format ?? 'json';
  if (!Object.hasOwn(FORMATS, f)) {
    throw new InvalidArgumentError(`format must be one of json, csv, markdown (got ${JSON.stringify(f)})`);
  }
  return f as Format;
}

/** createReportHandlers builds the ReportService implementation from its dependencies. */
export function createReportHandlers(deps: ReportHandlerDeps): ServiceImpl<typeof ReportService> {
  const now = deps.now ?? (() => new Date());
  return {
    async createPerformanceReport(req, ctx) {
      const principal = principalOf(ctx);
      refuseGivenCounts(req);
      const { upstream } = deps;
      if (upstream === undefined) {
        throw new UnavailableError(
          'the marketing service cannot read the ad platform: it runs without UPSTREAM_PROXY_URL or MARKETING_PRIVATE_KEY',
        );
      }
      const as = readingFor(principal, ctx.signal);
      const account = await reportAccount(upstream, as, req.accountId);
      const period = reportPeriod(req.since, req.until, todayIn(account.timeZone, now()));
      const read = { accountId: req.accountId, period };
      const counts = await readReportCounts(
        upstream,
        as,
        req.campaignId === undefined ? read : { ...read, campaignId: req.campaignId },
      );
      const stored = await saveReport(deps.pool, principal, {
        name: req.name,
        accountId: req.accountId,
        ...(req.campaignId === undefined ? {} : { campaignId: req.campaignId }),
        currency: account.currency,
        timeZone: account.timeZone,
        period,
        ...counts,
      });
      return { report: toReportMessage(stored) };
    },

    async listPerformanceReports(req, ctx) {
      const principal = principalOf(ctx);
      const page = listQueryOf({
        ...(req.offset === undefined ? {} : { offset: req.offset }),
        ...(req.limit === undefined ? {} : { limit: req.limit }),
      });
      const { reports, total } = await listReports(deps.pool, principal.workspaceId, page);
      const next = nextOffset(page, reports.length, total);
      return {
        reports: reports.map(toSummaryMessage),
        total,
        ...(next === undefined ? {} : { nextOffset: next }),
      };
    },

    async getPerformanceReport(req, ctx) {
      const principal = principalOf(ctx);
      const format = formatOf(req.format);
      const report = await findReport(deps.pool, principal.workspaceId, req.reportId.toLowerCase());
      if (report === undefined) throw new NotFoundError(`performance report ${req.reportId} does not exist`);
      const base = { format, mediaType: FORMATS[format] };
      if (format === 'json') return { ...base, report: toReportMessage(report), content: '' };
      return { ...base, content: format === 'csv' ? renderCsv(report) : renderMarkdown(report) };
    },
  };
}
