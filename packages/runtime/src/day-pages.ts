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
  // The rows are read newest day first and never grouped or sorted again, so that the statement
  // stops at the day holding the offset: a page `offset` deep reads the day rows down to that day,
  // not the whole history's (a deep page at the tools' offset bound in a workspace of ten years
  // reads what it reads in one of a year). A day may be several rows (a key's count may span
  // several, a filter may read several keys a day, the live subtraction adds its own), so the
  // running sums are over the day's peers: `through` counts every row of the day and the newer
  // ones (a RANGE frame's default), `newer` only the newer days' (a frame ending an hour before
  // the day, where the next newer period starts at least a day away).
  // Several conditions are each a range of the counts' index in day order, merged (a condition
  // with `IN` would read its ranges one after the other, and sort them).
  const ranges = typeof o.where === 'string' ? [o.where] : o.where;
  const read = ranges.map(
    (w) => `(SELECT k.day, k.n FROM ${o.counts} k WHERE ${w} ORDER BY k.day DESC LIMIT ${o.limit})`,
  );
  // The live subtraction's rows (a few days', bounded by the windows) are merged in day order
  // too, each day's subtracted from that day's running sums.
  const rows =
    read.length === 1 && o.live === undefined
      ? read[0]
      : `(SELECT k.day, k.n FROM (${read.join(' UNION ALL ')}) k ORDER BY k.day DESC LIMIT ${o.limit})${
          o.live ? ` UNION ALL (SELECT w.day, -w.n FROM (${o.live.subtract}) w)` : ''
        }`;
  return `${o.with ?? ''}day AS (
    SELECT s.day + interval '${o.span ?? '24 hours'}' AS ends, s.newer FROM (
      SELECT k.day, sum(k.n) OVER newest::bigint AS through,
             coalesce(sum(k.n) OVER (newest RANGE BETWEEN UNBOUNDED PRECEDING AND interval '1 hour' PRECEDING), 0)::bigint AS newer
        FROM (${rows}) k
      WINDOW newest AS (ORDER BY k.day DESC)
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
  /** CTEs the `live` subtraction reads, each ending in `, `: placed before `day`. */
  with?: string;
  /**
   * For a filter whose matches depend on the time: the day rows' kept counts are of a wider set
   * (the stored statuses that may be shown as the one asked for), and each row's matches are its
   * `n` less those of its day that the time keeps out of the filter, counted live: its rows are
   * merged among the day rows read, negated, so each day's running sums take them off. A day cut
   * short by `limit` may count more or less than its matches: that only moves which day is found,
   * as every newer day is read whole and its `newer` is exact. (A subtracted day older than every
   * row read only lowers the sums past them, where no day is found that was not found before.)
   */
  live?: {
    /**
     * A statement of (day, n), the matches to subtract from each day: a day may have several rows,
     * and a negative `n` adds matches the kept rows read leave out (a day whose kept count is not
     * read, with its matches counted live).
     */
    subtract: string;
  };
}

/**
 * The `live` part of dayHoldingOffset where the statement's `recent` CTE (day, n) counts live the
 * matches of the wider set that the time keeps out of the filter, in rows a day may have several
 * of (one per stored status or window): each day's kept count less that day's recent ones.
 */
export const RECENT_SUBTRACTED = { subtract: 'SELECT day, n FROM recent' } as const;

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
