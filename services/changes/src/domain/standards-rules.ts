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
 * - bid: `max_bid_micros` and `bid_micros` (spend guard), per click or per thousand impressions:
 *   an impression bid (its object's `billing_event_type` `impression`) is per single impression in
 *   the single wire format and per thousand impressions (a CPM) in a bulk job, so a single one is
 *   held to the cap as its CPM (micros × 1000).
 *
 * And, when a standard is saved, the rules of it that contradict another standard of the account
 * (standardContradictions), judged by the same matching as enforcement.
 */
import { asciiHost, describeHost, readHost, skeleton } from '@adsmcp/runtime/url-host';
import { Temporal } from 'temporal-polyfill';
import type { WireFormat } from './money.ts';

/** A standard's data, as stored (the proto JSON form of StandardData). */
export type StandardData = Record<string, unknown>;

export interface Standard {
  standardId: string;
  name: string;
  revision: number;
  data: StandardData;
}

/** A standard a change was checked against, as recorded on the change. */
export interface CheckedStandard {
  standard_id: string;
  name: string;
  revision: number;
  guidance: string;
}

/** How a change records that `s` was checked: the standard at its revision, with its guidance. */
export function checkedStandard(s: Standard): CheckedStandard {
  return {
    standard_id: s.standardId,
    name: s.name,
    revision: s.revision,
    guidance: typeof s.data.guidance === 'string' ? s.data.guidance : '',
  };
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
  /**
   * The wire format of the operation: `bulk` for a bulk mutation job, whose impression bids are per
   * thousand impressions, `single` for any other, whose impression bids are per impression.
   */
  wireFormat: WireFormat;
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
const quoted = (v: unknown) => JSON.stringify(v);
const domainList = (data: StandardData) =>
  Array.isArray(data.allowed_domains) ? data.allowed_domains.map(String) : [];
/** Whose rule a message states; the message itself says which rule ("must start with", "must link to"). */
const by = (s: Standard) => `(standard ${s.name})`;

function namingViolations(fields: Field[], s: Standard): string[] {
  const prefix = text(s.data.naming_prefix);
  if (prefix === undefined || prefix === '') return [];
  return fields
    .filter((f) => among(NAME_FIELDS, f.key) && typeof f.value === 'string' && !f.value.startsWith(prefix))
    .map((f) => `${f.path} must start with ${prefix} ${by(s)}`);
}

/**
 * A host or an allowed domain in the one form they are compared in: ASCII, each Unicode label its
 * IDNA A-label (`bücher.example` is `xn--bcher-kva.example`), lowercase; so an allowed domain
 * written in Unicode allows its A-label and one written as its A-label allows the Unicode host.
 */
const asAscii = (host: string) => asciiHost(host) ?? host.toLowerCase();

/** Whether `host` is `domain` or one of its subdomains, both compared in ASCII form. */
function within(host: string, domain: string): boolean {
  const h = asAscii(host);
  const d = asAscii(domain);
  return h === d || h.endsWith(`.${d}`);
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
    // The URL parser gives the host in ASCII form already (a Unicode label as its A-label).
    const host = url.hostname.toLowerCase();
    if (domains.length > 0 && !domains.some((d) => within(host, d))) {
      out.push(
        `${f.path} must link to an allowed domain (${domains.map(asAscii).join(', ')}), not ${describeHost(host)} ${by(s)}`,
      );
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

/** Said of the bid cap when it holds an impression bid, as the unit it is compared in. */
const PER_THOUSAND = 'spend guard; impression bids are held to it per thousand impressions';

/**
 * A bid as the bid cap holds it: a click bid (or one of no billing event) as it is; an impression
 * bid per thousand impressions, as the cap is a CPC or a CPM, two amounts of the same magnitude. In
 * the single wire format an impression bid is per impression, so it counts as its CPM
 * (micros × 1000); in a bulk job it is already a CPM.
 */
function heldBid(amount: bigint, billing: unknown, format: WireFormat) {
  if (billing !== 'impression') return { compared: amount, per: '', impression: false };
  return format === 'single'
    ? { compared: amount * 1000n, per: ' per impression', impression: true }
    : { compared: amount, per: ' per thousand impressions', impression: true };
}

/** The parent path of a field's path (`body.bidding_config` of `body.bidding_config.max_bid_micros`). */
const parentPath = (f: Field) => f.path.slice(0, -(f.key.length + 1));

/**
 * The objects of the result by path (`body.bidding_config`), to find what an update keeps: the
 * billing event type of a bid set alone, the bid of a billing event type set alone.
 */
function objectsByPath(result: Record<string, unknown>): Map<string, Record<string, unknown>> {
  const out = new Map<string, Record<string, unknown>>([['body', result]]);
  for (const f of fieldsOf(result)) if (isObject(f.value)) out.set(f.path, f.value);
  return out;
}

function bidCapMessage(path: string, amount: bigint, billing: unknown, cap: bigint, at: CheckMoment) {
  const held = heldBid(amount, billing, at.wireFormat);
  if (held.compared <= cap) return undefined;
  if (!held.impression) return `${path} ${amount} exceeds this account's bid cap ${cap} (spend guard)`;
  if (at.wireFormat === 'bulk') {
    return `${path} ${amount} per thousand impressions (a CPM) exceeds this account's bid cap ${cap} (${PER_THOUSAND})`;
  }
  return `${path} ${amount} per impression is a CPM of ${held.compared} micros, above this account's bid cap ${cap} (${PER_THOUSAND})`;
}

function bidCapViolations(
  fields: Field[],
  kept: Map<string, Record<string, unknown>>,
  cap: bigint,
  at: CheckMoment,
): string[] {
  return fields.flatMap((f) => {
    const amount = micros(f.value);
    if (!among(BID_FIELDS, f.key) || amount === undefined) return [];
    // The billing event type the bid is paid by: set beside it, or kept by the object.
    const billing = f.parent.billing_event_type ?? kept.get(parentPath(f))?.billing_event_type;
    return bidCapMessage(f.path, amount, billing, cap, at) ?? [];
  });
}

/**
 * A change to impression billing alone, in the single wire format, makes the bid the object keeps
 * a bid per impression: it is held to the cap as its CPM like a bid the change sets.
 */
function billingSwitchViolations(
  fields: Field[],
  kept: Map<string, Record<string, unknown>>,
  cap: bigint,
  at: CheckMoment,
): string[] {
  if (at.wireFormat !== 'single') return [];
  return fields.flatMap((f) => {
    if (f.key !== 'billing_event_type' || f.value !== 'impression') return [];
    if (BID_FIELDS.some((k) => k in f.parent)) return [];
    const object = kept.get(parentPath(f)) ?? {};
    const key = BID_FIELDS.find((k) => micros(object[k]) !== undefined);
    const bid = key === undefined ? undefined : micros(object[key]);
    if (bid === undefined || bid * 1000n <= cap) return [];
    return [
      `${f.path} impression makes the ${key} ${bid} it keeps a bid per impression, a CPM of ${bid * 1000n} micros, above this account's bid cap ${cap} (${PER_THOUSAND})`,
    ];
  });
}

function budgetCapViolations(fields: Field[], cap: bigint | null): string[] {
  if (cap === null) return [];
  return fields.flatMap((f) => {
    const daily =
      f.key === 'daily_budget_micros' || (f.key === 'budget_micros' && f.parent.budget_type !== 'lifetime');
    const amount = micros(f.value);
    return daily && amount !== undefined && amount > cap
      ? [`${f.path} ${amount} exceeds this account's daily budget cap ${cap} (spend guard)`]
      : [];
  });
}

/**
 * The bids a custom audience's multiplier makes above the bid cap: a bid of 1.9 units times 10x
 * is a bid of 19 for that audience, held to the cap in the unit the bid is (per click, or per
 * thousand impressions). `result` is what the operation leaves in the fields it sets (the live
 * object's other bidding fields merged in), so a multiplier raised alone is held against the bid
 * the ad group keeps, and a bid raised alone against the multipliers it keeps.
 */
function multipliedBidViolations(result: Record<string, unknown>, cap: bigint, at: CheckMoment): string[] {
  const out: string[] = [];
  // Every bidding_config the operation sets: an ad group's, or each of a bulk job's.
  for (const f of fieldsOf(result).filter((x) => x.key === 'bidding_config')) {
    const bidding = f.value;
    if (!isObject(bidding)) continue;
    const bid = micros(bidding.max_bid_micros) ?? micros(bidding.bid_micros);
    const list = bidding.custom_audience_bid_multipliers;
    if (bid === undefined || !Array.isArray(list)) continue;
    const held = heldBid(bid, bidding.billing_event_type, at.wireFormat);
    list.forEach((m, i) => {
      const multiplier = isObject(m) ? micros(m.bid_multiplier_micros) : undefined;
      if (multiplier === undefined || held.compared * multiplier <= cap * 1_000_000n) return;
      const audience = isObject(m) ? String(m.custom_audience_id) : '';
      const product = (held.compared * multiplier) / 1_000_000n;
      const times = `the bid ${bid}${held.per} times custom audience ${audience}'s multiplier ${multiplier} (micros)`;
      out.push(
        !held.impression
          ? `${f.path}.custom_audience_bid_multipliers[${i}]: ${times} is ${product} micros, above this account's bid cap ${cap} (spend guard)`
          : at.wireFormat === 'single'
            ? `${f.path}.custom_audience_bid_multipliers[${i}]: ${times} is a CPM of ${product} micros, above this account's bid cap ${cap} (${PER_THOUSAND})`
            : `${f.path}.custom_audience_bid_multipliers[${i}]: ${times} is ${product} micros per thousand impressions, above this account's bid cap ${cap} (${PER_THOUSAND})`,
      );
    });
  }
  return out;
}

/** Every way the bids the operation sets break the bid cap, per click or per thousand impressions. */
function bidViolations(
  fields: Field[],
  judged: Record<string, unknown>,
  cap: bigint | null,
  at: CheckMoment,
): string[] {
  if (cap === null) return [];
  const kept = objectsByPath(judged);
  return [
    ...bidCapViolations(fields, kept, cap, at),
    ...billingSwitchViolations(fields, kept, cap, at),
    ...multipliedBidViolations(judged, cap, at),
  ];
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
  // A bulk job's body is every object it creates; another operation's result is the object as the
  // change leaves it, with what an update keeps.
  const judged = at.wireFormat === 'bulk' ? body : (result ?? body);
  return [
    ...budgetCapViolations(fields, caps.maxDailyBudgetMicros),
    ...bidViolations(fields, judged, caps.maxBidMicros, at),
    ...standards.flatMap((s) => [
      ...namingViolations(fields, s),
      ...urlViolations(fields, s),
      ...windowViolations(fields, s, at),
    ]),
  ];
}

/**
 * Whether a field holds a URL whose host is checked for look-alikes: a target URL, and any other
 * `url` or `*_url` field (a creative's `link_url`, an image's URL), wherever it sits.
 */
export const isUrlField = (key: string) => among(URL_FIELDS, key) || key === 'url' || key.endsWith('_url');

/** A host a written host is compared with for look-alikes, and how a person knows it. */
interface KnownHost {
  ascii: string;
  skeleton: string;
  what: string;
  /** An allowed domain allows its subdomains, so a host looking like one of those looks like it too. */
  withSubdomains: boolean;
}

/** The ASCII host of a URL field's value; undefined for a value that is no URL with a host. */
function urlHost(value: unknown): string | undefined {
  if (typeof value !== 'string' || !URL.canParse(value)) return undefined;
  const host = new URL(value).hostname;
  return host === '' ? undefined : host;
}

/** A bulk job's operation a path is in, by the name of what it creates (`the ad "Spring 1"`). */
function operationOf(body: unknown, path: string): string {
  const i = /^body\.operations\[(\d+)\]/.exec(path)?.[1];
  const ops = isObject(body) && Array.isArray(body.operations) ? body.operations : [];
  const op: unknown = i === undefined ? undefined : ops[Number(i)];
  if (!isObject(op) || !isObject(op.body) || typeof op.body.name !== 'string') return '';
  const kind = String(op.type ?? '')
    .replace(/^create_/, '')
    .replaceAll('_', ' ');
  return ` (the ${kind} ${JSON.stringify(op.body.name)})`;
}

/**
 * lookalikeHostViolations says every URL the operation writes whose host passes for another
 * (UTS #39): a label that mixes scripts beyond the highly restrictive level (`exаmple` with a
 * Cyrillic "а"), or a host whose skeleton is that of one of the account's allowed domains (or a
 * host within one) or of a host the object links to now (`current`, the live object), without
 * being that host. A host that an active standard lists exactly in `allowed_domains` (in ASCII
 * form, whether written as its A-label or in Unicode) is the account's own and is not refused.
 * Each message names the field, shows the host in ASCII form with its Unicode form and the
 * warning, and says the rule.
 */
export function lookalikeHostViolations(
  body: unknown,
  standards: readonly Standard[],
  current?: unknown,
): string[] {
  const allowed: KnownHost[] = standards.flatMap((s) =>
    domainList(s.data).map((d) => ({
      ascii: asAscii(d),
      skeleton: skeleton(d),
      what: `the allowed domain ${asAscii(d)} of standard ${quoted(s.name)}`,
      withSubdomains: true,
    })),
  );
  const listed = new Set(allowed.map((a) => a.ascii));
  const linked: KnownHost[] = fieldsOf(current, 'current').flatMap((f) => {
    const host = isUrlField(f.key) ? urlHost(f.value) : undefined;
    if (host === undefined) return [];
    const field = f.path.slice('current.'.length);
    return [
      {
        ascii: host,
        skeleton: skeleton(host),
        what: `${host}, which the ${field} links to now`,
        withSubdomains: false,
      },
    ];
  });
  const out: string[] = [];
  for (const f of fieldsOf(body).filter((x) => isUrlField(x.key))) {
    const host = urlHost(f.value);
    const view = host === undefined ? undefined : readHost(host);
    if (view === undefined || listed.has(view.ascii)) continue;
    const at = `${f.path}${operationOf(body, f.path)}`;
    const unless = `a standard of this account must list ${view.ascii} in allowed_domains for it to be used`;
    if (view.mixedScript !== undefined) {
      out.push(
        `${at} must not link to a look-alike host: ${describeHost(view.ascii)} mixes scripts in its label ${JSON.stringify(view.mixedScript.label)} (UTS #39, highly restrictive); ${unless}`,
      );
      continue;
    }
    const like = [...allowed, ...linked].find(
      (k) =>
        k.ascii !== view.ascii &&
        !within(view.ascii, k.ascii) &&
        (view.skeleton === k.skeleton || (k.withSubdomains && view.skeleton.endsWith(`.${k.skeleton}`))),
    );
    if (like !== undefined) {
      out.push(
        `${at} must not link to a look-alike host: ${describeHost(view.ascii, like.ascii)} is not ${like.what} (UTS #39 confusables); ${unless}`,
      );
    }
  }
  return out;
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
  return mine.some((a) => theirs.some((b) => within(a, b) || within(b, a)));
}

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
