/**
 * The sandbox's delivery metrics. Every ad has, for every account-local day, one cell of counts
 * per device and country, derived from a SHA-256 of the ad id, the date and the cell: the same
 * question always gets the same answer, and any total is the sum of the cells beneath it. The
 * current local day has only the share of the day that has passed. Metrics do not depend on an
 * ad's status or creation date: the sandbox keeps no delivery history to consult.
 */
import { createHash } from 'node:crypto';
import { addDays, dayNumber, isoWeekday, type LocalTime, monthStart, weekStart } from './local-date.ts';

export const DEVICES = ['mobile', 'desktop', 'tablet'] as const;
export const COUNTRIES = ['US', 'GB', 'DE', 'FR', 'CA', 'AU'] as const;
export const SEGMENTS = ['device', 'country'] as const;
export type Segment = (typeof SEGMENTS)[number];

const DEVICE_WEIGHT: Record<string, number> = { mobile: 0.6, desktop: 0.3, tablet: 0.1 };
const COUNTRY_WEIGHT: Record<string, number> = { US: 0.45, GB: 0.15, DE: 0.12, FR: 0.1, CA: 0.1, AU: 0.08 };
/** Impressions of an average ad on an average weekday, before the cell's weights. */
const DAILY_IMPRESSIONS = 4000;

/** The additive counts; every other metric is derived from their sums. */
export interface Counts {
  impressions: number;
  clicks: number;
  spend_micros: number;
  conversions: number;
  view_through_conversions: number;
  conversion_value_micros: number;
}

export const COUNT_NAMES = [
  'impressions',
  'clicks',
  'spend_micros',
  'conversions',
  'view_through_conversions',
  'conversion_value_micros',
] as const;

/** Every metric an insights request may ask for, sort or filter by. */
export const METRICS = [
  ...COUNT_NAMES,
  'click_through_conversions',
  'ctr',
  'cpc_micros',
  'cpm_micros',
  'conversion_rate',
  'cpa_micros',
  'roas',
] as const;
export type Metric = (typeof METRICS)[number];

export const zeroCounts = (): Counts => ({
  impressions: 0,
  clicks: 0,
  spend_micros: 0,
  conversions: 0,
  view_through_conversions: 0,
  conversion_value_micros: 0,
});

function addInto(total: Counts, c: Counts): void {
  for (const name of COUNT_NAMES) total[name] += c[name];
}

/** Uniform numbers in [0, 1) from a SHA-256 of `key`, eight of them. */
function uniforms(key: string): number[] {
  const digest = createHash('sha256').update(key).digest();
  return Array.from({ length: 8 }, (_, i) => digest.readUInt32BE(i * 4) / 2 ** 32);
}

/** An ad's size relative to the average ad, 0.5 to 1.5. */
export function adScale(adId: string): number {
  return 0.5 + (uniforms(`scale|${adId}`)[0] ?? 0);
}

/** cellCounts are one ad's counts on one full local day for one device and country. */
export function cellCounts(adId: string, scale: number, date: string, device: string, country: string) {
  const [u0 = 0, u1 = 0, u2 = 0, u3 = 0, u4 = 0, u5 = 0, u6 = 0] = uniforms(
    `${adId}|${date}|${device}|${country}`,
  );
  const weekday = isoWeekday(date) >= 6 ? 0.8 : 1;
  const weight = (DEVICE_WEIGHT[device] ?? 0) * (COUNTRY_WEIGHT[country] ?? 0);
  const impressions = Math.floor(DAILY_IMPRESSIONS * scale * weekday * weight * (0.75 + 0.5 * u0));
  const clicks = Math.floor(impressions * (0.004 + 0.026 * u1));
  const cpcMicros = 150_000 + Math.floor(1_350_000 * u2);
  // Adding a uniform before flooring rounds at random, so small cells still convert sometimes.
  const conversions = Math.floor(clicks * (0.01 + 0.09 * u3) + u4);
  const orderValueMicros = Math.round((15 + 105 * u6) * 1_000_000);
  return {
    impressions,
    clicks,
    spend_micros: clicks * cpcMicros,
    conversions,
    view_through_conversions: Math.floor(conversions * (0.1 + 0.2 * u5)),
    conversion_value_micros: conversions * orderValueMicros,
  };
}

/** The part of a day's counts delivered by `fraction` of the day. */
function partOfDay(c: Counts, fraction: number): Counts {
  const part = zeroCounts();
  for (const name of COUNT_NAMES) part[name] = Math.floor(c[name] * fraction);
  part.clicks = Math.min(part.clicks, part.impressions);
  part.conversions = Math.min(part.conversions, part.clicks);
  part.view_through_conversions = Math.min(part.view_through_conversions, part.conversions);
  return part;
}

const ratio = (n: number, d: number, digits: number): number | null =>
  d === 0 ? null : Number((n / d).toFixed(digits));
const micros = (n: number, d: number): number | null => (d === 0 ? null : Math.round(n / d));

/** metricValues returns every metric of summed counts; ratios with a zero denominator are null. */
export function metricValues(c: Counts): Record<Metric, number | null> {
  return {
    ...c,
    click_through_conversions: c.conversions - c.view_through_conversions,
    ctr: ratio(c.clicks, c.impressions, 6),
    cpc_micros: micros(c.spend_micros, c.clicks),
    cpm_micros: micros(c.spend_micros * 1000, c.impressions),
    conversion_rate: ratio(c.conversions, c.clicks, 6),
    cpa_micros: micros(c.spend_micros, c.conversions),
    roas: ratio(c.conversion_value_micros, c.spend_micros, 4),
  };
}

export const GRANULARITIES = ['none', 'daily', 'weekly', 'monthly'] as const;
export type Granularity = (typeof GRANULARITIES)[number];

/** An inclusive range of account-local dates, as requested (`label` is its `start..end`). */
export interface DateRange {
  label: string;
  start: string;
  end: string;
}

interface Bucket {
  start: string;
  end: string;
}

/** The periods `range` is split into: itself, its days, or its ISO weeks or months cut to it. */
export function buckets(range: DateRange, granularity: Granularity): Bucket[] {
  if (granularity === 'none') return [{ start: range.start, end: range.end }];
  const out: Bucket[] = [];
  let start = range.start;
  while (dayNumber(start) <= dayNumber(range.end)) {
    const next =
      granularity === 'daily'
        ? addDays(start, 1)
        : granularity === 'weekly'
          ? addDays(weekStart(start), 7)
          : monthStart(addDays(monthStart(start), 31));
    const end = dayNumber(next) - 1 > dayNumber(range.end) ? range.end : addDays(next, -1);
    out.push({ start, end });
    start = next;
  }
  return out;
}

/** An entity whose rows aggregate the given ads (one entity with an undefined id: all of them). */
export interface InsightEntity {
  id: string | undefined;
  adIds: string[];
}

export interface AggregateQuery {
  entities: InsightEntity[];
  ranges: DateRange[];
  granularity: Granularity;
  /** The segments rows are split by, in the order rows are grouped by. */
  segments: Segment[];
  today: LocalTime;
}

export interface AggregateRow {
  range: DateRange;
  dateStart: string;
  dateEnd: string;
  entityId: string | undefined;
  segmentValues: Partial<Record<Segment, string>>;
  /** Whether the period includes the current account-local day, whose numbers still grow. */
  preliminary: boolean;
  counts: Counts;
}

const SEGMENT_VALUES: Record<Segment, readonly string[]> = { device: DEVICES, country: COUNTRIES };

/** Every combination of the segments' values, in group order (the last segment varies fastest). */
function segmentCombinations(segments: Segment[]): Partial<Record<Segment, string>>[] {
  let combos: Partial<Record<Segment, string>>[] = [{}];
  for (const segment of segments) {
    combos = combos.flatMap((c) => SEGMENT_VALUES[segment].map((v) => ({ ...c, [segment]: v })));
  }
  return combos;
}

const comboKey = (segments: Segment[], values: Partial<Record<Segment, string>>): string =>
  segments.map((s) => values[s]).join('|');

/**
 * createCellSource returns one ad's per-cell counts of a day, computed once per request: ranges
 * and entities may overlap. Days after `today` have nothing; today has its elapsed share.
 */
function createCellSource(today: LocalTime) {
  const scales = new Map<string, number>();
  const days = new Map<string, { device: string; country: string; counts: Counts }[]>();
  const todayNumber = dayNumber(today.date);
  return (adId: string, date: string) => {
    const key = `${adId}|${date}`;
    let cells = days.get(key);
    if (cells !== undefined) return cells;
    cells = [];
    const n = dayNumber(date);
    if (n <= todayNumber) {
      let scale = scales.get(adId);
      if (scale === undefined) {
        scale = adScale(adId);
        scales.set(adId, scale);
      }
      for (const device of DEVICES) {
        for (const country of COUNTRIES) {
          const full = cellCounts(adId, scale, date, device, country);
          cells.push({
            device,
            country,
            counts: n === todayNumber ? partOfDay(full, today.dayFraction) : full,
          });
        }
      }
    }
    days.set(key, cells);
    return cells;
  };
}

/**
 * aggregate returns one row per range, period, entity and segment combination, in that order,
 * zero rows included; periods that start after the current local day are left out.
 */
export function aggregate(q: AggregateQuery): AggregateRow[] {
  const cellsOf = createCellSource(q.today);
  const todayNumber = dayNumber(q.today.date);
  const combos = segmentCombinations(q.segments);
  const rows: AggregateRow[] = [];
  for (const range of q.ranges) {
    for (const bucket of buckets(range, q.granularity)) {
      if (dayNumber(bucket.start) > todayNumber) continue;
      const preliminary = dayNumber(bucket.start) <= todayNumber && todayNumber <= dayNumber(bucket.end);
      for (const entity of q.entities) {
        const totals = new Map(combos.map((c) => [comboKey(q.segments, c), zeroCounts()]));
        for (let d = bucket.start; dayNumber(d) <= dayNumber(bucket.end); d = addDays(d, 1)) {
          for (const adId of entity.adIds) {
            for (const cell of cellsOf(adId, d)) {
              const total = totals.get(comboKey(q.segments, cell));
              if (total !== undefined) addInto(total, cell.counts);
            }
          }
        }
        for (const combo of combos) {
          rows.push({
            range,
            dateStart: bucket.start,
            dateEnd: bucket.end,
            entityId: entity.id,
            segmentValues: combo,
            preliminary,
            counts: totals.get(comboKey(q.segments, combo)) ?? zeroCounts(),
          });
        }
      }
    }
  }
  return rows;
}
