/**
 * Conversion tracking: pixels (conversion sources), their sampled events, the event settings that
 * count conversions, and the attributed conversion report. Creating a pixel or a setting is a
 * prepared change; the report is a read the platform takes as a POST.
 */
import { conversionEventSettingBody, conversionSourceBody } from '@adsmcp/runtime/platform-bodies';
import type { GatewayDeps } from '../../deps.ts';
import type { ToolRow } from '../catalogue.ts';
import { array, boolean, enumOf, integer, object, string } from '../schema.ts';
import { TIME_RANGE } from './insight-tools.ts';
import { accountId, EXAMPLE_ACCOUNT, listPaging, PAGING_TEXT, PREPARE_TEXT } from './platform-arguments.ts';

export const listConversionSources: ToolRow<GatewayDeps> = {
  name: 'ads_list_conversion_sources',
  title: 'List conversion sources',
  group: 'Conversions and audiences',
  behavior: 'read',
  features: [],
  description:
    'Lists the conversion sources (pixels) of an ad account from the ad platform (upstream GET /conversions/pixels): ' +
    '`conversion_sources` (id px_…, name, client_type, status, created_at) and `paging` {after, before, has_more}. ' +
    'A pixel id is the `pid` of ads_list_conversion_events and a source_id of ads_create_conversion_event_setting. ' +
    `${PAGING_TEXT} Changes nothing.`,
  input: object({ account_id: accountId, ...listPaging(500) }, ['account_id']),
  example: { account_id: EXAMPLE_ACCOUNT, limit: 100, after: 'cHg6MTI=', order: 'desc' },
  route: {
    kind: 'upstream-read',
    path: '/conversions/pixels',
    shape: 'list',
    result: 'conversion_sources',
    notFound: 'the ad platform found no conversion sources listing for ad account {account_id}',
  },
};

export const createConversionSource: ToolRow<GatewayDeps> = {
  name: 'ads_create_conversion_source',
  title: 'Prepare creating a conversion source',
  group: 'Conversions and audiences',
  behavior: 'prepare',
  features: [],
  description:
    'Prepares creating a conversion source (a web pixel) on an ad account. ' +
    PREPARE_TEXT +
    ' The applied change’s upstream_response is the new pixel (its id px_…). Upstream: POST /conversions/pixels.',
  input: object({ account_id: accountId, body: conversionSourceBody }, ['account_id', 'body']),
  example: { account_id: EXAMPLE_ACCOUNT, body: { name: 'Checkout pixel', client_type: 'web' } },
  route: {
    kind: 'prepare',
    object: 'conversion_source',
    effect: 'create',
    operation: { method: 'POST', path: '/conversions/pixels' },
    body: 'body',
  },
};

export const listConversionEvents: ToolRow<GatewayDeps> = {
  name: 'ads_list_conversion_events',
  title: 'List sampled conversion events',
  group: 'Conversions and audiences',
  behavior: 'read',
  features: [],
  description:
    'Lists recent sampled events a pixel received, newest first (upstream GET /conversions/events): `events` ' +
    '(event_type, event_at, received_at, page_url, device_type, country, value_micros and currency for carts and ' +
    'purchases, and match_keys_present: which kinds of keys arrived, never their values) and `sampled`. Use it to check ' +
    'that a pixel fires. Privacy-safe: no IP address, user agent, email, phone or click id. Changes nothing.',
  input: object(
    {
      account_id: accountId,
      pid: string({
        min: 1,
        max: 255,
        description: 'The pixel id (px_…) from ads_list_conversion_sources.',
      }),
      limit: integer({ min: 1, max: 50, description: 'How many events, 1 to 50 (default 10).' }),
    },
    ['account_id', 'pid'],
  ),
  example: { account_id: EXAMPLE_ACCOUNT, pid: 'px_0123456789abcdef', limit: 20 },
  route: {
    kind: 'upstream-read',
    path: '/conversions/events',
    shape: 'report',
    result: 'events',
    notFound: 'no pixel {pid} in ad account {account_id}; ads_list_conversion_sources lists them',
  },
};

export const createConversionEventSetting: ToolRow<GatewayDeps> = {
  name: 'ads_create_conversion_event_setting',
  title: 'Prepare creating a conversion event setting',
  group: 'Conversions and audiences',
  behavior: 'prepare',
  features: [],
  description:
    'Prepares creating a conversion event setting: which event of which pixels counts as a conversion, within ' +
    'which attribution window. The setting is checked when it is prepared (event type, custom event name, window, ' +
    `distinct sources, each a pixel of the account). ${PREPARE_TEXT} Upstream: POST /conversions/event_settings.`,
  input: object({ account_id: accountId, body: conversionEventSettingBody }, ['account_id', 'body']),
  example: {
    account_id: EXAMPLE_ACCOUNT,
    body: {
      name: 'Newsletter sign-ups',
      event_type: 'custom',
      custom_event_name: 'newsletter_signup',
      attribution_window_days: 7,
      source_ids: ['px_0123456789abcdef'],
    },
  },
  route: {
    kind: 'prepare',
    object: 'conversion_event_setting',
    effect: 'create',
    operation: { method: 'POST', path: '/conversions/event_settings' },
    body: 'body',
  },
};

export const listConversionEventSettings: ToolRow<GatewayDeps> = {
  name: 'ads_list_conversion_event_settings',
  title: 'List conversion event settings',
  group: 'Conversions and audiences',
  behavior: 'read',
  features: [],
  description:
    'Lists the conversion event settings of an ad account (upstream GET /conversions/event_settings): ' +
    '`event_settings` (id, name, event_type, custom_event_name, attribution_window_days, source_ids) and `paging`. ' +
    `${PAGING_TEXT} Changes nothing.`,
  input: object({ account_id: accountId, ...listPaging(500) }, ['account_id']),
  example: { account_id: EXAMPLE_ACCOUNT, limit: 50, before: 'ZXZzOjM=', order: 'asc' },
  route: {
    kind: 'upstream-read',
    path: '/conversions/event_settings',
    shape: 'list',
    result: 'event_settings',
    notFound: 'the ad platform found no event settings listing for ad account {account_id}',
  },
};

const insightsBody = object(
  {
    aggregation_level: enumOf(
      ['account', 'campaign', 'ad_group', 'ad'],
      'What the conversions are counted for: account, campaign, ad_group or ad.',
    ),
    time_granularity: enumOf(['none', 'daily'], 'none (one row per range, the default) or daily.'),
    breakdown: enumOf(['device', 'country'], 'Split rows by device or by country.'),
    time_ranges: array(TIME_RANGE, {
      min: 1,
      max: 5,
      unique: true,
      description: '1 to 5 account-local date ranges YYYY-MM-DD..YYYY-MM-DD, both ends included.',
    }),
    entity_ids: array(string({ min: 1, max: 255 }), {
      min: 1,
      max: 100,
      unique: true,
      description: 'Only these entities of the aggregation level (1 to 100); omit it for all of them.',
    }),
    group_by_entity: boolean('A row per entity, with entity_id (default: one total).'),
    include_zero_rows: boolean('Keep rows with no conversions (default false).'),
  },
  ['aggregation_level', 'time_ranges'],
  'The report to run.',
);

export const postConversionInsights: ToolRow<GatewayDeps> = {
  name: 'ads_post_conversion_insights',
  title: 'Get conversion insights',
  group: 'Conversions and audiences',
  behavior: 'read',
  features: [],
  description:
    'Reads attributed conversion totals or daily values from the ad platform (upstream POST /conversions/insights, a ' +
    'read: it changes nothing and needs only the read scope). The result: `insights` (rows of time_range, date_start, ' +
    'date_end, entity_id with group_by_entity, the breakdown, `preliminary`, conversions, click_through_conversions, ' +
    'view_through_conversions, conversion_value_micros), aggregation_level, `currency` and `time_zone`. Rows of the ' +
    'current account-local day carry preliminary: true and may still change. These are the conversion metrics of ' +
    'ads_get_ad_group_insights and ads_get_ad_insights, so the reports agree.',
  input: object({ account_id: accountId, body: insightsBody }, ['account_id', 'body']),
  example: {
    account_id: EXAMPLE_ACCOUNT,
    body: {
      aggregation_level: 'ad_group',
      time_granularity: 'daily',
      breakdown: 'device',
      time_ranges: ['2026-11-01..2026-11-07'],
      entity_ids: ['adg_0123456789abcdef'],
      group_by_entity: true,
      include_zero_rows: false,
    },
  },
  route: {
    kind: 'upstream-read',
    method: 'POST',
    path: '/conversions/insights',
    body: 'body',
    shape: 'report',
    result: 'insights',
    notFound: 'the ad platform found no conversion report for ad account {account_id}',
  },
};

export const conversionTools: readonly ToolRow<GatewayDeps>[] = [
  listConversionSources,
  createConversionSource,
  listConversionEvents,
  createConversionEventSetting,
  listConversionEventSettings,
  postConversionInsights,
];
