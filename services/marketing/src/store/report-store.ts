/**
 * The performance_reports table, and the creative labels a report joins from marketing_items.
 * Every query names the workspace, so one never reaches another's records.
 */
import type { Queryable } from '@adsmcp/runtime/db';
import type { Comparison, CreativeLabel, ReportRow } from '../domain/performance-report.ts';

export interface StoredReport {
  workspaceId: string;
  reportId: string;
  name: string;
  accountId: string;
  campaignId: string | null;
  since: string;
  until: string;
  previousSince: string;
  previousUntil: string;
  currency: string;
  timeZone: string;
  preliminary: boolean;
  rows: ReportRow[];
  totals: Comparison;
  adCount: number;
  revision: number;
  createdBy: string | null;
  createdAt: Date;
}

export type ReportSummary = Omit<StoredReport, 'rows' | 'totals'>;

interface ReportDbRow {
  workspace_id: string;
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
  rows?: ReportRow[];
  totals?: Comparison;
  ad_count: number;
  revision: number;
  created_by: string | null;
  created_at: Date;
}

// Dates as text, so that no time zone of the driver or the server shifts a calendar day.
const SUMMARY_COLUMNS = `workspace_id, report_id, name, account_id, campaign_id,
  to_char(since, 'YYYY-MM-DD') AS since, to_char(until, 'YYYY-MM-DD') AS until,
  to_char(previous_since, 'YYYY-MM-DD') AS previous_since,
  to_char(previous_until, 'YYYY-MM-DD') AS previous_until,
  currency, time_zone, preliminary, ad_count, revision, created_by, created_at`;

const toSummary = (r: ReportDbRow): ReportSummary => ({
  workspaceId: r.workspace_id,
  reportId: r.report_id,
  name: r.name,
  accountId: r.account_id,
  campaignId: r.campaign_id,
  since: r.since,
  until: r.until,
  previousSince: r.previous_since,
  previousUntil: r.previous_until,
  currency: r.currency,
  timeZone: r.time_zone,
  preliminary: r.preliminary,
  adCount: r.ad_count,
  revision: r.revision,
  createdBy: r.created_by,
  createdAt: r.created_at,
});

function toReport(r: ReportDbRow): StoredReport {
  if (r.rows === undefined || r.totals === undefined) throw new Error('a report was read without its rows');
  return { ...toSummary(r), rows: r.rows, totals: r.totals };
}

export type NewReport = Omit<StoredReport, 'adCount' | 'revision' | 'createdAt'>;

/** insertReport stores a new report at revision 1. */
export async function insertReport(db: Queryable, r: NewReport): Promise<StoredReport> {
  const { rows } = await db.query<ReportDbRow>(
    `INSERT INTO performance_reports (workspace_id, report_id, name, account_id, campaign_id, since, until,
       previous_since, previous_until, currency, time_zone, preliminary, rows, totals, ad_count, created_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
     RETURNING ${SUMMARY_COLUMNS}, rows, totals`,
    [
      r.workspaceId,
      r.reportId,
      r.name,
      r.accountId,
      r.campaignId,
      r.since,
      r.until,
      r.previousSince,
      r.previousUntil,
      r.currency,
      r.timeZone,
      r.preliminary,
      JSON.stringify(r.rows),
      JSON.stringify(r.totals),
      r.rows.length,
      r.createdBy,
    ],
  );
  const row = rows[0];
  if (row === undefined) throw new Error('INSERT ... RETURNING returned no row');
  return toReport(row);
}

/** findReport returns the workspace's report `reportId` with its rows, or undefined. */
export async function findReport(
  db: Queryable,
  workspaceId: string,
  reportId: string,
): Promise<StoredReport | undefined> {
  const { rows } = await db.query<ReportDbRow>(
    `SELECT ${SUMMARY_COLUMNS}, rows, totals FROM performance_reports WHERE workspace_id = $1 AND report_id = $2`,
    [workspaceId, reportId],
  );
  const row = rows[0];
  return row === undefined ? undefined : toReport(row);
}

/**
 * listReports returns one page of the workspace's reports, without their rows, most recent first,
 * and how many there are in all.
 */
export async function listReports(
  db: Queryable,
  workspaceId: string,
  page: { offset: number; limit: number },
): Promise<{ reports: ReportSummary[]; total: number }> {
  // One statement, one snapshot: the count and the page agree, and the count is there even when
  // the page is past the end.
  const { rows } = await db.query<Partial<ReportDbRow> & { total: number }>(
    `WITH matched AS (SELECT * FROM performance_reports WHERE workspace_id = $1)
     SELECT counted.total, page.*
       FROM (SELECT count(*)::int AS total FROM matched) AS counted
       LEFT JOIN LATERAL (
         SELECT ${SUMMARY_COLUMNS} FROM matched ORDER BY created_at DESC, report_id DESC LIMIT $2 OFFSET $3
       ) AS page ON true`,
    [workspaceId, page.limit, page.offset],
  );
  const total = rows[0]?.total ?? 0;
  const reports = rows
    .filter((r): r is ReportDbRow & { total: number } => r.report_id != null)
    .map(toSummary);
  return { reports, total };
}

/**
 * creativeLabels returns the workspace's live creative items whose data names one of `adIds` of
 * ad account `accountId`, oldest first, by ad id.
 */
export async function creativeLabels(
  db: Queryable,
  workspaceId: string,
  accountId: string,
  adIds: readonly string[],
): Promise<Map<string, CreativeLabel[]>> {
  const out = new Map<string, CreativeLabel[]>();
  if (adIds.length === 0) return out;
  const { rows } = await db.query<{
    ad_id: string;
    item_id: string;
    name: string;
    hook: string;
    offer: string;
  }>(
    `SELECT data ->> 'ad_id' AS ad_id, item_id, name,
            coalesce(data ->> 'hook', '') AS hook, coalesce(data ->> 'offer', '') AS offer
       FROM marketing_items
      WHERE workspace_id = $1 AND kind = 'creative' AND archived_at IS NULL
        AND lower(data ->> 'account_id') = lower($2) AND data ->> 'ad_id' = ANY($3::text[])
      ORDER BY created_at, item_id`,
    [workspaceId, accountId, adIds],
  );
  for (const r of rows) {
    const labels = out.get(r.ad_id) ?? [];
    labels.push({ item_id: r.item_id, name: r.name, hook: r.hook, offer: r.offer });
    out.set(r.ad_id, labels);
  }
  return out;
}
