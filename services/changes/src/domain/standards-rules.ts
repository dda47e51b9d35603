/**
 * Account standards and spend guards, enforced on a change's operation body when it is prepared
 * and again before it is applied. Only the fields the change itself sets are checked (an update's
 * patch, a create's body, every operation of a bulk job): what the object already has is the
 * platform's and was checked, or not, when it was set.
 *
 * The body fields read, wherever they sit in the body (nested objects and arrays too):
 * - names: `name`, `campaign_name`, `ad_group_name`, `ad_name` (naming prefix);
 * - target URLs, where a click goes: `target_url`, `click_url`, `landing_page_url`,
 *   `destination_url`, `final_url` (allowed domains, UTM parameters);
 * - schedules: `start_time`, `end_time` (RFC 3339 instants, taken as the account-local date) and
 *   `start_date`, `end_date` (account-local dates) (operating window);
 * - daily budget: `budget_micros` unless its object's `budget_type` is `lifetime`, and
 *   `daily_budget_micros` (spend guard);
 * - bid: `max_bid_micros` and `bid_micros` (spend guard).
 *
 * And, when a standard is saved, the rules of it that contradict another standard of the account
 * (standardContradictions), judged by the same matching as enforcement.
 */
import { Temporal } from 'temporal-polyfill';

/** A standard's data, as stored (the proto JSON form of StandardData). */
export type StandardData = Record<string, unknown>;

export interface Standard {
  standardId: string;
  name: string;
  revision: number;
  data: StandardData;
}

/** A workspace's spend caps for the account, in micros; null for none. */
export interface SpendCaps {
  maxDailyBudgetMicros: bigint | null;
  maxBidMicros: bigint | null;
}

export interface CheckMoment {
  /** The account-local date the change is prepared or applied on (YYYY-MM-DD). */
  today: string;
  timeZone: string;
  /**
   * The change only stops serving (a pause or an archive): it is allowed outside the operating
   * window, so spending can always be stopped.
   */
  stopsServing: boolean;
}

export const NAME_FIELDS = ['name', 'campaign_name', 'ad_group_name', 'ad_name'] as const;
export const URL_FIELDS = [
  'target_url',
  'click_url',
  'landing_page_url',
  'destination_url',
  'final_url',
] as const;
export const INSTANT_FIELDS = ['start_time', 'end_time'] as const;
export const DATE_FIELDS = ['start_date', 'end_date'] as const;
export const BUDGET_FIELDS = ['budget_micros', 'daily_budget_micros'] as const;
export const BID_FIELDS = ['max_bid_micros', 'bid_micros'] as const;
export const UTM_KEYS = ['utm_source', 'utm_medium', 'utm_campaign', 'utm_content', 'utm_term'] as const;

/** Bodies are validated by the tools' schemas; this bounds the walk whatever they hold. */
const MAX_DEPTH = 32;

interface Field {
  path: string;
  key: string;
  value: unknown;
  /** The object the field is in. */
  parent: Record<string, unknown>;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Every field of `value`, depth first, with its path (`body.operations[0].body.name`). */
export function fieldsOf(value: unknown, path = 'body', depth = 0): Field[] {
  if (depth > MAX_DEPTH) return [];
  if (Array.isArray(value)) return value.flatMap((v, i) => fieldsOf(v, `${path}[${i}]`, depth + 1));
  if (!isObject(value)) return [];
  return Object.entries(value).flatMap(([key, v]) => [
    { path: `${path}.${key}`, key, value: v, parent: value },
    ...fieldsOf(v, `${path}.${key}`, depth + 1),
  ]);
}

const among = (list: readonly string[], key: string) => list.includes(key);
const text = (v: unknown) => (typeof v === 'string' ? v : undefined);
/** Whose rule a message states; the message itself says which rule ("must start with", "must link to"). */
const by = (s: Standard) => `(standard ${s.name})`;

function namingViolations(fields: Field[], s: Standard): string[] {
  const prefix = text(s.data.naming_prefix);
  if (prefix === undefined || prefix === '') return [];
  return fields
    .filter((f) => among(NAME_FIELDS, f.key) && typeof f.value === 'string' && !f.value.startsWith(prefix))
    .map((f) => `${f.path} must start with ${prefix} ${by(s)}`);
}

/** Whether `host` is `domain` or one of its subdomains. */
function within(host: string, domain: string): boolean {
  const d = domain.toLowerCase();
  return host === d || host.endsWith(`.${d}`);
}

function urlViolations(fields: Field[], s: Standard): string[] {
  const domains = Array.isArray(s.data.allowed_domains) ? s.data.allowed_domains.map(String) : [];
  const utm = isObject(s.data.utm) ? s.data.utm : {};
  const required = UTM_KEYS.flatMap((k) =>
    typeof utm[k] === 'string' ? [[k, utm[k] as string] as const] : [],
  );
  if (domains.length === 0 && required.length === 0) return [];
  const out: string[] = [];
  for (const f of fields.filter((x) => among(URL_FIELDS, x.key) && typeof x.value === 'string')) {
    const url = URL.canParse(f.value as string) ? new URL(f.value as string) : undefined;
    if (url === undefined || url.hostname === '') {
      out.push(`${f.path} must be an absolute URL whose domain can be checked ${by(s)}`);
      continue;
    }
    const host = url.hostname.toLowerCase();
    if (domains.length > 0 && !domains.some((d) => within(host, d))) {
      out.push(`${f.path} must link to an allowed domain (${domains.join(', ')}), not ${host} ${by(s)}`);
    }
    for (const [key, want] of required) {
      const got = url.searchParams.getAll(key);
      if (got.length !== 1 || got[0] !== want) {
        out.push(
          `${f.path} must carry ${key}=${want} in its query (${got.length === 0 ? 'it has none' : `it has ${got.map((g) => `${key}=${g}`).join(', ')}`}) ${by(s)}`,
        );
      }
    }
  }
  return out;
}

/** The account-local date of a schedule field, or undefined when it is not one. */
function localDate(f: Field, timeZone: string): string | undefined {
  if (typeof f.value !== 'string') return undefined;
  try {
    if (among(DATE_FIELDS, f.key)) return Temporal.PlainDate.from(f.value, { overflow: 'reject' }).toString();
    return Temporal.Instant.from(f.value).toZonedDateTimeISO(timeZone).toPlainDate().toString();
  } catch {
    return undefined;
  }
}

function windowText(start: string | undefined, end: string | undefined): string {
  if (start !== undefined && end !== undefined) return `${start} to ${end}`;
  return start !== undefined ? `from ${start}` : `until ${end}`;
}

function windowViolations(fields: Field[], s: Standard, at: CheckMoment): string[] {
  const start = text(s.data.operating_start);
  const end = text(s.data.operating_end);
  if (start === undefined && end === undefined) return [];
  const outside = (d: string) => (start !== undefined && d < start) || (end !== undefined && d > end);
  const window = `the operating window ${windowText(start, end)}`;
  const out: string[] = [];
  if (!at.stopsServing && outside(at.today)) {
    out.push(
      `today (${at.today} in ${at.timeZone}) is outside ${window}: no change but a pause or an archive may be made now ${by(s)}`,
    );
  }
  for (const f of fields.filter((x) => among(INSTANT_FIELDS, x.key) || among(DATE_FIELDS, x.key))) {
    if (f.value === null || f.value === undefined) continue;
    const date = localDate(f, at.timeZone);
    if (date === undefined) {
      out.push(`${f.path} must be a date or an RFC 3339 time to be checked against ${window} ${by(s)}`);
    } else if (outside(date)) {
      out.push(`${f.path} ${String(f.value)} (${date} in ${at.timeZone}) must lie within ${window} ${by(s)}`);
    }
  }
  return out;
}

/** Micros as an exact integer, or undefined when the value is not an integer. */
function micros(v: unknown): bigint | undefined {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return BigInt(v);
  if (typeof v === 'string' && /^-?\d{1,20}$/.test(v)) return BigInt(v);
  return undefined;
}

function capViolations(fields: Field[], caps: SpendCaps): string[] {
  const out: string[] = [];
  const check = (f: Field, cap: bigint | null, what: string) => {
    const amount = micros(f.value);
    if (cap !== null && amount !== undefined && amount > cap) {
      out.push(`${f.path} ${amount} exceeds this account's ${what} cap ${cap} (spend guard)`);
    }
  };
  for (const f of fields) {
    const daily =
      f.key === 'daily_budget_micros' || (f.key === 'budget_micros' && f.parent.budget_type !== 'lifetime');
    if (daily) check(f, caps.maxDailyBudgetMicros, 'daily budget');
    if (among(BID_FIELDS, f.key)) check(f, caps.maxBidMicros, 'bid');
  }
  return out;
}

/**
 * The bids a custom audience's multiplier makes above the bid cap: a bid of 1.9 units times 10x
 * is a bid of 19 for that audience. `result` is what the operation leaves in the fields it sets
 * (the live object's other bidding fields merged in), so a multiplier raised alone is held against
 * the bid the ad group keeps, and a bid raised alone against the multipliers it keeps.
 */
function multipliedBidViolations(result: Record<string, unknown>, cap: bigint | null): string[] {
  if (cap === null) return [];
  const out: string[] = [];
  // Every bidding_config the operation sets: an ad group's, or each of a bulk job's.
  for (const f of fieldsOf(result).filter((x) => x.key === 'bidding_config')) {
    const bidding = f.value;
    if (!isObject(bidding)) continue;
    const bid = micros(bidding.max_bid_micros) ?? micros(bidding.bid_micros);
    const list = bidding.custom_audience_bid_multipliers;
    if (bid === undefined || !Array.isArray(list)) continue;
    list.forEach((m, i) => {
      const multiplier = isObject(m) ? micros(m.bid_multiplier_micros) : undefined;
      if (multiplier === undefined || bid * multiplier <= cap * 1_000_000n) return;
      const audience = isObject(m) ? String(m.custom_audience_id) : '';
      out.push(
        `${f.path}.custom_audience_bid_multipliers[${i}]: the bid ${bid} times custom audience ${audience}'s multiplier ${multiplier} (micros) is ${(bid * multiplier) / 1_000_000n} micros, above this account's bid cap ${cap} (spend guard)`,
      );
    });
  }
  return out;
}

/**
 * standardViolations says every way the operation body breaks the account's spend guard and its
 * standards (each message naming the field, the standard and the rule); empty when it keeps them.
 * `result` is the object as the operation would leave it in the fields the body sets (plan.ts's
 * reviewedResult), for the rules that need more than the body.
 */
export function standardViolations(
  body: Record<string, unknown>,
  standards: readonly Standard[],
  caps: SpendCaps,
  at: CheckMoment,
  result?: Record<string, unknown>,
): string[] {
  const fields = fieldsOf(body);
  return [
    ...capViolations(fields, caps),
    ...multipliedBidViolations(result ?? body, caps.maxBidMicros),
    ...standards.flatMap((s) => [
      ...namingViolations(fields, s),
      ...urlViolations(fields, s),
      ...windowViolations(fields, s, at),
    ]),
  ];
}

/**
 * Whether an operation only stops serving: a pause or an archive (`/ad_groups/ag_1/pause`), or an
 * update whose body sets nothing but a status of paused or archived.
 */
export function stopsServing(path: string, body: Record<string, unknown> = {}): boolean {
  if (/\/(pause|archive)$/.test(path)) return true;
  const keys = Object.keys(body);
  return (
    keys.length === 1 && keys[0] === 'status' && (body.status === 'paused' || body.status === 'archived')
  );
}

/** A standard's operating window, or undefined when it sets neither end. */
function windowOf(data: StandardData): { start?: string; end?: string } | undefined {
  const start = text(data.operating_start);
  const end = text(data.operating_end);
  if (start === undefined && end === undefined) return undefined;
  return { start, end };
}

/** Whether some hostname is allowed by both lists, by the rule enforcement uses (a domain or its subdomains). */
function domainsMeet(mine: readonly string[], theirs: readonly string[]): boolean {
  // A hostname within both is within the longer of two domains, which must then be within the shorter.
  return mine.some((a) => theirs.some((b) => within(a.toLowerCase(), b) || within(b.toLowerCase(), a)));
}

const quoted = (v: unknown) => JSON.stringify(v);
const domainList = (data: StandardData) =>
  Array.isArray(data.allowed_domains) ? data.allowed_domains.map(String) : [];
const utmOf = (data: StandardData) => (isObject(data.utm) ? data.utm : {});

/** The rules of `data` no change could keep together with those of `other`, each as a contradiction. */
function contradictionsWith(data: StandardData, other: Standard): string[] {
  const theirs = other.data;
  const out: string[] = [];
  const say = (field: string, mine: string, whose: string, why: string) =>
    out.push(
      `\`data.${field}\` ${mine} contradicts standard ${quoted(other.name)} (${other.standardId}), whose ${whose}: ${why}; archive or change one of them`,
    );

  const prefix = text(data.naming_prefix);
  const otherPrefix = text(theirs.naming_prefix);
  // Prefixes are compared as enforced: case-sensitive, and an empty one is no rule.
  if (prefix && otherPrefix && !prefix.startsWith(otherPrefix) && !otherPrefix.startsWith(prefix)) {
    say(
      'naming_prefix',
      quoted(prefix),
      `naming_prefix is ${quoted(otherPrefix)}`,
      'no name can start with both',
    );
  }

  const domains = domainList(data);
  const otherDomains = domainList(theirs);
  if (domains.length > 0 && otherDomains.length > 0 && !domainsMeet(domains, otherDomains)) {
    say(
      'allowed_domains',
      quoted(domains),
      `allowed_domains are ${quoted(otherDomains)}`,
      'no target URL can link to a domain allowed by both (a subdomain is within its domain)',
    );
  }

  const utm = utmOf(data);
  const otherUtm = utmOf(theirs);
  for (const key of UTM_KEYS) {
    const want = utm[key];
    const otherWant = otherUtm[key];
    if (typeof want === 'string' && typeof otherWant === 'string' && want !== otherWant) {
      say(
        `utm.${key}`,
        quoted(want),
        `${key} is ${quoted(otherWant)}`,
        `a target URL must carry ${key} exactly once, so it cannot carry both values`,
      );
    }
  }

  const window = windowOf(data);
  const otherWindow = windowOf(theirs);
  if (window !== undefined && otherWindow !== undefined) {
    // Both ends are days of a window: enforcement refuses only a day before the start or after the end.
    const whose = `operating window is ${windowText(otherWindow.start, otherWindow.end)}`;
    const why = `this window, ${windowText(window.start, window.end)}, shares no day with it`;
    if (window.start !== undefined && otherWindow.end !== undefined && window.start > otherWindow.end) {
      say('operating_start', quoted(window.start), whose, why);
    } else if (
      window.end !== undefined &&
      otherWindow.start !== undefined &&
      window.end < otherWindow.start
    ) {
      say('operating_end', quoted(window.end), whose, why);
    }
  }
  return out;
}

/**
 * standardContradictions says every rule of a standard's `data` that contradicts one of `others`
 * (the account's other active standards): every standard applies to every change, so once both
 * were saved no change setting that field could be prepared. Each message
 * names the field of `data`, the other standard and why no value can keep both; empty when none.
 * The rules are judged exactly as they are enforced: a prefix is case-sensitive and a name keeps
 * two when one prefix starts with the other; allowed domains meet when a hostname is within a
 * domain of each (the domain itself or a subdomain, in any case); a UTM value must be the same
 * string; operating windows must share a day, both ends included.
 */
export function standardContradictions(data: StandardData, others: readonly Standard[]): string[] {
  return others.flatMap((other) => contradictionsWith(data, other));
}
