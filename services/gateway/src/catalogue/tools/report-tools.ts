/**
 * Performance reports: ad-level platform metrics of an ad account (or one campaign) over a period
 * of account-local dates, compared with the preceding period of equal length, with the
 * workspace's creative labels joined by ad. The marketing service (ReportService) reads the
 * platform through the upstream-proxy, computes, stores and renders reports.
 */

import { ReportService } from '@adsmcp/proto/marketing/v1/reports_pb';
import type { GatewayDeps } from '../../deps.ts';
import type { ToolRow } from '../catalogue.ts';
import { inputFromRequest } from '../input-schema.ts';
import { ACCOUNT_ID_TEXT, EXAMPLE_ACCOUNT } from './platform-arguments.ts';

/** What one report reads at most, as the marketing service bounds it (for the description). */
const MAX_AD_GROUPS = 100;
const MAX_ADS = 2000;
const MAX_READS = 300;
/**
 * How long the service may take to read and store a report: up to MAX_READS platform reads, one
 * after the other, each of which may itself take many seconds, far beyond an internal call's
 * default 30 s.
 */
const REPORT_TIMEOUT_MS = 600_000;

/** An account-local date argument: the service refuses a report without one. */
const date = (what: string) => ({
  required: true,
  format: 'date' as const,
  description: `${what}, an account-local date YYYY-MM-DD (the account's time zone: ads_list_accounts shows it), included.`,
});

const createInput = inputFromRequest(
  ReportService.method.createPerformanceReport.input,
  {
    account_id: { description: ACCOUNT_ID_TEXT },
    name: { nonBlank: true, description: 'What to call the report.' },
    since: date('The first day of the period'),
    until: date('The last day of the period; not after the account’s current local day'),
    campaign_id: {
      patternHint: '1 to 255 letters, digits, underscores or hyphens',
      description:
        'Only this campaign’s ads (ads_list_campaigns lists them); default every ad of the account.',
    },
  },
  // Retired: the service reads the account's currency and time zone and the counts itself, and
  // refuses a request that gives any of them.
  { omit: ['currency', 'time_zone', 'current', 'previous'] },
);

const FIGURES_TEXT =
  'Per ad (and in totals): `platform` {current, previous, absolute_change, relative_change}, each with impressions, ' +
  'clicks, spend_micros (micros of the account currency), conversions, ctr (clicks / impressions, a decimal ' +
  'fraction to 6 places), cpc_micros and cpa_micros (rounded half up to whole micros). Figures are exact ' +
  'decimal strings, never floats; null means unknown (a figure the platform did not give, or a ratio over zero), ' +
  'never 0. absolute_change is current - previous of the figures shown; relative_change is that over previous, ' +
  'to 4 places (0.25 is +25%), null when previous is 0 or unknown. Per ad, `imported` (and `imported_totals` ' +
  'over all ads) joins the workspace’s performance imports by ad_id: for the period and the preceding one, the ' +
  'rows of completed imports whose since..until lies within that period, summed exactly (impressions, clicks, ' +
  'spend, conversions, revenue as decimal strings; null when unknown), with row_count and import_ids; an import ' +
  'that only partly overlaps a period is not summed but named in partial_import_ids. account_currency holds the ' +
  'imports in the account’s currency; imports in another currency are in other_currencies, never converted.';

const createPerformanceReport: ToolRow<GatewayDeps> = {
  name: 'ads_create_performance_report',
  title: 'Create a performance report',
  group: 'Marketing',
  behavior: 'write',
  features: [],
  description:
    'Saves a performance report of an ad account (or of one campaign with campaign_id): each ad’s platform ' +
    'metrics over since..until (account-local dates, both included, at most 366 days, until not after the ' +
    'account’s current local day) compared with the preceding period of equal length (previous_since.. ' +
    'previous_until, the days just before since), and the workspace’s creative labels (saved marketing items of ' +
    'kind creative whose data names the account and the ad) joined by ad. ' +
    FIGURES_TEXT +
    ' preliminary is true when the period ends today (the day is not over). The report is stored in the ' +
    'workspace (revision 1) and returned; read it again with ads_get_performance_report (json, csv or ' +
    `markdown). Reads at most ${MAX_AD_GROUPS} ad groups, ${MAX_ADS} ads and ${MAX_READS} platform pages; ` +
    'beyond that it is refused (report_too_large): give a campaign_id or a shorter period. No narrative is ' +
    'written and nothing changes in the ad account.',
  input: createInput,
  example: {
    account_id: EXAMPLE_ACCOUNT,
    name: 'November, first week',
    since: '2026-11-01',
    until: '2026-11-07',
    campaign_id: 'cmp_0123456789abcdef',
  },
  openWorld: true,
  route: {
    kind: 'rpc',
    method: ReportService.method.createPerformanceReport,
    timeoutMs: REPORT_TIMEOUT_MS,
  },
};

const listPerformanceReports: ToolRow<GatewayDeps> = {
  name: 'ads_list_performance_reports',
  title: 'List performance reports',
  group: 'Marketing',
  behavior: 'read',
  features: [],
  description:
    'Lists the workspace’s saved performance reports, most recent first, without their rows: name, account, ' +
    'campaign, the period and the preceding one, currency, time zone, preliminary, ad_count, revision and ' +
    'created_at. Returns reports, total (across all pages) and next_offset (pass it as offset for the next ' +
    'page; null on the last page).',
  input: inputFromRequest(ReportService.method.listPerformanceReports.input, {
    offset: { description: 'Reports to skip; next_offset of the previous page.' },
    limit: { description: 'Page size; default 20.' },
  }),
  example: { offset: 20, limit: 20 },
  route: { kind: 'rpc', method: ReportService.method.listPerformanceReports },
};

const getPerformanceReport: ToolRow<GatewayDeps> = {
  name: 'ads_get_performance_report',
  title: 'Get a performance report',
  group: 'Marketing',
  behavior: 'read',
  features: [],
  description:
    'Returns a saved performance report of the workspace. format json (the default) gives `report` as ' +
    `ads_create_performance_report returned it. ${FIGURES_TEXT} format csv or markdown gives \`content\`, the ` +
    'report rendered from what was stored: one row per ad and a totals row (row_type total), columns row_type, ' +
    'ad_id, ad_name, ad_group_id, ad_group_name, campaign_id, creative_labels (names joined by "; "), then per ' +
    'metric <metric>, <metric>_previous, <metric>_change, <metric>_change_relative, then imported_currency, ' +
    'imported_import_ids, imported_import_ids_previous, imported_partial_import_ids, ' +
    'imported_partial_import_ids_previous and per imported metric imported_<metric>, imported_<metric>_previous ' +
    '(the account currency’s; each other currency gets a line of its own, row_type ad_other_currency or ' +
    'total_other_currency); an unknown figure is an empty cell. CSV is RFC 4180 (CRLF) and formula-safe: a cell ' +
    'starting with a tab or carriage return, or whose first character after white space (such as a no-break ' +
    'space) and invisible characters is =, +, -, @ or their full-width forms ＝＋－＠, starts with a single ' +
    'quote; figure cells that are plain numbers (such as -12) are left as numbers. ' +
    'Markdown escapes every cell (pipes, backslashes, line breaks as <br>, HTML characters as entities, ' +
    'characters that would start markdown).',
  input: inputFromRequest(ReportService.method.getPerformanceReport.input, {
    report_id: { description: 'The report (ads_list_performance_reports lists them).' },
    format: { description: 'json (the default), csv or markdown.' },
  }),
  example: { report_id: '7d2b6c1e-1a2b-4c3d-8e9f-0a1b2c3d4e5f', format: 'csv' },
  route: { kind: 'rpc', method: ReportService.method.getPerformanceReport },
};

export const reportTools: readonly ToolRow<GatewayDeps>[] = [
  createPerformanceReport,
  listPerformanceReports,
  getPerformanceReport,
];
