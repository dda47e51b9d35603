/**
 * A performance report's figures: each ad's counts over the period and the preceding one, the
 * figures derived from them, and the change between the periods. All arithmetic is on integers
 * (BigInt) and every figure is an exact decimal string, never a binary float; rounding is half
 * away from zero at a fixed number of decimals, said per figure. An unknown figure is null, and
 * anything computed from an unknown figure is null too, never 0.
 */
import { InvalidArgumentError } from '@adsmcp/runtime/errors';

export const COUNT_NAMES = ['impressions', 'clicks', 'spend_micros', 'conversions'] as const;
export type CountName = (typeof COUNT_NAMES)[number];
export const METRIC_NAMES = [...COUNT_NAMES, 'ctr', 'cpc_micros', 'cpa_micros'] as const;
export type MetricName = (typeof METRIC_NAMES)[number];

/** Decimals of each figure: ctr is a fraction to 6 decimals, money whole micros, counts whole. */
const SCALE: Record<MetricName, number> = {
  impressions: 0,
  clicks: 0,
  spend_micros: 0,
  conversions: 0,
  ctr: 6,
  cpc_micros: 0,
  cpa_micros: 0,
};
/** Decimals of a relative change (a fraction: 0.25 is +25%). */
const RELATIVE_SCALE = 4;
/** The most ads one report holds. */
export const MAX_REPORT_ADS = 2000;

/** An exact decimal string, or null when unknown. */
export type Figure = string | null;
export type Metrics = Record<MetricName, Figure>;

export interface Comparison {
  current: Metrics;
  previous: Metrics;
  absolute_change: Metrics;
  relative_change: Metrics;
}

export interface CreativeLabel {
  item_id: string;
  name: string;
  hook: string;
  offer: string;
}

export interface ReportRow {
  ad_id: string;
  ad_name: string;
  ad_group_id: string;
  ad_group_name: string;
  campaign_id: string;
  creative_labels: CreativeLabel[];
  platform: Comparison;
  /** Absent in reports stored before imports were joined. */
  imported?: ImportedMetrics;
}

/** One ad's counts over one period as the platform gave them (undefined: not given). */
export interface AdCounts {
  adId: string;
  adName: string;
  adGroupId: string;
  adGroupName: string;
  campaignId: string;
  counts: Record<CountName, bigint | undefined>;
}

type Counts = Record<CountName, bigint | null>;

/** n / d rounded half away from zero to an integer; d is not 0. */
function roundDiv(n: bigint, d: bigint): bigint {
  const negative = n < 0n !== d < 0n;
  const a = n < 0n ? -n : n;
  const b = d < 0n ? -d : d;
  const q = (2n * a + b) / (2n * b);
  return negative ? -q : q;
}

/** The decimal text of `units` / 10^scale. */
export function decimalText(units: bigint, scale: number): string {
  if (scale === 0) return units.toString();
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString().padStart(scale + 1, '0');
  return `${negative ? '-' : ''}${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}

/** The figure's value in units of its scale (the inverse of decimalText for its own figures). */
function unitsOf(figure: string, scale: number): bigint {
  const [whole = '0', fraction = ''] = figure.split('.');
  // "-0.001234" is BigInt("-0001234"): the sign stays with the digits.
  return BigInt(whole + fraction.padEnd(scale, '0'));
}

/** n / d to `scale` decimals, or null when either is unknown or d is 0. */
function ratio(n: bigint | null, d: bigint | null, scale: number): Figure {
  if (n === null || d === null || d === 0n) return null;
  return decimalText(roundDiv(n * 10n ** BigInt(scale), d), scale);
}

/** The counts and the figures derived from them. */
export function metricsOf(c: Counts): Metrics {
  const text = (v: bigint | null) => (v === null ? null : v.toString());
  return {
    impressions: text(c.impressions),
    clicks: text(c.clicks),
    spend_micros: text(c.spend_micros),
    conversions: text(c.conversions),
    ctr: ratio(c.clicks, c.impressions, SCALE.ctr),
    cpc_micros: ratio(c.spend_micros, c.clicks, SCALE.cpc_micros),
    cpa_micros: ratio(c.spend_micros, c.conversions, SCALE.cpa_micros),
  };
}

/**
 * compareMetrics is the change from `previous` to `current`, figure by figure, computed on the
 * figures as shown (so absolute_change is exactly current - previous of what the report says).
 */
export function compareMetrics(current: Metrics, previous: Metrics): Comparison {
  const absolute = {} as Metrics;
  const relative = {} as Metrics;
  for (const name of METRIC_NAMES) {
    const scale = SCALE[name];
    const c = current[name];
    const p = previous[name];
    if (c === null || p === null) {
      absolute[name] = null;
      relative[name] = null;
      continue;
    }
    const diff = unitsOf(c, scale) - unitsOf(p, scale);
    absolute[name] = decimalText(diff, scale);
    relative[name] = ratio(diff, unitsOf(p, scale), RELATIVE_SCALE);
  }
  return { current, previous, absolute_change: absolute, relative_change: relative };
}

const unknownCounts = (): Counts => ({
  impressions: null,
  clicks: null,
  spend_micros: null,
  conversions: null,
});

function countsOf(ad: AdCounts | undefined): Counts {
  if (ad === undefined) return unknownCounts();
  const out = unknownCounts();
  for (const name of COUNT_NAMES) out[name] = ad.counts[name] ?? null;
  return out;
}

/** The sum of every ad's count; unknown when any ad's is. */
function sumCounts(all: Counts[]): Counts {
  const total: Counts = { impressions: 0n, clicks: 0n, spend_micros: 0n, conversions: 0n };
  for (const c of all) {
    for (const name of COUNT_NAMES) {
      const t = total[name];
      const v = c[name];
      total[name] = t === null || v === null ? null : t + v;
    }
  }
  return total;
}

function byAdId(field: string, ads: readonly AdCounts[]): Map<string, AdCounts> {
  if (ads.length > MAX_REPORT_ADS) {
    throw new InvalidArgumentError(
      `${field} has ${ads.length} ads; a report holds at most ${MAX_REPORT_ADS}`,
    );
  }
  const map = new Map<string, AdCounts>();
  for (const [i, ad] of ads.entries()) {
    if (ad.adId === '') throw new InvalidArgumentError(`${field}.${i}.ad_id must not be empty`);
    if (map.has(ad.adId)) throw new InvalidArgumentError(`${field}.${i}.ad_id ${ad.adId} is listed twice`);
    for (const name of COUNT_NAMES) {
      const v = ad.counts[name];
      if (v !== undefined && v < 0n)
        throw new InvalidArgumentError(`${field}.${i}.${name} must not be negative`);
    }
    map.set(ad.adId, ad);
  }
  return map;
}

export interface ReportFigures {
  rows: ReportRow[];
  totals: Comparison;
}

/**
 * reportFigures compares every ad found in either period (an ad missing from one period has
 * unknown counts there), with its creative labels, ordered by ad group then ad id.
 */
export function reportFigures(
  current: readonly AdCounts[],
  previous: readonly AdCounts[],
  labelsOf: (adId: string) => CreativeLabel[],
  importedOf?: (adId: string) => ImportedMetrics,
): ReportFigures {
  const now = byAdId('current', current);
  const before = byAdId('previous', previous);
  const ids = [...new Set([...now.keys(), ...before.keys()])];
  if (ids.length > MAX_REPORT_ADS) {
    throw new InvalidArgumentError(
      `the periods have ${ids.length} ads; a report holds at most ${MAX_REPORT_ADS}`,
    );
  }
  const rows = ids.map((adId) => {
    const ad = (now.get(adId) ?? before.get(adId)) as AdCounts;
    return {
      ad_id: adId,
      ad_name: ad.adName,
      ad_group_id: ad.adGroupId,
      ad_group_name: ad.adGroupName,
      campaign_id: ad.campaignId,
      creative_labels: labelsOf(adId),
      platform: compareMetrics(metricsOf(countsOf(now.get(adId))), metricsOf(countsOf(before.get(adId)))),
      ...(importedOf === undefined ? {} : { imported: importedOf(adId) }),
    };
  });
  rows.sort((a, b) => compareText(a.ad_group_id, b.ad_group_id) || compareText(a.ad_id, b.ad_id));
  const totals = compareMetrics(
    metricsOf(sumCounts(ids.map((id) => countsOf(now.get(id))))),
    metricsOf(sumCounts(ids.map((id) => countsOf(before.get(id))))),
  );
  return { rows, totals };
}

const compareText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

export const IMPORTED_METRIC_NAMES = ['impressions', 'clicks', 'spend', 'conversions', 'revenue'] as const;
export type ImportedMetricName = (typeof IMPORTED_METRIC_NAMES)[number];

/** Imported rows summed over one period in one currency (proto ImportedFigures, as JSON). */
export type ImportedFigures = Record<ImportedMetricName, Figure> & {
  row_count: number;
  import_ids: string[];
  partial_import_ids: string[];
};

export interface ImportedComparison {
  currency: string;
  current: ImportedFigures;
  previous: ImportedFigures;
}

export interface ImportedMetrics {
  account_currency: ImportedComparison;
  other_currencies: ImportedComparison[];
}

/** One ad's imported sums over one period in one currency, as the import store reads them. */
export interface ImportedSum extends Record<ImportedMetricName, Figure> {
  period: 'current' | 'previous';
  currency: string;
  ad_id: string;
  row_count: number;
  import_ids: string[];
  partial_import_ids: string[];
}

const noImportedFigures = (): ImportedFigures => ({
  impressions: null,
  clicks: null,
  spend: null,
  conversions: null,
  revenue: null,
  row_count: 0,
  import_ids: [],
  partial_import_ids: [],
});

const emptyComparison = (currency: string): ImportedComparison => ({
  currency,
  current: noImportedFigures(),
  previous: noImportedFigures(),
});

function figuresOf(s: ImportedSum): ImportedFigures {
  return {
    impressions: s.impressions,
    clicks: s.clicks,
    spend: s.spend,
    conversions: s.conversions,
    revenue: s.revenue,
    row_count: s.row_count,
    import_ids: s.import_ids,
    partial_import_ids: s.partial_import_ids,
  };
}

/** Comparisons by currency: the account's first (always there), then the others by code. */
function byCurrency(
  accountCurrency: string,
  entries: readonly { currency: string; period: 'current' | 'previous'; figures: ImportedFigures }[],
): ImportedMetrics {
  const map = new Map<string, ImportedComparison>([[accountCurrency, emptyComparison(accountCurrency)]]);
  for (const e of entries) {
    const c = map.get(e.currency) ?? emptyComparison(e.currency);
    c[e.period] = e.figures;
    map.set(e.currency, c);
  }
  const others = [...map.values()].filter((c) => c.currency !== accountCurrency);
  others.sort((a, b) => compareText(a.currency, b.currency));
  return { account_currency: map.get(accountCurrency) as ImportedComparison, other_currencies: others };
}

/**
 * importedByAd groups the store's sums into each ad's imported metrics: the account's currency
 * apart from any other (never converted); an ad no import names gets empty figures.
 */
export function importedByAd(
  sums: readonly ImportedSum[],
  accountCurrency: string,
): (adId: string) => ImportedMetrics {
  const byAd = new Map<string, ImportedSum[]>();
  for (const s of sums) byAd.set(s.ad_id, [...(byAd.get(s.ad_id) ?? []), s]);
  return (adId) =>
    byCurrency(
      accountCurrency,
      (byAd.get(adId) ?? []).map((s) => ({ currency: s.currency, period: s.period, figures: figuresOf(s) })),
    );
}

/** The scale and units of an exact decimal string ("12.50" is 1250 at scale 2). */
function parseDecimal(text: string): { units: bigint; scale: number } {
  const [whole = '0', fraction = ''] = text.split('.');
  return { units: BigInt(whole + fraction), scale: fraction.length };
}

/** a + b of two exact decimal strings, kept at the larger scale (no rounding). */
export function addDecimals(a: string, b: string): string {
  const x = parseDecimal(a);
  const y = parseDecimal(b);
  const scale = Math.max(x.scale, y.scale);
  const units = x.units * 10n ** BigInt(scale - x.scale) + y.units * 10n ** BigInt(scale - y.scale);
  return decimalText(units, scale);
}

const union = (a: readonly string[], b: readonly string[]) => [...new Set([...a, ...b])].sort(compareText);

/**
 * The sum of the figures of several ads: the rows add up, and a metric is unknown when any ad
 * with summed rows did not know it (the same as summing every row), or when no row was summed.
 */
function sumImported(all: readonly ImportedFigures[]): ImportedFigures {
  const total = noImportedFigures();
  const summed = all.filter((f) => f.row_count > 0);
  for (const name of IMPORTED_METRIC_NAMES) {
    let sum: Figure = summed.length === 0 ? null : '0';
    for (const f of summed) {
      const v = f[name];
      sum = sum === null || v === null ? null : addDecimals(sum, v);
    }
    total[name] = sum;
  }
  for (const f of all) {
    total.row_count += f.row_count;
    total.import_ids = union(total.import_ids, f.import_ids);
    total.partial_import_ids = union(total.partial_import_ids, f.partial_import_ids);
  }
  // An import lying within the period for some ads cannot be partial for others (the rule is by
  // the import's dates), so the two lists stay apart.
  return total;
}

/**
 * importedTotals sums the rows' imported metrics per currency, or is undefined when the rows carry
 * none (a report stored before imports were joined).
 */
export function importedTotals(
  rows: readonly ReportRow[],
  accountCurrency: string,
): ImportedMetrics | undefined {
  const all = rows.flatMap((r) => (r.imported === undefined ? [] : [r.imported]));
  if (all.length === 0 && rows.length > 0) return undefined;
  const comparisons = all.flatMap((m) => [m.account_currency, ...m.other_currencies]);
  const currencies = [...new Set([accountCurrency, ...comparisons.map((c) => c.currency)])];
  const entries = currencies.flatMap((currency) => {
    const mine = comparisons.filter((c) => c.currency === currency);
    return (['current', 'previous'] as const).map((period) => ({
      currency,
      period,
      figures: sumImported(mine.map((c) => c[period])),
    }));
  });
  return byCurrency(accountCurrency, entries);
}
