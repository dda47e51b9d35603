/**
 * Ad groups: the resource, its JSON form, its serving issues, how an update changes it and the
 * rules the resulting ad group must keep. Pure functions; ad-group-requests.ts validates bodies,
 * ad-group-actions.ts checks what needs the database (the campaign, the product feed, the name)
 * and the store persists.
 */
import type { LandingPageConfiguration, ServingIssue } from './ads.ts';
import type { CampaignObjective, CampaignStatus } from './campaigns.ts';
import { invalidRequest, PlatformHttpError } from './errors.ts';

export const AD_GROUP_STATUSES = ['active', 'paused', 'archived'] as const;
export type AdGroupStatus = (typeof AD_GROUP_STATUSES)[number];
export const CREATE_STATUSES = ['active', 'paused'] as const;

export const BILLING_EVENT_TYPES = ['impression', 'click'] as const;
export const BID_STRATEGIES = ['fixed_bid', 'maximize_clicks', 'maximize_conversions'] as const;
export const FILTER_OPERATORS = [
  'in',
  'not_in',
  'gt',
  'gte',
  'lt',
  'lte',
  'contains',
  'not_contains',
  'starts_with',
] as const;
export type FilterOperator = (typeof FILTER_OPERATORS)[number];

export const MAX_BID_MICROS = 30_400_000_000_000;
export const MIN_BID_MULTIPLIER_MICROS = 100_000;
export const MAX_BID_MULTIPLIER_MICROS = 10_000_000;
/** Sandbox limits a real platform would have; the spec leaves them open. */
export const MAX_CONTEXT_HINTS = 2000;
export const MAX_CONTEXT_HINT_CHARS = 1000;
export const MAX_DESCRIPTION_CHARS = 5000;
export const MAX_BID_MULTIPLIERS = 100;
export const MAX_PRODUCT_FILTERS = 50;
export const MAX_FILTER_VALUES = 1000;

export interface BiddingConfig {
  billing_event_type: (typeof BILLING_EVENT_TYPES)[number];
  strategy: (typeof BID_STRATEGIES)[number];
  max_bid_micros: number | null;
  custom_audience_bid_multipliers: { custom_audience_id: string; bid_multiplier_micros: number }[];
}

export interface ProductFilter {
  field: string;
  operator: FilterOperator;
  values: string[];
}

export interface ProductSet {
  product_feed_id: string;
  filters: ProductFilter[];
}

export interface AdGroup {
  /** Creation sequence: the list order, and what cursors point at. Not part of the JSON. */
  seq: number;
  id: string;
  accountId: string;
  campaignId: string;
  name: string;
  description: string | null;
  status: AdGroupStatus;
  contextHints: string[];
  biddingConfig: BiddingConfig;
  productSet: ProductSet | null;
  landingPageConfiguration: LandingPageConfiguration | null;
  revision: number;
  createdAt: Date;
  updatedAt: Date;
  /** The state around the ad group that its serving issues and rules depend on. */
  campaignStatus: CampaignStatus;
  campaignObjective: CampaignObjective;
  /** The status of the product set's feed; null without a product set. */
  productFeedStatus: 'active' | 'archived' | null;
}

/** A validated create body. */
export interface AdGroupCreate {
  campaignId: string;
  name: string;
  description: string | null;
  status: (typeof CREATE_STATUSES)[number];
  contextHints: string[];
  biddingConfig: BiddingConfig;
  productSet: ProductSet | null;
  landingPageConfiguration: LandingPageConfiguration | null;
}

/** A validated update body: only what the client sent. */
export interface AdGroupUpdate {
  campaignId?: string;
  name?: string;
  description?: string | null;
  status?: AdGroupStatus;
  contextHints?: string[];
  /** Bidding fields to replace; the others are kept. */
  biddingConfig?: Partial<BiddingConfig>;
  /** A product set patch (the feed may be kept), or null to remove it. */
  productSet?: Partial<ProductSet> | null;
  landingPageConfiguration?: LandingPageConfiguration | null;
}

/** servingIssues returns why an ad group is not (fully) serving, from its state and its surroundings. */
export function servingIssues(g: AdGroup): ServingIssue[] {
  const issues: ServingIssue[] = [];
  if (g.status === 'paused') issues.push({ code: 'paused', message: 'The ad group is paused.' });
  if (g.status === 'archived') issues.push({ code: 'archived', message: 'The ad group is archived.' });
  if (g.campaignStatus !== 'active') {
    issues.push({
      code: `campaign_${g.campaignStatus}`,
      message: `The ad group's campaign ${g.campaignId} is ${g.campaignStatus}.`,
    });
  }
  if (g.productFeedStatus === 'archived' && g.productSet !== null) {
    issues.push({
      code: 'product_feed_archived',
      message: `The product feed ${g.productSet.product_feed_id} of the product set is archived.`,
    });
  }
  return issues;
}

/** canonicalBidding returns `c` with its keys in one fixed order (jsonb keeps its own order). */
export function canonicalBidding(c: BiddingConfig): BiddingConfig {
  return {
    billing_event_type: c.billing_event_type,
    strategy: c.strategy,
    max_bid_micros: c.max_bid_micros,
    custom_audience_bid_multipliers: c.custom_audience_bid_multipliers.map((m) => ({
      custom_audience_id: m.custom_audience_id,
      bid_multiplier_micros: m.bid_multiplier_micros,
    })),
  };
}

/** canonicalProductSet returns `p` with its keys in one fixed order. */
export function canonicalProductSet(p: ProductSet | null): ProductSet | null {
  if (p === null) return null;
  return {
    product_feed_id: p.product_feed_id,
    filters: p.filters.map((f) => ({ field: f.field, operator: f.operator, values: f.values })),
  };
}

/** adGroupJson is an ad group as the API returns it; `serving_issues` only when asked for. */
export function adGroupJson(g: AdGroup, include: { servingIssues: boolean } = { servingIssues: false }) {
  return {
    id: g.id,
    account_id: g.accountId,
    campaign_id: g.campaignId,
    name: g.name,
    description: g.description,
    status: g.status,
    context_hints: g.contextHints,
    bidding_config: canonicalBidding(g.biddingConfig),
    product_set: canonicalProductSet(g.productSet),
    landing_page_configuration: g.landingPageConfiguration,
    revision: g.revision,
    created_at: g.createdAt.toISOString(),
    updated_at: g.updatedAt.toISOString(),
    ...(include.servingIssues ? { serving_issues: servingIssues(g) } : {}),
  };
}

export type AdGroupJson = ReturnType<typeof adGroupJson>;

/** checkBidding enforces the rules within a bidding config: a fixed bid needs its amount. */
export function checkBidding(config: BiddingConfig): BiddingConfig {
  if (config.strategy === 'fixed_bid' && config.max_bid_micros === null) {
    throw invalidRequest(
      'bidding_config.max_bid_micros',
      'bidding_config.max_bid_micros is required with the strategy "fixed_bid" (it is the bid)',
    );
  }
  return config;
}

/** checkStrategyFitsCampaign refuses maximize_conversions in a campaign that does not optimize for conversions. */
export function checkStrategyFitsCampaign(config: BiddingConfig, objective: CampaignObjective): void {
  if (config.strategy === 'maximize_conversions' && objective !== 'conversions') {
    throw invalidRequest(
      'bidding_config.strategy',
      `bidding_config.strategy "maximize_conversions" needs a campaign with the objective "conversions"; this campaign's objective is "${objective}"`,
    );
  }
}

/** adGroupArchived is the 409 for a change to an archived ad group, which is final. */
export function adGroupArchived(id: string): PlatformHttpError {
  return new PlatformHttpError(
    409,
    'ad_group_archived',
    `the ad group ${id} is archived; an archived ad group cannot be changed, activated or paused`,
  );
}

/** The editable state of an ad group, to tell whether a change changed anything. */
function editableState(g: AdGroup): string {
  return JSON.stringify([
    g.name,
    g.description,
    g.status,
    g.contextHints,
    canonicalBidding(g.biddingConfig),
    canonicalProductSet(g.productSet),
    g.landingPageConfiguration,
  ]);
}

/** changed tells whether `next` differs from `before` in anything a client can edit. */
export function changed(before: AdGroup, next: AdGroup): boolean {
  return editableState(before) !== editableState(next);
}

/**
 * applyAdGroupUpdate returns the ad group as `update` leaves it. An archived ad group is final
 * (409); the campaign cannot change (400); supplied bidding fields replace the group's and the
 * merged config must hold together; a product set patch without a feed keeps the group's feed.
 */
export function applyAdGroupUpdate(g: AdGroup, update: AdGroupUpdate): AdGroup {
  if (g.status === 'archived') throw adGroupArchived(g.id);
  if (update.campaignId !== undefined && update.campaignId !== g.campaignId) {
    throw invalidRequest('campaign_id', `campaign_id cannot change; the ad group belongs to ${g.campaignId}`);
  }
  const next: AdGroup = { ...g };
  if (update.name !== undefined) next.name = update.name;
  if (update.description !== undefined) next.description = update.description;
  if (update.status !== undefined) next.status = update.status;
  if (update.contextHints !== undefined) next.contextHints = update.contextHints;
  if (update.landingPageConfiguration !== undefined) {
    next.landingPageConfiguration = update.landingPageConfiguration;
  }
  if (update.biddingConfig !== undefined) {
    next.biddingConfig = checkBidding({ ...g.biddingConfig, ...update.biddingConfig });
  }
  if (update.productSet !== undefined) next.productSet = mergeProductSet(g.productSet, update.productSet);
  return next;
}

function mergeProductSet(current: ProductSet | null, patch: Partial<ProductSet> | null): ProductSet | null {
  if (patch === null) return null;
  const feed = patch.product_feed_id ?? current?.product_feed_id;
  if (feed === undefined) {
    throw invalidRequest(
      'product_set.product_feed_id',
      'product_set.product_feed_id is required: the ad group has no product set yet',
    );
  }
  // Field by field, as an update documents: filters left out keep their value, also when the feed
  // changes (a filter names a product attribute such as brand, not something of one feed).
  return { product_feed_id: feed, filters: patch.filters ?? current?.filters ?? [] };
}
