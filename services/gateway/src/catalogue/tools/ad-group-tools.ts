/**
 * Ad groups: reads of the ad platform, and the prepared changes that create, update, activate,
 * pause and archive one. Money is integer micros of the account currency.
 */
import { adGroupCreateBody, adGroupUpdateBody } from '@adsmcp/runtime/platform-bodies';
import type { GatewayDeps } from '../../deps.ts';
import type { ToolRow } from '../catalogue.ts';
import { object, type Schema, string } from '../schema.ts';
import {
  accountId,
  EXAMPLE_ACCOUNT,
  listPaging,
  PAGING_TEXT,
  platformId,
  servingIssues,
} from './platform-arguments.ts';

const EXAMPLE_AD_GROUP = 'adg_0123456789abcdef';

const adGroupId = platformId('The ad group, as the platform identifies it (ads_list_ad_groups lists them).');
const include = servingIssues('ad group');

export const listAdGroups: ToolRow<GatewayDeps> = {
  name: 'ads_list_ad_groups',
  title: 'List ad groups',
  group: 'Campaign creation',
  behavior: 'read',
  features: [],
  description:
    'Lists the ad groups of an ad account from the ad platform (upstream GET /ad_groups), one page at a time: ' +
    '`ad_groups` and `paging` {after, before, has_more}. Each ad group has id, campaign_id, name, status, ' +
    'bidding_config (money in integer micros), product_set, landing_page_configuration and revision. Filter by ' +
    'campaign_id or by name (part of it, ignoring case); include: ["serving_issues"] adds why each is not ' +
    `serving. ${PAGING_TEXT} Then ads_get_ad_group reads one, ads_list_ads lists its ads, and ` +
    'ads_update_ad_group, ads_pause_ad_group, ads_activate_ad_group or ads_archive_ad_group prepare a change. ' +
    'Changes nothing.',
  input: object(
    {
      account_id: accountId,
      include,
      campaign_id: platformId('Only the ad groups of this campaign (ads_list_campaigns lists them).'),
      name: string({
        min: 3,
        max: 1000,
        nonBlank: true,
        description: 'Only the ad groups whose name contains this text (the platform ignores case).',
      }),
      ...listPaging(500),
    },
    ['account_id'],
  ),
  example: {
    account_id: EXAMPLE_ACCOUNT,
    include: ['serving_issues'],
    campaign_id: 'cmp_0123456789abcdef',
    name: 'Group A',
    limit: 50,
    after: 'c2VxOjEy',
    order: 'desc',
  },
  route: {
    kind: 'upstream-read',
    path: '/ad_groups',
    shape: 'list',
    result: 'ad_groups',
    notFound: 'the ad platform found no ad groups listing for ad account {account_id}; check campaign_id',
  },
};

export const getAdGroup: ToolRow<GatewayDeps> = {
  name: 'ads_get_ad_group',
  title: 'Get ad group',
  group: 'Campaign creation',
  behavior: 'read',
  features: [],
  description:
    'Reads one ad group of an ad account from the ad platform (upstream GET /ad_groups/{ad_group_id}), in ' +
    '`ad_group`: campaign_id, name, description, status, context_hints, bidding_config {billing_event_type, ' +
    'strategy, max_bid_micros, custom_audience_bid_multipliers}, product_set, landing_page_configuration and ' +
    'revision. include: ["serving_issues"] adds why it is not serving (paused, archived, its campaign paused or ' +
    'archived, its product feed archived). Changes nothing.',
  input: object({ account_id: accountId, ad_group_id: adGroupId, include }, ['account_id', 'ad_group_id']),
  example: { account_id: EXAMPLE_ACCOUNT, ad_group_id: EXAMPLE_AD_GROUP, include: ['serving_issues'] },
  route: {
    kind: 'upstream-read',
    path: '/ad_groups/{ad_group_id}',
    shape: 'get',
    result: 'ad_group',
    notFound:
      "no ad group {ad_group_id} in ad account {account_id}; ads_list_ad_groups lists the account's ad groups",
  },
};

const AFTER_PREPARE =
  'Nothing changes on the ad account until a person approves the change in the dashboard and ' +
  'ads_apply_change applies it.';

export const createAdGroup: ToolRow<GatewayDeps> = {
  name: 'ads_create_ad_group',
  title: 'Prepare creating an ad group',
  group: 'Campaign creation',
  behavior: 'prepare',
  features: [],
  description:
    'Prepares creating an ad group in a campaign and returns a change_id. body: campaign_id (ads_list_campaigns), ' +
    'name, status (active or paused) and bidding_config {billing_event_type, strategy, max_bid_micros, ' +
    'custom_audience_bid_multipliers} are required; product_set {product_feed_id (ads_list_product_feeds), ' +
    'filters}, description, context_hints and landing_page_configuration are optional. Money is integer micros of ' +
    'the account currency. The ad group is checked before it is recorded (fixed_bid needs max_bid_micros; each ' +
    `audience once; gt/gte/lt/lte filters take one number). ${AFTER_PREPARE} Once applied, the change's ` +
    'upstream_response is the new ad group, with its id. Upstream: POST /ad_groups.',
  input: object({ account_id: accountId, body: adGroupCreateBody }, ['account_id', 'body']),
  example: {
    account_id: EXAMPLE_ACCOUNT,
    body: {
      campaign_id: 'cmp_0123456789abcdef',
      name: 'Spring Sale — Group C',
      description: 'Returning visitors',
      context_hints: ['gardening', 'spring'],
      status: 'paused',
      bidding_config: {
        billing_event_type: 'click',
        strategy: 'fixed_bid',
        max_bid_micros: 1_500_000,
        custom_audience_bid_multipliers: [
          { custom_audience_id: 'ca_0123456789abcdef', bid_multiplier_micros: 1_500_000 },
        ],
      },
      product_set: {
        product_feed_id: 'feed_0123456789abcdef',
        filters: [{ field: 'custom_label_0', operator: 'in', values: ['spring'] }],
      },
      landing_page_configuration: { query_string_template: 'utm_source=ads&utm_campaign={{campaign.id}}' },
    },
  },
  route: {
    kind: 'prepare',
    object: 'ad_group',
    effect: 'create',
    operation: { method: 'POST', path: '/ad_groups' },
    body: 'body',
  },
};

export const updateAdGroup: ToolRow<GatewayDeps> = {
  name: 'ads_update_ad_group',
  title: 'Prepare an ad group update',
  group: 'Campaign creation',
  behavior: 'prepare',
  features: [],
  description:
    'Prepares an update of an ad group and returns a change_id. Every body field is optional: the fields given ' +
    'replace the live ones (bidding_config and product_set field by field; description, product_set and ' +
    'landing_page_configuration may be null to remove them; status may be archived, which is final). The ad ' +
    'group that would result is checked (fixed_bid needs max_bid_micros, an ad group stays in its campaign, a ' +
    'product set needs a feed), and a change to an archived ad group or one that would change nothing is ' +
    `refused. ${AFTER_PREPARE} Upstream: POST /ad_groups/{ad_group_id}.`,
  input: object({ account_id: accountId, ad_group_id: adGroupId, body: adGroupUpdateBody }, [
    'account_id',
    'ad_group_id',
    'body',
  ]),
  example: {
    account_id: EXAMPLE_ACCOUNT,
    ad_group_id: EXAMPLE_AD_GROUP,
    body: {
      name: 'Spring Sale — Group A (clicks)',
      description: null,
      bidding_config: { strategy: 'fixed_bid', max_bid_micros: 2_000_000 },
      product_set: { filters: [{ field: 'price', operator: 'lte', values: ['49.99'] }] },
      landing_page_configuration: null,
    },
  },
  route: {
    kind: 'prepare',
    object: 'ad_group',
    effect: 'update',
    operation: { method: 'POST', path: '/ad_groups/{ad_group_id}' },
    target: '/ad_groups/{ad_group_id}',
    body: 'body',
  },
};

const statusInput: Schema = object({ account_id: accountId, ad_group_id: adGroupId }, [
  'account_id',
  'ad_group_id',
]);

function statusTool(
  effect: 'activate' | 'pause' | 'archive',
  title: string,
  what: string,
): ToolRow<GatewayDeps> {
  return {
    name: `ads_${effect}_ad_group`,
    title,
    group: 'Campaign creation',
    behavior: 'prepare',
    features: [],
    description:
      `Prepares ${what} and returns a change_id. An ad group already in that status, or an archived one, is ` +
      `refused. ${AFTER_PREPARE} Upstream: POST /ad_groups/{ad_group_id}/${effect}.`,
    input: statusInput,
    example: { account_id: EXAMPLE_ACCOUNT, ad_group_id: EXAMPLE_AD_GROUP },
    ...(effect === 'archive' ? { destructive: true } : {}),
    route: {
      kind: 'prepare',
      object: 'ad_group',
      effect,
      operation: { method: 'POST', path: `/ad_groups/{ad_group_id}/${effect}` },
      target: '/ad_groups/{ad_group_id}',
    },
  };
}

export const activateAdGroup = statusTool(
  'activate',
  'Prepare activating an ad group',
  'activating an ad group (its ads can serve again; its campaign must not be archived)',
);
export const pauseAdGroup = statusTool(
  'pause',
  'Prepare pausing an ad group',
  'pausing an ad group (its ads stop serving until it is activated)',
);
export const archiveAdGroup = statusTool(
  'archive',
  'Prepare archiving an ad group',
  'archiving an ad group (its ads stop serving; archiving is final: it cannot be activated, paused or updated afterwards)',
);

export const adGroupTools: readonly ToolRow<GatewayDeps>[] = [
  listAdGroups,
  getAdGroup,
  createAdGroup,
  updateAdGroup,
  activateAdGroup,
  pauseAdGroup,
  archiveAdGroup,
];
