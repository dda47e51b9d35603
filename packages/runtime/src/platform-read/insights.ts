/**
 * Insights summed exactly: counts and micros as bigint (never floats, which lose whole units past
 * 2^53 and drift when summed), per entity, with the days each entity's rows covered, so that a sum
 * over a range says whether the whole range is in it.
 */

/** The days of an account-local range YYYY-MM-DD..YYYY-MM-DD, both ends included. */
export function daysOf(range: string): string[] {
  const m = /^(\d{4}-\d{2}-\d{2})\.\.(\d{4}-\d{2}-\d{2})$/.exec(range);
  const start = m?.[1] === undefined ? Number.NaN : Date.parse(`${m[1]}T00:00:00Z`);
  const end = m?.[2] === undefined ? Number.NaN : Date.parse(`${m[2]}T00:00:00Z`);
  if (Number.isNaN(start) || Number.isNaN(end) || start > end) {
    throw new RangeError(
      `time range must be YYYY-MM-DD..YYYY-MM-DD, the first day not after the last (got "${range}")`,
    );
  }
  const out: string[] = [];
  for (let t = start; t <= end; t += 86_400_000) out.push(new Date(t).toISOString().slice(0, 10));
  return out;
}

/** An exact count: a non-negative whole number as the platform writes it (a JSON integer or digits). */
export function exactCount(v: unknown): bigint | undefined {
  if (typeof v === 'number') return Number.isSafeInteger(v) && v >= 0 ? BigInt(v) : undefined;
  if (typeof v === 'string' && /^\d{1,30}$/.test(v)) return BigInt(v);
  return undefined;
}

/** One entity's sums: each metric's exact total, undefined when a row gave no exact count for it. */
export interface EntitySum<M extends string> {
  counts: Record<M, bigint | undefined>;
  /** The days (date_start of daily rows) its rows covered, sorted. */
  days: string[];
  /** Rows summed. */
  rows: number;
}

export interface InsightSums<M extends string> {
  byEntity: Map<string, EntitySum<M>>;
  /** The days of the range. */
  expectedDays: string[];
  /** The days of the range no row covered for any entity. */
  missingDays: string[];
  /** Rows whose day lies outside the range, or that named no entity: not summed. */
  skippedRows: number;
}

/**
 * sumInsights sums daily insight rows per entity (`entityKey` of each row): every metric exactly,
 * a metric a row gives no exact count for is unknown for that entity from then on (not 0), and
 * records which of `range`'s days each entity's rows and all rows covered.
 */
export function sumInsights<M extends string>(
  rows: Iterable<Record<string, unknown>>,
  options: { metrics: readonly M[]; range: string; entityKey: string },
): InsightSums<M> {
  const expectedDays = daysOf(options.range);
  const inRange = new Set(expectedDays);
  const covered = new Set<string>();
  const days = new Map<string, Set<string>>();
  const byEntity = new Map<string, EntitySum<M>>();
  let skippedRows = 0;
  for (const row of rows) {
    const key = row[options.entityKey];
    const day = row.date_start;
    if (typeof key !== 'string' || key === '' || typeof day !== 'string' || !inRange.has(day)) {
      skippedRows++;
      continue;
    }
    let sum = byEntity.get(key);
    if (sum === undefined) {
      const counts = {} as Record<M, bigint | undefined>;
      for (const m of options.metrics) counts[m] = 0n;
      sum = { counts, days: [], rows: 0 };
      byEntity.set(key, sum);
      days.set(key, new Set());
    }
    sum.rows++;
    for (const m of options.metrics) {
      const v = exactCount(row[m]);
      const total = sum.counts[m];
      sum.counts[m] = v === undefined || total === undefined ? undefined : total + v;
    }
    days.get(key)?.add(day);
    covered.add(day);
  }
  for (const [key, sum] of byEntity) sum.days = [...(days.get(key) ?? [])].sort();
  return {
    byEntity,
    expectedDays,
    missingDays: expectedDays.filter((d) => !covered.has(d)),
    skippedRows,
  };
}

/** One entity's sums over a period read as range rows (sumRanges). */
export interface RangeSum<M extends string> {
  /** Each metric's exact total; undefined when unknown (see sumRanges). */
  counts: Record<M, bigint | undefined>;
  /** The period's ranges that gave the entity a row. */
  ranges: number;
  /** The entity's first row, for the fields beside the metrics (its name). */
  first: Record<string, unknown>;
}

/**
 * sumRanges sums rows of `time_granularity: none` (one row per entity and time range, its
 * `time_range` naming the range) over a period cut into `ranges`. A metric is known only when every
 * range gave the entity a row with an exact count for it: a range without a row leaves the sum
 * unknown rather than short. Rows of other ranges, or naming no entity, are not summed.
 */
export function sumRanges<M extends string>(
  rows: Iterable<Record<string, unknown>>,
  options: { metrics: readonly M[]; ranges: readonly string[]; entityKey: string },
): Map<string, RangeSum<M>> {
  const wanted = new Set(options.ranges);
  const sums = new Map<string, RangeSum<M>>();
  for (const row of rows) {
    const key = row[options.entityKey];
    const range = row.time_range;
    if (typeof key !== 'string' || key === '' || typeof range !== 'string' || !wanted.has(range)) continue;
    let sum = sums.get(key);
    if (sum === undefined) {
      const counts = {} as Record<M, bigint | undefined>;
      for (const m of options.metrics) counts[m] = 0n;
      sum = { counts, ranges: 0, first: row };
      sums.set(key, sum);
    }
    sum.ranges++;
    for (const m of options.metrics) {
      const v = exactCount(row[m]);
      const total = sum.counts[m];
      sum.counts[m] = v === undefined || total === undefined ? undefined : total + v;
    }
  }
  for (const sum of sums.values()) {
    if (sum.ranges === wanted.size) continue;
    for (const m of options.metrics) sum.counts[m] = undefined;
  }
  return sums;
}
