/**
 * The request bodies the prepare tools send to the ad platform, each declared once: the gateway
 * publishes them as the tools' `body` argument, the changes service holds every prepared change's
 * body to them (whoever calls PrepareChange), and the bulk-job compiler takes its bounds from them.
 * A rule changed here changes in all three places at once.
 */
import { array, enumOf, integer, nullable, number, object, type Schema, string } from './schema.ts';

/** An id as the platform gives it; the pattern keeps it one path segment. */
export function platformId(description?: string) {
  return string({
    min: 1,
    max: 255,
    pattern: /^[A-Za-z0-9_.:-]+$/,
    patternHint: 'an id of letters, digits, underscore, hyphen, dot or colon',
    ...(description === undefined ? {} : { description }),
  });
}

// ---- Ads ----

/** The rules of an ad creative's fields, shared by every tool that takes a creative. */
export const creativeFields = {
  type: enumOf(['chat_card', 'product_ad_template']),
  title: string({ min: 1, max: 50, nonBlank: true }),
  body: string({ max: 100 }),
  price: string({ max: 100 }),
  target_url: string({ max: 2048, format: 'http-uri' }),
  file_id: string({ min: 1, max: 255 }),
  image_crop: object(
    {
      x: number({ min: 0, max: 1 }),
      y: number({ min: 0, max: 1 }),
      width: number({ min: 0, max: 1 }),
      height: number({ min: 0, max: 1 }),
    },
    ['x', 'y', 'width', 'height'],
    'A square crop of the EXIF-oriented source image, as fractions of its width and height: square in pixels, so ' +
      'width × image width equals height × image height (on a 300 × 100 image, width 1/3 and height 1); chat_card ' +
      'only; needs an image (file_id, or asset_id where a tool takes one).',
  ),
};

/** An ad's creative as an update gives it: an image by platform file or by saved campaign asset. */
export const adCreative = object({
  ...creativeFields,
  file_id: string({
    min: 1,
    max: 255,
    description:
      'An image file the ad account has (as an ad’s creative.file_id shows it); one it does not have is refused.',
  }),
  asset_id: string({
    format: 'uuid',
    description:
      'A saved campaign image of this ad account (ads_save_campaign_asset) instead of file_id: pinned when the ' +
      'change is prepared, shown to the reviewer, and uploaded to the ad platform only when the approved change is ' +
      'applied, then sent as its file_id. Not with file_id.',
  }),
});

/** An ad's name. */
export const adName = string({ min: 3, max: 1000, nonBlank: true });

/** POST /ads/{ad_id}. */
export const adUpdateBody = object(
  {
    name: adName,
    creative: adCreative,
    status: enumOf(['active', 'paused', 'archived']),
    landing_page_configuration: nullable(
      object({ query_string_template: string({ max: 2048 }) }, ['query_string_template']),
    ),
  },
  [],
  'The fields to change; fields left out keep their value.',
);

// ---- Ad groups ----

// The ad group body, as the specification has it; the platform's own bounds where it leaves them open.
export const MAX_BID_MICROS = 30_400_000_000_000;

function bidding(required: readonly 'billing_event_type'[]) {
  return object(
    {
      billing_event_type: enumOf(['impression', 'click'], 'What the ad group pays for: impression or click.'),
      strategy: enumOf(
        ['fixed_bid', 'maximize_clicks', 'maximize_conversions'],
        'How it bids: fixed_bid (bids max_bid_micros, which it then needs), maximize_clicks (the default) or ' +
          'maximize_conversions (only in a campaign whose objective is conversions).',
      ),
      max_bid_micros: integer({
        min: 1,
        max: MAX_BID_MICROS,
        description:
          'The bid with fixed_bid, a cap otherwise: integer micros of the account currency (1500000 is 1.50), ' +
          `1 to ${MAX_BID_MICROS}; per click, or per single impression when billing_event_type is impression ` +
          "(ads_plan_money's single wire format). The account's spend guard holds an impression bid to its bid cap " +
          'as a CPM, 1000 times the bid.',
      }),
      custom_audience_bid_multipliers: array(
        object(
          {
            custom_audience_id: platformId('A custom audience of the account.'),
            bid_multiplier_micros: integer({
              min: 100_000,
              max: 10_000_000,
              description: 'The multiplier in micros: 1000000 is ×1, 100000 to 10000000 (×0.1 to ×10).',
            }),
          },
          ['custom_audience_id', 'bid_multiplier_micros'],
        ),
        { max: 100, description: 'Bids for members of custom audiences, each audience once (at most 100).' },
      ),
    },
    required,
    'How the ad group bids.',
  );
}

const filter = object(
  {
    field: string({
      min: 1,
      max: 100,
      pattern: /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$/,
      patternHint:
        'a product attribute name of lowercase letters, digits and underscores (such as custom_label_0)',
      description: 'The product attribute, such as brand or custom_label_0.',
    }),
    operator: enumOf(['in', 'not_in', 'gt', 'gte', 'lt', 'lte', 'contains', 'not_contains', 'starts_with']),
    values: array(string({ min: 1, max: 1000 }), {
      min: 1,
      max: 1000,
      description: 'The values to compare with; gt, gte, lt and lte take exactly one decimal number.',
    }),
  },
  ['field', 'operator', 'values'],
);

function productSet(required: readonly 'product_feed_id'[]) {
  return nullable(
    object(
      {
        product_feed_id: platformId(
          'An active product feed of the account (ads_list_product_feeds lists them).',
        ),
        filters: array(filter, { max: 50, description: 'Which products of the feed, all filters applying.' }),
      },
      required,
      'The products the ad group advertises; null for none.',
    ),
  );
}

const landingPage = object(
  { query_string_template: string({ max: 2048, description: 'Appended to the landing page URL.' }) },
  ['query_string_template'],
);

/** The most context hints an ad group has, and the bounds of each. */
export const MAX_CONTEXT_HINTS = 2000;
export const contextHint = string({ min: 1, max: 1000, nonBlank: true });

/** The fields an ad group create and an update share, with the same rules. */
export const adGroupFields = {
  name: string({
    min: 3,
    max: 1000,
    nonBlank: true,
    description: 'The ad group name, 3 to 1000 characters.',
  }),
  description: string({
    max: 5000,
    multiline: true,
    description: 'A description, at most 5000 characters.',
  }),
  context_hints: array(contextHint, {
    max: MAX_CONTEXT_HINTS,
    description: 'Hints about the audience and context, at most 2000, each 1 to 1000 characters.',
  }),
  campaign_id: platformId('The campaign of the ad group (ads_list_campaigns lists them).'),
};

/** POST /ad_groups. */
export const adGroupCreateBody = object(
  {
    campaign_id: adGroupFields.campaign_id,
    name: adGroupFields.name,
    description: adGroupFields.description,
    context_hints: adGroupFields.context_hints,
    status: enumOf(['active', 'paused'], 'active or paused; a new ad group cannot be archived.'),
    bidding_config: bidding(['billing_event_type']),
    product_set: productSet(['product_feed_id']),
    landing_page_configuration: landingPage,
  },
  ['campaign_id', 'name', 'status', 'bidding_config'],
  'The new ad group.',
);

/** POST /ad_groups/{ad_group_id}. */
export const adGroupUpdateBody = object(
  {
    campaign_id: adGroupFields.campaign_id,
    name: adGroupFields.name,
    description: nullable(adGroupFields.description),
    context_hints: adGroupFields.context_hints,
    status: enumOf(['active', 'paused', 'archived'], 'active, paused or archived (archiving is final).'),
    bidding_config: bidding([]),
    product_set: productSet([]),
    landing_page_configuration: nullable(landingPage),
  },
  [],
  'The fields to change; fields left out keep their value, and bidding_config and product_set fields one by one.',
);

// ---- Custom audiences ----

const text255 = (description: string) => string({ min: 1, max: 255, description });

/** POST /custom_audiences/{custom_audience_id}/replace. */
export const audienceReplaceBody = object(
  {
    file_id: text255('The uploaded member file.'),
    expected_revision: integer({
      min: 0,
      description:
        'The audience’s current revision (from ads_list_custom_audiences): a stale one is refused.',
    }),
    filename: text255('The file’s name.'),
    mimetype: string({
      min: 1,
      max: 255,
      // The platform takes a media type only as type/subtype; anything else it refuses on apply.
      pattern: /^[\w.+-]+\/[\w.+-]+$/,
      patternHint: 'a media type, type/subtype (text/csv)',
      description: 'The file’s type, type/subtype (text/csv).',
    }),
    file_size: integer({ min: 1, max: 500_000_000, description: 'The file’s size in bytes.' }),
    identifier_type: enumOf(
      ['email', 'phone', 'email_sha256', 'phone_number_sha256', 'gaid'],
      'What the file’s identifiers are.',
    ),
    identifier_resolution: enumOf(['auto'], 'How identifiers are matched: auto.'),
  },
  ['file_id', 'expected_revision'],
  'The member file that replaces the audience’s members.',
);

/** POST /custom_audiences/merge. */
export const audienceMergeBody = object(
  {
    name: string({ min: 3, max: 1000, nonBlank: true, description: 'The new audience’s name.' }),
    custom_audience_ids: array(string({ min: 1, max: 255 }), {
      max: 64,
      unique: true,
      description: 'The active audiences to merge (1 to 64); they are left as they are.',
    }),
  },
  ['name', 'custom_audience_ids'],
  'The new audience.',
);

// ---- Conversions ----

/** POST /conversions/pixels. */
export const conversionSourceBody = object(
  {
    name: string({
      min: 3,
      max: 1000,
      nonBlank: true,
      description: 'The pixel’s name, 3 to 1000 characters.',
    }),
    client_type: enumOf(['web'], 'Where the pixel runs: web.'),
  },
  ['name', 'client_type'],
  'The new conversion source.',
);

/** POST /conversions/event_settings. */
export const conversionEventSettingBody = object(
  {
    name: string({ min: 1, max: 1000, nonBlank: true, description: 'The setting’s name.' }),
    event_type: string({
      min: 1,
      max: 100,
      description:
        'The event counted: page_visit, view_content, search, add_to_cart, add_to_wishlist, purchase, lead, sign_up ' +
        'or custom.',
    }),
    custom_event_name: string({
      min: 1,
      max: 100,
      nonBlank: true,
      description: 'The custom event’s name: required when event_type is custom, refused otherwise.',
    }),
    attribution_window_days: integer({ description: 'Days after a click or view that count: 1, 7 or 28.' }),
    source_ids: array(string({ min: 1, max: 255 }), {
      min: 1,
      description:
        'The pixels (px_… ids from ads_list_conversion_sources) whose events count; 1 to 20, distinct.',
    }),
  },
  ['name', 'event_type', 'attribution_window_days', 'source_ids'],
  'The new conversion event setting.',
);

// ---- Which body goes with which change ----

/**
 * The declared body of each (object type, effect) whose operation carries one. The status
 * effects (archive, pause, activate) send none; a bulk mutation job's body is compiled by the
 * changes service and checked by its own rules there.
 */
const BODIES: Readonly<Record<string, Readonly<Record<string, Schema>>>> = {
  ad: { update: adUpdateBody },
  ad_group: { create: adGroupCreateBody, update: adGroupUpdateBody },
  custom_audience: { replace: audienceReplaceBody, merge: audienceMergeBody },
  conversion_source: { create: conversionSourceBody },
  conversion_event_setting: { create: conversionEventSettingBody },
};

/** The declared body of a change of `objectType` with `effect`, or undefined when none is declared. */
export function platformBodyOf(objectType: string, effect: string): Schema | undefined {
  const byEffect = Object.hasOwn(BODIES, objectType) ? BODIES[objectType] : undefined;
  return byEffect !== undefined && Object.hasOwn(byEffect, effect) ? byEffect[effect] : undefined;
}

/** The length bounds a string schema publishes (minLength, maxLength), for rules that restate them. */
export function lengthBounds(schema: Schema<string>): { min: number; max: number } {
  const { minLength, maxLength } = schema.json;
  return {
    min: typeof minLength === 'number' ? minLength : 0,
    max: typeof maxLength === 'number' ? maxLength : Number.POSITIVE_INFINITY,
  };
}
