/**
 * Validation of the insights endpoints' query strings (`GET /ad_groups/{id}/insights`,
 * `GET /ads/{id}/insights`) and of the time ranges `POST /conversions/insights` shares with them.
 * List parameters are repeated (`fields=clicks&fields=impressions`). Every refusal is a 400
 * naming the parameter and the rule.
 */
import { createHash } from 'node:crypto';
import { list, refuseUnknownParameters } from './ad-requests.ts';
import { invalidRequest } from './errors.ts';
import {
  type DateRange,
  GRANULARITIES,
  type Granularity,
  METRICS,
  type Metric,
  SEGMENTS,
  type Segment,
} from './insights.ts';
import { addDays, dayNumber, isValidDate } from './local-date.ts';
import { many, parseLimit, type RawQuery, single } from './paging.ts';

export const INSIGHTS_DEFAULT_LIMIT = 100;
export const INSIGHTS_MAX_LIMIT = 2000;
export const MAX_TIME_RANGES = 5;
/** The longest time range, in days (a quarter); it bounds what one request computes. */
export const MAX_RANGE_DAYS = 93;
/** The days the default time range covers, ending with the current local day. */
export const DEFAULT_RANGE_DAYS = 7;
export const MAX_SORT_KEYS = 3;
export const MAX_FILTERS = 10;

export const INSIGHT_INCLUDES = ['entity_name', 'totals'] as const;
export type InsightInclude = (typeof INSIGHT_INCLUDES)[number];
export const FILTER_OPERATORS = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte'] as const;
export type FilterOperator = (typeof FILTER_OPERATORS)[number];
/** The metrics a request returns when it names no `fields`. */
export const DEFAULT_FIELDS: readonly Metric[] = [
  'impressions',
  'clicks',
  'ctr',
  'spend_micros',
  'cpc_micros',
  'conversions',
  'conversion_value_micros',
];
/** What rows can be sorted by besides metrics. */
export const SORT_DIMENSIONS = ['date_start', 'device', 'country'] as const;
export type SortKey = Metric | (typeof SORT_DIMENSIONS)[number];

export type AggregationLevel = 'ad_group' | 'ad';

export interface InsightFilter {
  metric: Metric;
  op: FilterOperator;
  value: number;
}

export interface InsightsQuery {
  granularity: Granularity;
  level: AggregationLevel;
  /** Undefined: the default range, which depends on the current local day. */
  ranges: DateRange[] | undefined;
  fields: Metric[];
  sort: { key: SortKey; direction: 'asc' | 'desc' }[];
  filters: InsightFilter[];
  /** In group order: `override_segment_group_order` when given, else as listed. */
  segments: Segment[];
  includes: Set<InsightInclude>;
  limit: number;
  /** The offset `after` points past, or `before` points at. */
  afterOffset: number | undefined;
  beforeOffset: number | undefined;
  /** Identifies the question apart from paging, so a cursor cannot be used with another one. */
  fingerprint: string;
}

const isOneOf = <T extends string>(values: readonly T[], v: string): v is T =>
  (values as readonly string[]).includes(v);

function refuseDuplicates(name: string, values: string[]): void {
  const seen = new Set<string>();
  for (const v of values) {
    if (seen.has(v)) throw invalidRequest(name, `${name} lists "${v}" twice`);
    seen.add(v);
  }
}

/**
 * parseTimeRanges reads `YYYY-MM-DD..YYYY-MM-DD` ranges of account-local dates, both ends
 * included: at most MAX_TIME_RANGES of them, each at most MAX_RANGE_DAYS long, no repeats.
 */
export function parseTimeRanges(field: string, values: string[]): DateRange[] {
  if (values.length === 0) throw invalidRequest(field, `${field} must list at least one time range`);
  if (values.length > MAX_TIME_RANGES) {
    throw invalidRequest(field, `${field} may list at most ${MAX_TIME_RANGES} time ranges`);
  }
  refuseDuplicates(field, values);
  return values.map((label) => {
    const [start = '', end = '', extra] = label.split('..');
    if (extra !== undefined || !isValidDate(start) || !isValidDate(end)) {
      throw invalidRequest(
        field,
        `${field}: "${label}" is not a time range; write YYYY-MM-DD..YYYY-MM-DD (both days included)`,
      );
    }
    const days = dayNumber(end) - dayNumber(start) + 1;
    if (days < 1) throw invalidRequest(field, `${field}: "${label}" ends before it starts`);
    if (days > MAX_RANGE_DAYS) {
      throw invalidRequest(
        field,
        `${field}: "${label}" is ${days} days; a range may span at most ${MAX_RANGE_DAYS}`,
      );
    }
    return { label, start, end };
  });
}

/** defaultTimeRange is the last DEFAULT_RANGE_DAYS local days, the current one included. */
export function defaultTimeRange(today: string): DateRange {
  const start = addDays(today, 1 - DEFAULT_RANGE_DAYS);
  return { label: `${start}..${today}`, start, end: today };
}

function parseFields(query: RawQuery): Metric[] {
  const values = many(query, 'fields');
  if (values.length === 0) return [...DEFAULT_FIELDS];
  refuseDuplicates('fields', values);
  return values.map((v) => {
    if (!isOneOf(METRICS, v)) {
      throw invalidRequest('fields', `fields: "${v}" is not a metric; allowed are ${list(METRICS)}`);
    }
    return v;
  });
}

function parseSort(query: RawQuery): InsightsQuery['sort'] {
  const values = many(query, 'sort');
  if (values.length > MAX_SORT_KEYS)
    throw invalidRequest('sort', `sort may list at most ${MAX_SORT_KEYS} keys`);
  const keys = [...METRICS, ...SORT_DIMENSIONS];
  const sort = values.map((v): InsightsQuery['sort'][number] => {
    const [key = '', direction = '', extra] = v.split(':');
    if (extra !== undefined || !isOneOf(keys, key) || (direction !== 'asc' && direction !== 'desc')) {
      throw invalidRequest(
        'sort',
        `sort: "${v}" is not field:asc or field:desc with a field among ${list(keys)}`,
      );
    }
    return { key, direction };
  });
  refuseDuplicates(
    'sort',
    sort.map((s) => s.key),
  );
  return sort;
}

function parseFilters(query: RawQuery): InsightFilter[] {
  const values = many(query, 'filters');
  if (values.length > MAX_FILTERS) throw invalidRequest('filters', `filters may list at most ${MAX_FILTERS}`);
  return values.map((v) => {
    const [metric = '', op = '', value = '', extra] = v.split(':');
    if (extra !== undefined || !isOneOf(METRICS, metric)) {
      throw invalidRequest(
        'filters',
        `filters: "${v}" is not metric:operator:number with a metric among ${list(METRICS)}`,
      );
    }
    if (!isOneOf(FILTER_OPERATORS, op)) {
      throw invalidRequest(
        'filters',
        `filters: "${v}" has operator "${op}"; allowed are ${list(FILTER_OPERATORS)}`,
      );
    }
    if (!/^-?[0-9]{1,15}(\.[0-9]{1,6})?$/.test(value)) {
      throw invalidRequest('filters', `filters: "${v}" compares with "${value}", which is not a number`);
    }
    return { metric, op, value: Number(value) };
  });
}

function parseSegments(query: RawQuery): Segment[] {
  const segments = many(query, 'segments');
  refuseDuplicates('segments', segments);
  for (const s of segments) {
    if (!isOneOf(SEGMENTS, s)) {
      throw invalidRequest('segments', `segments: "${s}" is not a segment; allowed are ${list(SEGMENTS)}`);
    }
  }
  const order = many(query, 'override_segment_group_order');
  if (order.length === 0) return segments as Segment[];
  const sameSet = order.length === segments.length && order.every((s) => segments.includes(s));
  if (!sameSet) {
    throw invalidRequest(
      'override_segment_group_order',
      `override_segment_group_order must list each requested segment once (${list(segments)}), in the order to group by`,
    );
  }
  return order as Segment[];
}

function parseIncludes(query: RawQuery): Set<InsightInclude> {
  const values = many(query, 'includes');
  for (const v of values) {
    if (!isOneOf(INSIGHT_INCLUDES, v)) {
      throw invalidRequest(
        'includes',
        `includes: "${v}" is not allowed; allowed are ${list(INSIGHT_INCLUDES)}`,
      );
    }
  }
  return new Set(values as InsightInclude[]);
}

const CURSOR_PREFIX = 'ins';

/** encodeInsightsCursor points at row `offset` of the rows of the question `fingerprint`. */
export function encodeInsightsCursor(offset: number, fingerprint: string): string {
  return Buffer.from(`${CURSOR_PREFIX}:${offset}:${fingerprint}`, 'utf8').toString('base64url');
}

function decodeCursor(field: string, cursor: string, fingerprint: string): number {
  const decoded = /^[A-Za-z0-9_-]{1,128}$/.test(cursor)
    ? Buffer.from(cursor, 'base64url').toString('utf8')
    : '';
  const match = /^ins:(0|[1-9][0-9]{0,8}):([0-9a-f]{16})$/.exec(decoded);
  if (match === null) {
    throw invalidRequest(field, `${field} is not a valid cursor; use paging.${field} of an earlier page`);
  }
  if (match[2] !== fingerprint) {
    throw invalidRequest(
      field,
      `${field} belongs to a request with other arguments; repeat that request's arguments`,
    );
  }
  return Number(match[1]);
}

/** The parameters that shape the rows, hashed in a fixed order so equal questions hash equally. */
function fingerprintOf(query: RawQuery, level: AggregationLevel): string {
  const names = [
    'time_granularity',
    'time_ranges',
    'fields',
    'sort',
    'filters',
    'segments',
    'override_segment_group_order',
  ];
  const shape = [level, ...names.map((n) => many(query, n))];
  return createHash('sha256').update(JSON.stringify(shape)).digest('hex').slice(0, 16);
}

const PARAMETERS = [
  'time_granularity',
  'aggregation_level',
  'time_ranges',
  'fields',
  'sort',
  'filters',
  'segments',
  'override_segment_group_order',
  'includes',
  'after',
  'before',
  'limit',
];

/**
 * parseInsightsQuery validates an insights query. `levels` are the aggregation levels the
 * endpoint offers, the first being its default.
 */
export function parseInsightsQuery(query: RawQuery, levels: readonly AggregationLevel[]): InsightsQuery {
  refuseUnknownParameters(query, PARAMETERS);
  const granularity = single(query, 'time_granularity') ?? 'none';
  if (!isOneOf(GRANULARITIES, granularity)) {
    throw invalidRequest(
      'time_granularity',
      `time_granularity must be one of ${list(GRANULARITIES)}; got "${granularity}"`,
    );
  }
  const level = single(query, 'aggregation_level') ?? levels[0] ?? 'ad';
  if (!isOneOf(levels, level)) {
    throw invalidRequest(
      'aggregation_level',
      `aggregation_level must be one of ${list(levels)} here; got "${level}"`,
    );
  }
  const rawRanges = many(query, 'time_ranges');
  const fingerprint = fingerprintOf(query, level);
  const after = single(query, 'after');
  const before = single(query, 'before');
  if (after !== undefined && before !== undefined) {
    throw invalidRequest('before', 'after and before cannot be combined; give one cursor');
  }
  return {
    granularity,
    level,
    ranges: rawRanges.length === 0 ? undefined : parseTimeRanges('time_ranges', rawRanges),
    fields: parseFields(query),
    sort: parseSort(query),
    filters: parseFilters(query),
    segments: parseSegments(query),
    includes: parseIncludes(query),
    limit: parseLimit(query, INSIGHTS_MAX_LIMIT, INSIGHTS_DEFAULT_LIMIT),
    afterOffset: after === undefined ? undefined : decodeCursor('after', after, fingerprint),
    beforeOffset: before === undefined ? undefined : decodeCursor('before', before, fingerprint),
    fingerprint,
  };
}
