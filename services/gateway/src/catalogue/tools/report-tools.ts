/**
 * Performance reports: ad-level platform metrics of an ad account (or one campaign) over a period
 * of account-local dates, compared with the preceding period of equal length, with the
 * workspace's creative labels joined by ad. The marketing service (ReportService) computes, stores
 * and renders reports; creating one first reads the platform's insights here, on the caller's
 * behalf, since only the gateway can reach the upstream-proxy as the caller.
 */

import {
  type AdPeriodCountsSchema,
  CreatePerformanceReportResponseSchema,
  ReportService,
} from '@adsmcp/proto/marketing/v1/reports_pb';
import { exactCount } from '@adsmcp/runtime/platform-read/insights';
import { PagingLimitError, type PlatformPage, pages } from '@adsmcp/runtime/platform-read/pages';
import { localDay } from '@adsmcp/runtime/zoned-format';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { type GatewayDeps, onBehalfOf } from '../../deps.ts';
import { ToolFailure } from '../../mcp/tool-failure.ts';
import { type Caller, defineTool, type ToolRow } from '../catalogue.ts';
import { messageSchema } from '../output-schema.ts';
import { readPlatform, segment, workspaceAccount } from '../platform.ts';
import { resultOf } from '../rpc-mapping.ts';
import { enumOf, integer, object, string } from '../schema.ts';
import { accountId, EXAMPLE_ACCOUNT } from './platform-arguments.ts';

/** The longest period, in days; the service holds the same rule. */
export const MAX_PERIOD_DAYS = 366;
/** The earliest day a period or the preceding one may start on. */
const EARLIEST_DATE = '2000-01-01';
/** The platform's longest insights time range and most ranges per request. */
const RANGE_DAYS = 93;
const RANGES_PER_READ = 5;
/** Bounds on what one report reads: ad groups, ads, and platform reads in all. */
export const MAX_AD_GROUPS = 100;
export const MAX_ADS = 2000;
export const MAX_READS = 300;
const AD_GROUP_PAGE = 500;
const INSIGHT_PAGE = 2000;
const COUNTS = ['impressions', 'clicks', 'spend_micros', 'conversions'] as const;
type CountName = (typeof COUNTS)[number];

const DAY_MS = 86_400_000;

/** The date's day since 1970-01-01; the input schema has checked that it is a calendar date. */
function dayOf(field: string, date: string): number {
  const ms = Date.parse(`${date}T00:00:00Z`);
  return Number.isNaN(ms) ? invalid(`${field} must be a date YYYY-MM-DD`) : ms / DAY_MS;
}
const dateOf = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10);

function invalid(message: string): never {
  throw new ToolFailure('invalid_argument', message);
}

interface Period {
  /** First and last day numbers, both included. */
  start: number;
  end: number;
}

/**
 * The period and the preceding one, refused early (before any platform read) by the rules the
 * marketing service applies again when it stores the report.
 */
export function periodsOf(
  since: string,
  until: string,
  today: string,
): { current: Period; previous: Period } {
  const start = dayOf('since', since);
  const end = dayOf('until', until);
  if (start > end) invalid(`since (${since}) must not be after until (${until})`);
  const days = end - start + 1;
  if (days > MAX_PERIOD_DAYS) {
    invalid(`since..until spans ${days} days; a report covers at most ${MAX_PERIOD_DAYS} days`);
  }
  if (until > today) {
    invalid(
      `until (${until}) is after the account's current local day (${today}); a later day has no figures yet`,
    );
  }
  if (start - days < dayOf('earliest', EARLIEST_DATE)) {
    invalid(`since (${since}): the preceding period of ${days} days would start before ${EARLIEST_DATE}`);
  }
  return { current: { start, end }, previous: { start: start - days, end: start - 1 } };
}

/** The period cut into the platform's time ranges (at most RANGE_DAYS days each). */
export function timeRanges(p: Period): string[] {
  const out: string[] = [];
  for (let s = p.start; s <= p.end; s += RANGE_DAYS) {
    out.push(`${dateOf(s)}..${dateOf(Math.min(p.end, s + RANGE_DAYS - 1))}`);
  }
  return out;
}

interface AdGroupRef {
  id: string;
  name: string;
  campaignId: string;
}

/** Counts the platform reads a report makes, and refuses the one past MAX_READS. */
function readBudget() {
  let reads = 0;
  return () => {
    reads++;
    if (reads > MAX_READS) {
      throw new ToolFailure(
        'report_too_large',
        `the report would need more than ${MAX_READS} reads of the ad platform; give a campaign_id or a shorter period`,
      );
    }
  };
}

const text = (v: unknown) => (typeof v === 'string' ? v : '');

/**
 * The pages of one platform read, each read spending the report's budget; a read past the pages
 * it may take is refused as too large a report, as the budget refuses it.
 */
async function* reportPages(read: (after: string | undefined) => Promise<PlatformPage>, what: string) {
  try {
    yield* pages(read, { maxPages: MAX_READS, what });
  } catch (err) {
    if (err instanceof PagingLimitError) throw new ToolFailure('report_too_large', err.message);
    throw err;
  }
}

async function listAdGroups(
  caller: Caller,
  deps: GatewayDeps,
  account: string,
  campaignId: string | undefined,
  spend: () => void,
): Promise<AdGroupRef[]> {
  const groups: AdGroupRef[] = [];
  const read = async (after: string | undefined): Promise<PlatformPage> => {
    spend();
    const page = await readPlatform(caller, deps, {
      accountId: account,
      path: '/ad_groups',
      query: {
        limit: AD_GROUP_PAGE,
        ...(campaignId === undefined ? {} : { campaign_id: campaignId }),
        ...(after === undefined ? {} : { after }),
      },
      notFound: `the ad platform found no ad groups listing for ad account ${account}`,
      shape: 'list',
    });
    return { data: page.data as unknown[], paging: page.paging };
  };
  for await (const page of reportPages(read, `the ad groups of ad account ${account}`)) {
    for (const g of page)
      groups.push({ id: text(g.id), name: text(g.name), campaignId: text(g.campaign_id) });
    if (groups.length > MAX_AD_GROUPS) {
      throw new ToolFailure(
        'report_too_large',
        `the ${campaignId === undefined ? 'account' : 'campaign'} has more than ${MAX_AD_GROUPS} ad groups; a report covers at most ${MAX_AD_GROUPS}: give a campaign_id with fewer`,
      );
    }
  }
  return groups;
}

type AdCounts = Omit<MessageInitShape<typeof AdPeriodCountsSchema>, '$typeName'>;

/** One ad's sums over one period, and how many of the period's time ranges gave a row. */
interface Sum {
  ad: AdCounts;
  counts: Record<CountName, bigint | null>;
  ranges: number;
}

function addRow(sum: Sum, row: Record<string, unknown>): void {
  sum.ranges++;
  for (const name of COUNTS) {
    const v = exactCount(row[name]);
    const total = sum.counts[name];
    sum.counts[name] = v !== undefined && total !== null ? total + v : null;
  }
}

/** The ads' counts of one period; a count is unknown (absent) when a range gave none for it. */
function periodCounts(sums: Map<string, Sum>, ranges: number): AdCounts[] {
  return [...sums.values()].map((s) => {
    const ad: AdCounts = { ...s.ad };
    if (s.ranges !== ranges) return ad;
    if (s.counts.impressions !== null) ad.impressions = s.counts.impressions;
    if (s.counts.clicks !== null) ad.clicks = s.counts.clicks;
    if (s.counts.spend_micros !== null) ad.spendMicros = s.counts.spend_micros;
    if (s.counts.conversions !== null) ad.conversions = s.counts.conversions;
    return ad;
  });
}

/**
 * readAdCounts reads each ad group's insights at ad level, one row per ad and time range (both
 * periods' ranges, up to five per read, every page), and sums them per ad and period.
 */
async function readAdCounts(
  caller: Caller,
  deps: GatewayDeps,
  account: string,
  groups: readonly AdGroupRef[],
  periods: { current: Period; previous: Period },
  spend: () => void,
): Promise<{ current: AdCounts[]; previous: AdCounts[] }> {
  const ranges = { current: timeRanges(periods.current), previous: timeRanges(periods.previous) };
  const periodOf = new Map<string, 'current' | 'previous'>();
  for (const r of ranges.current) periodOf.set(r, 'current');
  for (const r of ranges.previous) periodOf.set(r, 'previous');
  const all = [...ranges.current, ...ranges.previous];
  const sums = { current: new Map<string, Sum>(), previous: new Map<string, Sum>() };
  const ads = new Set<string>();
  for (const group of groups) {
    for (let i = 0; i < all.length; i += RANGES_PER_READ) {
      const read = async (after: string | undefined): Promise<PlatformPage> => {
        spend();
        const answer = await readPlatform(caller, deps, {
          accountId: account,
          path: `/ad_groups/${segment('ad_group_id', group.id)}/insights`,
          query: {
            aggregation_level: 'ad',
            time_granularity: 'none',
            time_ranges: all.slice(i, i + RANGES_PER_READ),
            fields: [...COUNTS],
            includes: ['entity_name'],
            limit: INSIGHT_PAGE,
            ...(after === undefined ? {} : { after }),
          },
          notFound: `ad group ${group.id} of ad account ${account} disappeared while the report was read; try again`,
          shape: 'report',
        });
        return { data: answer.data as unknown[], paging: answer.rest?.paging };
      };
      for await (const page of reportPages(read, `the insights of ad group ${group.id}`)) {
        for (const row of page) {
          const period = periodOf.get(text(row.time_range));
          const adId = text(row.ad_id);
          if (period === undefined || adId === '') continue;
          ads.add(adId);
          if (ads.size > MAX_ADS) {
            throw new ToolFailure(
              'report_too_large',
              `the report would hold more than ${MAX_ADS} ads; give a campaign_id with fewer`,
            );
          }
          let sum = sums[period].get(adId);
          if (sum === undefined) {
            const ad = {
              adId,
              adName: text(row.ad_name),
              adGroupId: group.id,
              adGroupName: group.name,
              campaignId: group.campaignId,
            };
            sum = {
              ad,
              counts: { impressions: 0n, clicks: 0n, spend_micros: 0n, conversions: 0n },
              ranges: 0,
            };
            sums[period].set(adId, sum);
          }
          addRow(sum, row);
        }
      }
    }
  }
  return {
    current: periodCounts(sums.current, ranges.current.length),
    previous: periodCounts(sums.previous, ranges.previous.length),
  };
}

const date = (what: string) =>
  string({
    format: 'date',
    description: `${what}, an account-local date YYYY-MM-DD (the account's time zone: ads_list_accounts shows it), included.`,
  });

const createInput = object(
  {
    account_id: accountId,
    name: string({ min: 1, max: 200, nonBlank: true, description: 'What to call the report.' }),
    since: date('The first day of the period'),
    until: date('The last day of the period; not after the account’s current local day'),
    campaign_id: string({
      min: 1,
      max: 255,
      pattern: /^[A-Za-z0-9_-]+$/,
      patternHint: '1 to 255 letters, digits, underscores or hyphens',
      description:
        'Only this campaign’s ads (ads_list_campaigns lists them); default every ad of the account.',
    }),
  },
  ['account_id', 'name', 'since', 'until'],
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

const createPerformanceReport = defineTool<GatewayDeps, typeof createInput>({
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
  output: messageSchema(CreatePerformanceReportResponseSchema),
  openWorld: true,
  route: {
    kind: 'run',
    why:
      'the platform’s insights must be read through the upstream-proxy as the caller, and only the gateway can ' +
      'sign the caller’s principal: it lists the ad groups, reads their ad-level insights for both periods, ' +
      'then hands the rows to the marketing service, which computes and stores the report',
    routesTo: 'marketing.v1.ReportService/CreatePerformanceReport',
    async run({ caller, deps }, args) {
      const account = await workspaceAccount(deps, caller.principal, args.account_id);
      const periods = periodsOf(args.since, args.until, localDay(new Date(), account.timeZone));
      const spend = readBudget();
      if (args.campaign_id !== undefined) {
        spend();
        await readPlatform(caller, deps, {
          accountId: args.account_id,
          path: `/campaigns/${segment('campaign_id', args.campaign_id)}`,
          query: {},
          notFound: `no campaign ${args.campaign_id} in ad account ${args.account_id}; ads_list_campaigns lists them`,
          shape: 'get',
        });
      }
      const groups = await listAdGroups(caller, deps, args.account_id, args.campaign_id, spend);
      const counts = await readAdCounts(caller, deps, args.account_id, groups, periods, spend);
      const res = await deps.clientOf(ReportService).createPerformanceReport(
        {
          accountId: args.account_id,
          name: args.name,
          since: args.since,
          until: args.until,
          ...(args.campaign_id === undefined ? {} : { campaignId: args.campaign_id }),
          currency: account.currency,
          timeZone: account.timeZone,
          ...counts,
        },
        onBehalfOf(caller.principal),
      );
      return resultOf(CreatePerformanceReportResponseSchema, res);
    },
  },
});

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
  input: object({
    offset: integer({
      min: 0,
      max: 100_000,
      description: 'Reports to skip; next_offset of the previous page.',
    }),
    limit: integer({ min: 1, max: 100, description: 'Page size; default 20.' }),
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
  input: object(
    {
      report_id: string({
        format: 'uuid',
        description: 'The report (ads_list_performance_reports lists them).',
      }),
      format: enumOf(['json', 'csv', 'markdown'], 'json (the default), csv or markdown.'),
    },
    ['report_id'],
  ),
  example: { report_id: '7d2b6c1e-1a2b-4c3d-8e9f-0a1b2c3d4e5f', format: 'csv' },
  route: { kind: 'rpc', method: ReportService.method.getPerformanceReport },
};

export const reportTools: readonly ToolRow<GatewayDeps>[] = [
  createPerformanceReport,
  listPerformanceReports,
  getPerformanceReport,
];
