/**
 * The ad structure around ad groups, read from the ad platform: campaigns, product feeds (and
 * archiving one, a prepared change), bulk mutation jobs and the geo lookup.
 */
import type { GatewayDeps } from '../../deps.ts';
import type { ToolRow } from '../catalogue.ts';
import { enumOf, integer, object, string } from '../schema.ts';
import { accountId, EXAMPLE_ACCOUNT, listPaging, PAGING_TEXT, platformId } from './platform-arguments.ts';

const campaignId = platformId('The campaign, as the platform identifies it (ads_list_campaigns lists them).');

export const listCampaigns: ToolRow<GatewayDeps> = {
  name: 'ads_list_campaigns',
  title: 'List campaigns',
  group: 'Campaign creation',
  behavior: 'read',
  features: [],
  description:
    'Lists the campaigns of an ad account from the ad platform (upstream GET /campaigns), one page at a time: ' +
    '`campaigns` and `paging` {after, before, has_more}. Each campaign has id, name, status (active, paused, ' +
    'archived), objective (clicks, impressions, conversions), budget_micros with budget_type (daily, lifetime) in ' +
    'the account currency (integer micros), start_time, end_time and revision. Filter by status. ' +
    `${PAGING_TEXT} Use a campaign's id as campaign_id for ads_list_ad_groups or ads_create_ad_group. Changes nothing.`,
  input: object(
    {
      account_id: accountId,
      status: enumOf(['active', 'paused', 'archived'], 'Only the campaigns with this status.'),
      ...listPaging(500),
    },
    ['account_id'],
  ),
  example: { account_id: EXAMPLE_ACCOUNT, status: 'active', limit: 50, after: 'c2VxOjEy', order: 'desc' },
  route: {
    kind: 'upstream-read',
    path: '/campaigns',
    shape: 'list',
    result: 'campaigns',
    notFound: 'the ad platform found no campaigns listing for ad account {account_id}',
  },
};

export const getCampaign: ToolRow<GatewayDeps> = {
  name: 'ads_get_campaign',
  title: 'Get campaign',
  group: 'Campaign creation',
  behavior: 'read',
  features: [],
  description:
    'Reads one campaign of an ad account from the ad platform (upstream GET /campaigns/{campaign_id}), in ' +
    '`campaign`: name, status, objective, budget_micros and budget_type (integer micros of the account currency), ' +
    'start_time, end_time, revision, created and updated times. An ad group with the maximize_conversions bid ' +
    'strategy needs a campaign whose objective is conversions. Changes nothing.',
  input: object({ account_id: accountId, campaign_id: campaignId }, ['account_id', 'campaign_id']),
  example: { account_id: EXAMPLE_ACCOUNT, campaign_id: 'cmp_0123456789abcdef' },
  route: {
    kind: 'upstream-read',
    path: '/campaigns/{campaign_id}',
    shape: 'get',
    result: 'campaign',
    notFound:
      "no campaign {campaign_id} in ad account {account_id}; ads_list_campaigns lists the account's campaigns",
  },
};

export const listProductFeeds: ToolRow<GatewayDeps> = {
  name: 'ads_list_product_feeds',
  title: 'List product feeds',
  group: 'Campaign creation',
  behavior: 'read',
  features: [],
  description:
    'Lists the product feeds of an ad account from the ad platform (upstream GET /feeds), one page at a time: ' +
    '`product_feeds` and `paging` {after, before, has_more}. Each feed has id, name, status (active, archived), ' +
    'source URL, product count and revision. A feed id is the product_set.product_feed_id of ' +
    'ads_create_ad_group and ads_update_ad_group (it must be active) and the feed_id of ads_archive_product_feed. ' +
    `Filter by status. ${PAGING_TEXT} Changes nothing.`,
  input: object(
    {
      account_id: accountId,
      status: enumOf(['active', 'archived'], 'Only the feeds with this status.'),
      ...listPaging(500),
    },
    ['account_id'],
  ),
  example: { account_id: EXAMPLE_ACCOUNT, status: 'active', limit: 20, before: 'c2VxOjEy', order: 'asc' },
  route: {
    kind: 'upstream-read',
    path: '/feeds',
    shape: 'list',
    result: 'product_feeds',
    notFound: 'the ad platform found no product feeds listing for ad account {account_id}',
  },
};

const feedId = platformId(
  'The product feed, as the platform identifies it (ads_list_product_feeds lists them).',
);

export const archiveProductFeed: ToolRow<GatewayDeps> = {
  name: 'ads_archive_product_feed',
  title: 'Prepare archiving a product feed',
  group: 'Campaign creation',
  behavior: 'prepare',
  features: [],
  description:
    'Prepares archiving a product feed and returns a change_id. Archiving is final: no ad group can take up the ' +
    'feed afterwards, and the ad groups that use it keep it but report product_feed_archived as a serving issue. ' +
    'A feed that is already archived is refused (nothing would change). Nothing changes on the ad account until a ' +
    'person approves the change in the dashboard and ads_apply_change applies it. Upstream: POST ' +
    '/feeds/{feed_id}/archive.',
  input: object({ account_id: accountId, feed_id: feedId }, ['account_id', 'feed_id']),
  example: { account_id: EXAMPLE_ACCOUNT, feed_id: 'feed_0123456789abcdef' },
  destructive: true,
  route: {
    kind: 'prepare',
    object: 'product_feed',
    effect: 'archive',
    operation: { method: 'POST', path: '/feeds/{feed_id}/archive' },
    target: '/feeds/{feed_id}',
  },
};

export const getBulkJob: ToolRow<GatewayDeps> = {
  name: 'ads_get_bulk_job',
  title: 'Get bulk mutation job',
  group: 'Campaign creation',
  behavior: 'read',
  features: [],
  description:
    'Reads a bulk mutation job of an ad account from the ad platform (upstream GET ' +
    '/bulk_mutation_jobs/{job_id}), in `job`: its status (queued, running, succeeded, failed), operation_count, ' +
    'processed_count, succeeded_count and failed_count, and in `results` each operation with its outcome once ' +
    'processed (what it created, or why it failed, with the field). Jobs run in the background: ' +
    'while the status is queued or running, call again a few seconds later. Everything a job creates is paused. ' +
    'Changes nothing.',
  input: object(
    { account_id: accountId, job_id: platformId('The bulk mutation job, as the platform identifies it.') },
    ['account_id', 'job_id'],
  ),
  example: { account_id: EXAMPLE_ACCOUNT, job_id: 'job_0123456789abcdef' },
  route: {
    kind: 'upstream-read',
    path: '/bulk_mutation_jobs/{job_id}',
    shape: 'get',
    result: 'job',
    notFound: 'no bulk mutation job {job_id} in ad account {account_id}',
  },
};

export const geoLookup: ToolRow<GatewayDeps> = {
  name: 'ads_get_geo_lookup',
  title: 'Look up geo codes',
  group: 'Campaign creation',
  behavior: 'read',
  features: [],
  description:
    'Searches the ad platform’s location codes (upstream GET /geo_lookup/search): US DMA (designated market ' +
    'area) codes and ISO 3166-2 region codes, by code or name, ignoring case and accents. Returns the matches in ' +
    '`locations` (one answer, no paging), best match first (exact codes, then exact names, prefixes, word prefixes and substrings), each with code, ' +
    'name, type (dma or region) and country; use a code where a campaign targets locations. Changes nothing.',
  input: object(
    {
      account_id: accountId,
      q: string({
        min: 1,
        max: 200,
        nonBlank: true,
        description: 'What to search for: a code ("US-CA", "501") or a name, or part of one ("Calif").',
      }),
      limit: integer({ min: 1, max: 100, description: 'How many matches at most, 1 to 100 (default 10).' }),
    },
    ['account_id', 'q'],
  ),
  example: { account_id: EXAMPLE_ACCOUNT, q: 'New York', limit: 5 },
  route: {
    kind: 'upstream-read',
    path: '/geo_lookup/search',
    // The platform answers `{ data }` without paging: one answer, its rows the result.
    shape: 'report',
    result: 'locations',
    notFound: 'the ad platform has no geo lookup for ad account {account_id}',
  },
};

export const campaignTools: readonly ToolRow<GatewayDeps>[] = [
  listCampaigns,
  getCampaign,
  listProductFeeds,
  archiveProductFeed,
  getBulkJob,
  geoLookup,
];
