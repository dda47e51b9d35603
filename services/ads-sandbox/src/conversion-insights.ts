/**
 * `POST /conversions/insights`: attributed conversions of the account, its campaigns, ad groups
 * or ads, as totals per time range or daily values. The numbers are the conversion metrics of
 * the ad insights, so both reports agree.
 */
import { invalidRequest } from './errors.ts';
import { parseTimeRanges } from './insight-requests.ts';
import {
  type AggregateRow,
  aggregate,
  type DateRange,
  type InsightEntity,
  metricValues,
} from './insights.ts';
import type { LocalTime } from './local-date.ts';
import type { AdRef } from './store/insight-store.ts';

export const AGGREGATION_LEVELS = ['account', 'campaign', 'ad_group', 'ad'] as const;
export type ConversionLevel = (typeof AGGREGATION_LEVELS)[number];
export const MAX_ENTITY_IDS = 100;

export interface ConversionInsightsBody {
  aggregation_level: ConversionLevel;
  time_granularity?: 'none' | 'daily';
  breakdown?: 'device' | 'country';
  time_ranges: string[];
  entity_ids?: string[];
  group_by_entity?: boolean;
  include_zero_rows?: boolean;
}

/** The body's JSON schema (Fastify validates it, naming the field of a refusal). */
export const conversionInsightsSchema = {
  body: {
    type: 'object',
    required: ['aggregation_level', 'time_ranges'],
    additionalProperties: false,
    properties: {
      aggregation_level: { type: 'string', enum: AGGREGATION_LEVELS },
      time_granularity: { type: 'string', enum: ['none', 'daily'] },
      breakdown: { type: 'string', enum: ['device', 'country'] },
      time_ranges: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1, maxLength: 64 } },
      entity_ids: {
        type: 'array',
        maxItems: MAX_ENTITY_IDS,
        uniqueItems: true,
        items: { type: 'string', minLength: 1, maxLength: 100 },
      },
      group_by_entity: { type: 'boolean' },
      include_zero_rows: { type: 'boolean' },
    },
  },
} as const;

/** The account's structure: its ads, and the ids of each level's entities. */
export interface ConversionScope {
  accountId: string;
  ads: AdRef[];
  campaignIds: string[];
  adGroupIds: string[];
}

function entityIdOf(level: ConversionLevel, ad: AdRef, accountId: string): string {
  switch (level) {
    case 'account':
      return accountId;
    case 'campaign':
      return ad.campaignId;
    case 'ad_group':
      return ad.adGroupId;
    case 'ad':
      return ad.id;
  }
}

function allIds(level: ConversionLevel, scope: ConversionScope): string[] {
  switch (level) {
    case 'account':
      return [scope.accountId];
    case 'campaign':
      return scope.campaignIds;
    case 'ad_group':
      return scope.adGroupIds;
    case 'ad':
      return scope.ads.map((ad) => ad.id);
  }
}

/** The entities rows are reported for: each selected one, or all of them together. */
function entitiesOf(body: ConversionInsightsBody, scope: ConversionScope): InsightEntity[] {
  const level = body.aggregation_level;
  const known = allIds(level, scope);
  const ids = body.entity_ids ?? known;
  ids.forEach((id, i) => {
    if (!known.includes(id)) {
      throw invalidRequest(
        `entity_ids.${i}`,
        `entity_ids.${i}: no ${level.replace('_', ' ')} ${id} in this account`,
      );
    }
  });
  const adsOf = (id: string) =>
    scope.ads.filter((ad) => entityIdOf(level, ad, scope.accountId) === id).map((ad) => ad.id);
  if (body.group_by_entity === true) return ids.map((id) => ({ id, adIds: adsOf(id) }));
  return [{ id: undefined, adIds: ids.flatMap(adsOf) }];
}

function rowJson(row: AggregateRow, body: ConversionInsightsBody) {
  const m = metricValues(row.counts);
  return {
    time_range: row.range.label,
    date_start: row.dateStart,
    date_end: row.dateEnd,
    ...(body.group_by_entity === true ? { entity_id: row.entityId } : {}),
    ...row.segmentValues,
    preliminary: row.preliminary,
    conversions: m.conversions,
    click_through_conversions: m.click_through_conversions,
    view_through_conversions: m.view_through_conversions,
    conversion_value_micros: m.conversion_value_micros,
  };
}

/** conversionInsights answers a validated body at local time `today`. */
export function conversionInsights(
  body: ConversionInsightsBody,
  scope: ConversionScope,
  today: LocalTime,
  meta: { currency: string; timeZone: string },
) {
  const ranges: DateRange[] = parseTimeRanges('time_ranges', body.time_ranges);
  const rows = aggregate({
    entities: entitiesOf(body, scope),
    ranges,
    granularity: body.time_granularity ?? 'none',
    segments: body.breakdown === undefined ? [] : [body.breakdown],
    today,
  }).filter((row) => body.include_zero_rows === true || row.counts.conversions > 0);
  return {
    aggregation_level: body.aggregation_level,
    data: rows.map((row) => rowJson(row, body)),
    currency: meta.currency,
    time_zone: meta.timeZone,
  };
}
