/**
 * Ad groups: the resource, its JSON form, its serving issues, the create and update bodies and
 * the rules the resulting ad group must keep. Pure functions; ad-group-actions.ts checks what
 * needs the database (the campaign, the product feed, the name) and the store persists.
 */
import {
  isRecord,
  oneOf,
  parseLandingPageConfiguration,
  refuseUnknownProperties,
  requireObject,
  string,
} from './ad-requests.ts';
import type { LandingPageConfiguration, ServingIssue } from './ads.ts';
import type { CampaignObjective, CampaignStatus } from './campaigns.ts';
import { integer, required } from './campaigns.ts';
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
type FilterOperator = (typeof FILTER_OPERATORS)[number];

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

// ---- bodies ----

function stringArray(value: unknown, field: string, max: number): unknown[] {
  if (!Array.isArray(value)) throw invalidRequest(field, `${field} must be an array`);
  if (value.length > max) throw invalidRequest(field, `${field} must have at most ${max} items`);
  return value;
}

function parseContextHints(value: unknown): string[] {
  return stringArray(value, 'context_hints', MAX_CONTEXT_HINTS).map((hint, i) =>
    string(hint, `context_hints.${i}`, { min: 1, max: MAX_CONTEXT_HINT_CHARS, content: true }),
  );
}

function parseDescription(value: unknown): string {
  return string(value, 'description', { max: MAX_DESCRIPTION_CHARS });
}

function parseMultipliers(value: unknown): BiddingConfig['custom_audience_bid_multipliers'] {
  const field = 'bidding_config.custom_audience_bid_multipliers';
  const seen = new Set<string>();
  return stringArray(value, field, MAX_BID_MULTIPLIERS).map((item, i) => {
    const path = `${field}.${i}`;
    const obj = requireObject(item, path);
    refuseUnknownProperties(obj, ['custom_audience_id', 'bid_multiplier_micros'], path);
    const id = string(required(obj, 'custom_audience_id', path), `${path}.custom_audience_id`, {
      min: 1,
      max: 255,
      content: true,
    });
    if (seen.has(id)) {
      throw invalidRequest(`${path}.custom_audience_id`, `${path}.custom_audience_id ${id} is listed twice`);
    }
    seen.add(id);
    const micros = integer(
      required(obj, 'bid_multiplier_micros', path),
      `${path}.bid_multiplier_micros`,
      MIN_BID_MULTIPLIER_MICROS,
      MAX_BID_MULTIPLIER_MICROS,
    );
    return { custom_audience_id: id, bid_multiplier_micros: micros };
  });
}

const BIDDING_KEYS = ['billing_event_type', 'strategy', 'max_bid_micros', 'custom_audience_bid_multipliers'];

/** parseBiddingPatch validates the supplied bidding fields; `null` removes the bid cap. */
function parseBiddingPatch(value: unknown): Partial<BiddingConfig> {
  const field = 'bidding_config';
  const obj = requireObject(value, field);
  refuseUnknownProperties(obj, BIDDING_KEYS, field);
  const patch: Partial<BiddingConfig> = {};
  if (obj.billing_event_type !== undefined) {
    patch.billing_event_type = oneOf(
      obj.billing_event_type,
      `${field}.billing_event_type`,
      BILLING_EVENT_TYPES,
    );
  }
  if (obj.strategy !== undefined) patch.strategy = oneOf(obj.strategy, `${field}.strategy`, BID_STRATEGIES);
  if (obj.max_bid_micros !== undefined) {
    patch.max_bid_micros =
      obj.max_bid_micros === null
        ? null
        : integer(obj.max_bid_micros, `${field}.max_bid_micros`, 1, MAX_BID_MICROS);
  }
  if (obj.custom_audience_bid_multipliers !== undefined) {
    patch.custom_audience_bid_multipliers = parseMultipliers(obj.custom_audience_bid_multipliers);
  }
  return patch;
}

/** Numeric comparisons compare a product attribute with one number. */
const NUMERIC_OPERATORS: readonly FilterOperator[] = ['gt', 'gte', 'lt', 'lte'];

function parseFilter(value: unknown, path: string): ProductFilter {
  const obj = requireObject(value, path);
  refuseUnknownProperties(obj, ['field', 'operator', 'values'], path);
  const attribute = string(required(obj, 'field', path), `${path}.field`, { min: 1, max: 100 });
  if (!/^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$/.test(attribute)) {
    throw invalidRequest(
      `${path}.field`,
      `${path}.field must be a product attribute name of lowercase letters, digits and underscores (such as "custom_label_0")`,
    );
  }
  const operator = oneOf(required(obj, 'operator', path), `${path}.operator`, FILTER_OPERATORS);
  const values = stringArray(required(obj, 'values', path), `${path}.values`, MAX_FILTER_VALUES).map((v, i) =>
    string(v, `${path}.values.${i}`, { min: 1, max: 1000 }),
  );
  if (values.length === 0) throw invalidRequest(`${path}.values`, `${path}.values must have at least 1 item`);
  if (NUMERIC_OPERATORS.includes(operator)) {
    if (values.length !== 1 || !/^-?\d+(\.\d+)?$/.test(values[0] ?? '')) {
      throw invalidRequest(
        `${path}.values`,
        `${path}.values must be exactly one decimal number for the operator "${operator}"`,
      );
    }
  }
  return { field: attribute, operator, values };
}

/** parseProductSetPatch validates a product set; on create its feed is required. */
function parseProductSetPatch(value: unknown, create: boolean): Partial<ProductSet> | null {
  if (value === null) return null;
  const field = 'product_set';
  const obj = requireObject(value, field);
  refuseUnknownProperties(obj, ['product_feed_id', 'filters'], field);
  const patch: Partial<ProductSet> = {};
  const feed = create ? required(obj, 'product_feed_id', field) : obj.product_feed_id;
  if (feed !== undefined) {
    patch.product_feed_id = string(feed, `${field}.product_feed_id`, { min: 1, max: 255, content: true });
  }
  if (obj.filters !== undefined) {
    patch.filters = stringArray(obj.filters, `${field}.filters`, MAX_PRODUCT_FILTERS).map((f, i) =>
      parseFilter(f, `${field}.filters.${i}`),
    );
  }
  return patch;
}

const CREATE_KEYS = [
  'campaign_id',
  'name',
  'description',
  'context_hints',
  'status',
  'bidding_config',
  'product_set',
  'landing_page_configuration',
];

/** The strategy of a bidding config that names none. */
const DEFAULT_STRATEGY = 'maximize_clicks';

/** parseAdGroupCreate validates the ad group create body (without the checks that need the database). */
export function parseAdGroupCreate(body: unknown): AdGroupCreate {
  if (!isRecord(body)) throw invalidRequest(undefined, 'the body must be a JSON object');
  refuseUnknownProperties(body, CREATE_KEYS, '');
  const campaignId = string(required(body, 'campaign_id'), 'campaign_id', {
    min: 1,
    max: 255,
    content: true,
  });
  const name = string(required(body, 'name'), 'name', { min: 3, max: 1000, content: true });
  const description = body.description === undefined ? null : parseDescription(body.description);
  const contextHints = body.context_hints === undefined ? [] : parseContextHints(body.context_hints);
  const status = oneOf(required(body, 'status'), 'status', CREATE_STATUSES);
  const bidding = parseBiddingPatch(required(body, 'bidding_config'));
  if (bidding.billing_event_type === undefined) {
    throw invalidRequest(
      'bidding_config.billing_event_type',
      'bidding_config.billing_event_type is required',
    );
  }
  const biddingConfig = checkBidding({
    billing_event_type: bidding.billing_event_type,
    strategy: bidding.strategy ?? DEFAULT_STRATEGY,
    max_bid_micros: bidding.max_bid_micros ?? null,
    custom_audience_bid_multipliers: bidding.custom_audience_bid_multipliers ?? [],
  });
  const set = body.product_set === undefined ? null : parseProductSetPatch(body.product_set, true);
  const productSet =
    set === null || set.product_feed_id === undefined
      ? null
      : { product_feed_id: set.product_feed_id, filters: set.filters ?? [] };
  if (body.landing_page_configuration === null) {
    throw invalidRequest('landing_page_configuration', 'landing_page_configuration must be an object');
  }
  const landingPageConfiguration =
    body.landing_page_configuration === undefined
      ? null
      : parseLandingPageConfiguration(body.landing_page_configuration);
  return {
    campaignId,
    name,
    description,
    status,
    contextHints,
    biddingConfig,
    productSet,
    landingPageConfiguration,
  };
}

/** parseAdGroupUpdate validates the ad group update body: every field optional, some nullable. */
export function parseAdGroupUpdate(body: unknown): AdGroupUpdate {
  if (!isRecord(body)) throw invalidRequest(undefined, 'the body must be a JSON object');
  refuseUnknownProperties(body, CREATE_KEYS, '');
  const update: AdGroupUpdate = {};
  if (body.campaign_id !== undefined) {
    update.campaignId = string(body.campaign_id, 'campaign_id', { min: 1, max: 255, content: true });
  }
  if (body.name !== undefined) update.name = string(body.name, 'name', { min: 3, max: 1000, content: true });
  if (body.description !== undefined) {
    update.description = body.description === null ? null : parseDescription(body.description);
  }
  if (body.context_hints !== undefined) update.contextHints = parseContextHints(body.context_hints);
  if (body.status !== undefined) update.status = oneOf(body.status, 'status', AD_GROUP_STATUSES);
  if (body.bidding_config !== undefined) update.biddingConfig = parseBiddingPatch(body.bidding_config);
  if (body.product_set !== undefined) update.productSet = parseProductSetPatch(body.product_set, false);
  if (body.landing_page_configuration !== undefined) {
    update.landingPageConfiguration = parseLandingPageConfiguration(body.landing_page_configuration);
  }
  return update;
}

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
  const keepFilters =
    patch.product_feed_id === undefined || patch.product_feed_id === current?.product_feed_id;
  return { product_feed_id: feed, filters: patch.filters ?? (keepFilters ? (current?.filters ?? []) : []) };
}
