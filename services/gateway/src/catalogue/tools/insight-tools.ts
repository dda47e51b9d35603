/**
 * Delivery insights of an ad group or an ad (upstream reads). Both tools take the same arguments,
 * in the formats the platform documents; only the entity and its aggregation levels differ.
 */
import type { GatewayDeps } from '../../deps.ts';
import type { ToolRow } from '../catalogue.ts';
import { array, enumOf, integer, object, type Schema, string } from '../schema.ts';
import { accountId, cursor, EXAMPLE_ACCOUNT, platformId } from './platform-arguments.ts';

const METRICS = [
  'impressions',
  'clicks',
  'ctr',
  'spend_micros',
  'cpc_micros',
  'conversions',
  'conversion_value_micros',
  'view_through_conversions',
  'click_through_conversions',
  'cpm_micros',
  'conversion_rate',
  'cpa_micros',
  'roas',
] as const;
const SEGMENTS = ['device', 'country'] as const;

const insightCursor = (which: 'after' | 'before') =>
  cursor(
    `Cursor: the page ${which} this one (paging.${which} of an earlier page, asked with the same other arguments).`,
  );

/** A date range as the platform's reports take it. */
export const TIME_RANGE = string({
  pattern: /^\d{4}-\d{2}-\d{2}\.\.\d{4}-\d{2}-\d{2}$/,
  patternHint: 'a range YYYY-MM-DD..YYYY-MM-DD',
  description: 'Account-local dates YYYY-MM-DD..YYYY-MM-DD, both ends included, at most 93 days.',
});

/** The arguments both insight tools share, besides the entity and its aggregation levels. */
function insightArguments(levels: readonly [string, ...string[]]): Record<string, Schema> {
  return {
    time_ranges: array(TIME_RANGE, {
      max: 5,
      unique: true,
      description:
        'Up to 5 date ranges, one row group each (default: the last 7 local days, today included).',
    }),
    time_granularity: enumOf(
      ['none', 'daily', 'weekly', 'monthly'],
      'Rows per range: none (one row per range, the default), daily, weekly (ISO weeks) or monthly.',
    ),
    aggregation_level: enumOf(levels, `One row per ${levels.join(' or per ')} (default ${levels[0]}).`),
    fields: array(enumOf(METRICS), {
      unique: true,
      description:
        'The metrics (default impressions, clicks, ctr, spend_micros, cpc_micros, conversions, conversion_value_micros). ' +
        'Money is in micros of the account currency; ctr, conversion_rate and roas are fractions, null when their denominator is 0.',
    }),
    segments: array(enumOf(SEGMENTS), {
      unique: true,
      description: 'Split rows by device (mobile, desktop, tablet) and/or country (US, GB, DE, FR, CA, AU).',
    }),
    override_segment_group_order: array(enumOf(SEGMENTS), {
      unique: true,
      description:
        'The segments again, each once, in the order rows are grouped by (default: the order of segments).',
    }),
    sort: array(
      string({
        max: 64,
        pattern: /^[a-z_]+:(asc|desc)$/,
        patternHint: 'field:asc or field:desc',
      }),
      {
        max: 3,
        description:
          'Up to 3 of field:asc or field:desc, the field a metric or date_start, device, country (nulls last).',
      },
    ),
    filters: array(
      string({
        max: 128,
        pattern: /^[a-z_]+:(eq|ne|gt|gte|lt|lte):-?\d+(\.\d+)?$/,
        patternHint: 'metric:op:number, op one of eq, ne, gt, gte, lt, lte',
      }),
      {
        max: 10,
        description: 'Up to 10 of metric:op:number (e.g. clicks:gte:100); a null metric passes no filter.',
      },
    ),
    includes: array(enumOf(['entity_name', 'totals']), {
      unique: true,
      description:
        'entity_name adds the ad group or ad name to each row; totals adds `totals` over all filtered rows.',
    }),
    limit: integer({ min: 1, max: 2000, description: 'Rows per page, 1 to 2000 (default 100).' }),
    after: insightCursor('after'),
    before: insightCursor('before'),
  };
}

const RESULT_TEXT =
  'The result: `insights` (the rows: time_range, date_start, date_end, the entity ids, the segments, `preliminary` and ' +
  'the metrics), `paging` {after, before, has_more}, `currency` and `time_zone` (the account’s; dates are local to it), ' +
  'and `totals` when asked. Rows of the current account-local day carry preliminary: true: the day is not over and its ' +
  'attributed conversions may still change, so read them again later before you compare them. To page, pass ' +
  'paging.after as `after` with the same other arguments while has_more is true. Changes nothing.';

const exampleQuery = {
  time_ranges: ['2026-11-01..2026-11-07'],
  time_granularity: 'daily',
  fields: ['impressions', 'clicks', 'ctr', 'conversions'],
  segments: ['device'],
  override_segment_group_order: ['device'],
  sort: ['clicks:desc'],
  filters: ['impressions:gt:0'],
  includes: ['entity_name', 'totals'],
  limit: 500,
  after: 'aW5zOjEy',
};

export const getAdGroupInsights: ToolRow<GatewayDeps> = {
  name: 'ads_get_ad_group_insights',
  title: 'Get ad group insights',
  group: 'Accounts and reporting',
  behavior: 'read',
  features: [],
  description:
    'Reads the delivery metrics of an ad group from the ad platform (upstream GET /ad_groups/{ad_group_id}/insights), ' +
    'aggregated by time_granularity over account-local time_ranges, optionally per ad (aggregation_level ad), split ' +
    'by segments, filtered, sorted and paged. ' +
    RESULT_TEXT,
  input: object(
    {
      account_id: accountId,
      ad_group_id: platformId('The ad group (ads_list_ad_groups lists them).'),
      ...insightArguments(['ad_group', 'ad']),
    },
    ['account_id', 'ad_group_id'],
  ),
  example: {
    account_id: EXAMPLE_ACCOUNT,
    ad_group_id: 'adg_0123456789abcdef',
    aggregation_level: 'ad',
    ...exampleQuery,
  },
  route: {
    kind: 'upstream-read',
    path: '/ad_groups/{ad_group_id}/insights',
    shape: 'report',
    result: 'insights',
    notFound: 'no ad group {ad_group_id} in ad account {account_id}; ads_list_ad_groups lists them',
  },
};

export const getAdInsights: ToolRow<GatewayDeps> = {
  name: 'ads_get_ad_insights',
  title: 'Get ad insights',
  group: 'Accounts and reporting',
  behavior: 'read',
  features: [],
  description:
    'Reads the delivery metrics of one ad from the ad platform (upstream GET /ads/{ad_id}/insights), aggregated by ' +
    'time_granularity over account-local time_ranges, split by segments, filtered, sorted and paged; the same ' +
    'arguments as ads_get_ad_group_insights. ' +
    RESULT_TEXT,
  input: object(
    {
      account_id: accountId,
      ad_id: platformId('The ad (ads_list_ads lists them).'),
      ...insightArguments(['ad']),
    },
    ['account_id', 'ad_id'],
  ),
  example: {
    account_id: EXAMPLE_ACCOUNT,
    ad_id: 'ad_0123456789abcdef',
    aggregation_level: 'ad',
    ...exampleQuery,
  },
  route: {
    kind: 'upstream-read',
    path: '/ads/{ad_id}/insights',
    shape: 'report',
    result: 'insights',
    notFound: "no ad {ad_id} in ad account {account_id}; ads_list_ads lists the account's ads",
  },
};

export const insightTools: readonly ToolRow<GatewayDeps>[] = [getAdGroupInsights, getAdInsights];
