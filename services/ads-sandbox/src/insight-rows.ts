/**
 * From aggregated insight rows to an insights response: filters, sort, the requested fields,
 * the page and the optional totals.
 */
import {
  encodeInsightsCursor,
  type InsightFilter,
  type InsightsQuery,
  type SortKey,
} from './insight-requests.ts';
import { type AggregateRow, type Counts, metricValues, zeroCounts } from './insights.ts';

/** The ids and names an entity's rows carry. */
export interface EntityLabels {
  ids: Record<string, string>;
  names: Record<string, string>;
}

interface Row {
  source: AggregateRow;
  metrics: ReturnType<typeof metricValues>;
}

function passes(row: Row, f: InsightFilter): boolean {
  const v = row.metrics[f.metric];
  if (v === null) return false;
  switch (f.op) {
    case 'eq':
      return v === f.value;
    case 'ne':
      return v !== f.value;
    case 'gt':
      return v > f.value;
    case 'gte':
      return v >= f.value;
    case 'lt':
      return v < f.value;
    case 'lte':
      return v <= f.value;
  }
}

function sortValue(row: Row, key: SortKey): number | string | null {
  if (key === 'date_start') return row.source.dateStart;
  if (key === 'device' || key === 'country') return row.source.segmentValues[key] ?? null;
  return row.metrics[key];
}

/** Compares by the requested keys; nulls last in either direction; ties keep aggregate order. */
function compareBy(sort: InsightsQuery['sort']) {
  return (a: Row, b: Row): number => {
    for (const { key, direction } of sort) {
      const x = sortValue(a, key);
      const y = sortValue(b, key);
      if (x === y) continue;
      if (x === null) return 1;
      if (y === null) return -1;
      const c = x < y ? -1 : 1;
      return direction === 'asc' ? c : -c;
    }
    return 0;
  };
}

function fieldsJson(metrics: Row['metrics'], q: InsightsQuery): Record<string, number | null> {
  return Object.fromEntries(q.fields.map((f) => [f, metrics[f]]));
}

/** The page of `rows` a query asks for, and the offsets its cursors point at. */
function pageOf<T>(rows: T[], q: InsightsQuery) {
  let start = q.afterOffset ?? 0;
  if (q.beforeOffset !== undefined) start = Math.max(0, Math.min(q.beforeOffset, rows.length) - q.limit);
  const end = Math.min(rows.length, start + q.limit);
  return {
    page: rows.slice(start, end),
    after: end < rows.length ? encodeInsightsCursor(end, q.fingerprint) : null,
    before: start > 0 && rows.length > 0 ? encodeInsightsCursor(start, q.fingerprint) : null,
    hasMore: end < rows.length,
  };
}

/** insightsResponse turns aggregated rows into the response to `q`. */
export function insightsResponse(
  aggregated: AggregateRow[],
  q: InsightsQuery,
  labels: (entityId: string | undefined) => EntityLabels,
  meta: { currency: string; timeZone: string },
) {
  const rows = aggregated
    .map((source) => ({ source, metrics: metricValues(source.counts) }))
    .filter((row) => q.filters.every((f) => passes(row, f)));
  // Array.prototype.sort is stable, so unsorted keys keep the aggregate's order.
  rows.sort(compareBy(q.sort));
  const { page, after, before, hasMore } = pageOf(rows, q);
  const data = page.map((row) => {
    const entity = labels(row.source.entityId);
    return {
      time_range: row.source.range.label,
      date_start: row.source.dateStart,
      date_end: row.source.dateEnd,
      ...entity.ids,
      ...(q.includes.has('entity_name') ? entity.names : {}),
      ...row.source.segmentValues,
      preliminary: row.source.preliminary,
      ...fieldsJson(row.metrics, q),
    };
  });
  const response: Record<string, unknown> = {
    data,
    paging: { after, before, has_more: hasMore },
    currency: meta.currency,
    time_zone: meta.timeZone,
  };
  if (q.includes.has('totals')) {
    const total: Counts = zeroCounts();
    for (const row of rows)
      for (const [k, v] of Object.entries(row.source.counts)) total[k as keyof Counts] += v;
    response.totals = {
      preliminary: rows.some((r) => r.source.preliminary),
      ...fieldsJson(metricValues(total), q),
    };
  }
  return response;
}
