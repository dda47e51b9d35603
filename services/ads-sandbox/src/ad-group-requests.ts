/**
 * Validation of the ad group endpoints' bodies. Every refusal is a 400 `invalid_request` whose
 * `field` is the dotted path of the offending value and whose message names it and the rule.
 * The rules that need the database are in ad-group-actions.ts.
 */
import { isRecord } from '@adsmcp/runtime/json';
import {
  AD_GROUP_STATUSES,
  type AdGroupCreate,
  type AdGroupUpdate,
  BID_STRATEGIES,
  BILLING_EVENT_TYPES,
  type BiddingConfig,
  CREATE_STATUSES,
  checkBidding,
  FILTER_OPERATORS,
  type FilterOperator,
  MAX_BID_MICROS,
  MAX_BID_MULTIPLIER_MICROS,
  MAX_BID_MULTIPLIERS,
  MAX_CONTEXT_HINT_CHARS,
  MAX_CONTEXT_HINTS,
  MAX_DESCRIPTION_CHARS,
  MAX_FILTER_VALUES,
  MAX_PRODUCT_FILTERS,
  MIN_BID_MULTIPLIER_MICROS,
  type ProductFilter,
  type ProductSet,
} from './ad-groups.ts';
import {
  oneOf,
  parseLandingPageConfiguration,
  refuseUnknownProperties,
  requireObject,
  string,
} from './ad-requests.ts';
import { integer, required } from './campaigns.ts';
import { invalidRequest } from './errors.ts';

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
