/**
 * A deep offset page found from counts kept per UTC day (docs/performance.md, "Deep offset pages
 * from counts kept per day"): the lists of changes, proposals and marketing items each keep the
 * number of their entries per day and filter key, and read a page at offset k by finding the day
 * holding the k-th match and skipping only that day's newer matches. The statement is the same
 * for every list; each says where its day counts are, which rows count for its filter, and which
 * parameters hold the offset and the number of day rows to read.
 */

/**
 * The `day` CTE (without `WITH`, after the filter's own CTEs): `ends`, the end of the newest day
 * whose matches reach past offset k, and `newer`, how many matches are newer than that day. The
 * page then reads
 * `<sort column> < coalesce((SELECT ends FROM day), 'infinity')` with
 * `OFFSET k - coalesce((SELECT newer FROM day), 0)`: no row when the offset's day is not among the
 * rows read, so the page is the plain offset's. Any day with at most k newer matches gives the same
 * page; the first whose running count passes k skips the fewest entries. 24 hours, not a day: a day
 * added to a time follows the session's time zone across DST.
 */
export function dayHoldingOffset(
  o: DayCountsFilter & {
    /** The day-count table, read as `k` (its columns `day` and `n`). */
    counts: string;
    /** The parameter holding the number of day rows to read (dayRowsToRead). */
    limit: string;
    /** The parameter holding the offset. */
    offset: string;
    /**
     * How long one of the counts' periods is, as a PostgreSQL interval of fixed length (hours, not
     * days: see above); the counts' `day` column is its start. A day unless given.
     */
    span?: string;
  },
): string {
  // The rows read are summed per day first (a key's count may span several rows, and a filter may
  // read several keys a day), so that each day is one row of the running sum: `newer` is then its
  // `through` less its own matches, one window instead of two.
  // Several conditions are each a range of the counts' index in day order, merged (a condition
  // with `IN` would read its ranges one after the other, and sort them).
  const rows =
    typeof o.where === 'string'
      ? `SELECT k.day, k.n FROM ${o.counts} k WHERE ${o.where} ORDER BY k.day DESC LIMIT ${o.limit}`
      : `SELECT k.day, k.n FROM (${o.where
          .map(
            (w) => `(SELECT k.day, k.n FROM ${o.counts} k WHERE ${w} ORDER BY k.day DESC LIMIT ${o.limit})`,
          )
          .join(' UNION ALL ')}) k ORDER BY k.day DESC LIMIT ${o.limit}`;
  const days = `SELECT k.day, sum(k.n) AS n FROM (${rows}) k GROUP BY k.day`;
  const perDay = o.live ? `SELECT k.day, k.n - coalesce(w.n, 0) AS n FROM (${days}) k ${o.live.join}` : days;
  return `${o.with ?? ''}day AS (
    SELECT s.day + interval '${o.span ?? '24 hours'}' AS ends, s.through - s.n AS newer FROM (
      SELECT k.day, k.n, sum(k.n) OVER (ORDER BY k.day DESC)::bigint AS through FROM (${perDay}) k
    ) s WHERE s.through > ${o.offset}::bigint ORDER BY s.day DESC LIMIT 1
  )`;
}

/** Which day rows count a list's filter, and how (dayHoldingOffset). */
export interface DayCountsFilter {
  /**
   * The condition on `k` that counts exactly the list's matches (or, with `live`, a wider set); or
   * several, whose rows are read as one, each an ordered range of the counts' index.
   */
  where: string | readonly string[];
  /** CTEs the `live` join reads, each ending in `, `: placed before `day`. */
  with?: string;
  /**
   * For a filter whose matches depend on the time: the day rows' kept counts are of a wider set
   * (the stored statuses that may be shown as the one asked for), and each row's matches are its
   * `n` less those of its day that the time keeps out of the filter, counted live. A key's count
   * is a sum of rows (a writer that finds the key's rows held inserts its delta beside them), so
   * the rows read are summed per day first, and the join subtracts once per day. A day cut short
   * by `limit` may count more or less than its matches: that only moves which day is found, as
   * every newer day is read whole and its `newer` is exact.
   */
  live?: {
    /** A join on the day rows read, as `k` (day, n), whose `w.n` is the day's matches to subtract. */
    join: string;
  };
}

/**
 * The `live` part of dayHoldingOffset where the statement's `recent` CTE (day, n) counts live the
 * matches of the wider set that the time keeps out of the filter, in rows a day may have several
 * of (one per stored status or window): each day's kept count less that day's recent ones.
 */
export const RECENT_SUBTRACTED = {
  join: `LEFT JOIN (SELECT day, sum(n) AS n FROM recent GROUP BY 1) w ON w.day = k.day`,
} as const;

/** Read at least this many day rows, whatever the offset: a shallow page costs little either way. */
const DAY_ROWS_AT_LEAST = 16;

/**
 * How many day-count rows a page at `offset` reads: at most offset / `perOffset`, which each list
 * sets from what a day row costs against a skipped entry of its plain offset (bench/deep-offset.ts),
 * so that a list whose keys have few entries a day pays a bounded share more than the plain offset.
 */
export function dayRowsToRead(offset: number, perOffset: number): number {
  return Math.max(DAY_ROWS_AT_LEAST, Math.ceil(offset / perOffset));
}
