/**
 * What a saved account standard or template must be. The bounds of `data` are the request's field
 * rules, which the server checks for every caller; this is what the service relies on besides: the kind,
 * the name, the dates in order, and a template free of credentials and of remote identities (a
 * template is copied into new objects, where a token would leak and an id would point at another
 * account's object).
 */
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import { textLength } from '@adsmcp/runtime/text';
import { asciiHost } from '@adsmcp/runtime/url-host';
import { Temporal } from 'temporal-polyfill';

export const KINDS = ['standard', 'template'] as const;
export type Kind = (typeof KINDS)[number];

/** Keys that carry authorization: never stored in a template. */
export const AUTHORIZATION_KEYS = [
  'authorization',
  'access_token',
  'refresh_token',
  'id_token',
  'token',
  'bearer',
  'api_key',
  'apikey',
  'secret',
  'client_secret',
  'password',
  'cookie',
  'credential',
  'credentials',
  'session',
] as const;

/** Keys that name an object of the ad platform: never stored in a template. */
export const REMOTE_ID_KEYS = [
  'id',
  'account_id',
  'ad_account_id',
  'campaign_id',
  'ad_group_id',
  'ad_id',
  'creative_id',
  'pixel_id',
  'file_id',
  'custom_audience_id',
  'audience_id',
  'product_feed_id',
  'feed_id',
  'conversion_source_id',
  'job_id',
  'business_id',
] as const;

/** Besides the keys above, any key ending so: `*_token`, `*_secret`, `*_password`, `*_api_key`. */
const AUTHORIZATION_SUFFIXES = ['_token', '_secret', '_password', '_api_key'];

/** The remote identity keys that also end a longer key (`parent_campaign_id`); a bare `id` only alone. */
const REMOTE_ID_SUFFIXES = REMOTE_ID_KEYS.filter((k) => k !== 'id').map((k) => `_${k}`);

const MAX_DEPTH = 32;

const compact = (k: string) => k.replaceAll('_', '');
const COMPACT_AUTHORIZATION = new Set(AUTHORIZATION_KEYS.map(compact));
const COMPACT_REMOTE_IDS = new Set(REMOTE_ID_KEYS.map(compact));
const COMPACT_AUTHORIZATION_SUFFIXES = AUTHORIZATION_SUFFIXES.map(compact);

/**
 * normalisedKey spells a key the way the lists above do, whatever its style: compatibility forms
 * and invisible format characters folded away, camelCase and PascalCase split into words
 * (`accessToken`, `adAccountID`, `APIKey`), every run of other characters (`-`, spaces, `.`)
 * one `_`, none at the ends, lowercased: ` Access-Token ` is `access_token`.
 */
export function normalisedKey(key: string): string {
  return key
    .normalize('NFKC')
    .replace(/\p{Cf}/gu, '')
    .replace(/(\p{Ll}|\p{Nd})(\p{Lu})/gu, '$1_$2')
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, '$1_$2')
    .replace(/[^\p{L}\p{Nd}]+/gu, '_')
    .replace(/^_+|_+$/g, '')
    .toLowerCase();
}

function forbiddenReason(key: string): string | undefined {
  const k = normalisedKey(key);
  // Written with no separator at all (`accesstoken`, `campaignid`): compared without them.
  const c = compact(k);
  if (
    (AUTHORIZATION_KEYS as readonly string[]).includes(k) ||
    AUTHORIZATION_SUFFIXES.some((s) => k.endsWith(s)) ||
    COMPACT_AUTHORIZATION.has(c) ||
    COMPACT_AUTHORIZATION_SUFFIXES.some((s) => c.endsWith(s))
  )
    return 'an authorization field';
  if (
    (REMOTE_ID_KEYS as readonly string[]).includes(k) ||
    REMOTE_ID_SUFFIXES.some((s) => k.endsWith(s)) ||
    COMPACT_REMOTE_IDS.has(c)
  )
    return 'a remote identity field';
  return undefined;
}

/**
 * A key in a path: `.name` when it reads as one, else quoted (`[" token"]`) so that its spaces
 * show, with invisible characters written as escapes.
 */
function keyInPath(key: string): string {
  if (/^[A-Za-z_$][\w$]*$/.test(key)) return `.${key}`;
  const shown = JSON.stringify(key).replace(
    /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu,
    (ch) => `\\u${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`,
  );
  return `[${shown}]`;
}

/**
 * The forbidden fields of a template, each by its path (`data.template.creative.account_id`), at
 * every depth; a part nested too deep to be checked is named as such.
 */
export function forbiddenTemplateFields(value: unknown, path = 'data.template', depth = 0): string[] {
  if (typeof value !== 'object' || value === null) return [];
  if (depth > MAX_DEPTH)
    return [`${path} (nested more than ${MAX_DEPTH} levels deep, so it cannot be checked)`];
  if (Array.isArray(value))
    return value.flatMap((v, i) => forbiddenTemplateFields(v, `${path}[${i}]`, depth + 1));
  return Object.entries(value).flatMap(([key, v]) => {
    const at = `${path}${keyInPath(key)}`;
    const reason = forbiddenReason(key);
    const here = reason === undefined ? [] : [`${at} (${reason})`];
    return [...here, ...forbiddenTemplateFields(v, at, depth + 1)];
  });
}

function checkDate(value: unknown, field: string): string | undefined {
  if (value === undefined) return undefined;
  const text = String(value);
  try {
    if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) throw new Error('not YYYY-MM-DD');
    return Temporal.PlainDate.from(text, { overflow: 'reject' }).toString();
  } catch {
    throw new InvalidArgumentError(
      `\`data.${field}\` must be a date YYYY-MM-DD (got ${JSON.stringify(text)})`,
    );
  }
}

/**
 * The allowed domains that are no domain name, each by its field and why. A domain is kept as it
 * was written and compared in its ASCII form (each Unicode label its IDNA A-label), so an allowed
 * domain written in Unicode allows its A-label and the other way round; one with no ASCII form
 * (a space, a character IDNA disallows, a malformed `xn--` label) could allow nothing.
 */
export function invalidAllowedDomains(domains: unknown): string[] {
  if (!Array.isArray(domains)) return [];
  return domains.flatMap((d, i) => {
    const text = String(d);
    if (asciiHost(text) !== undefined && !/[/:@?#]/.test(text)) return [];
    return [
      `\`data.allowed_domains[${i}]\` must be a domain name such as example.com or bücher.example, without scheme, port or path, that has an ASCII form (IDNA) (got ${JSON.stringify(text)})`,
    ];
  });
}

export interface StandardInput {
  name: string;
  kind: string;
  /** The proto JSON form of StandardData. */
  data: Record<string, unknown>;
}

/** checkStandard refuses a standard the service would not keep, naming the field and the rule. */
export function checkStandard(input: StandardInput): Kind {
  if (!(KINDS as readonly string[]).includes(input.kind)) {
    throw new InvalidArgumentError(
      `\`kind\` must be standard or template (got ${JSON.stringify(input.kind)})`,
    );
  }
  const length = textLength(input.name);
  if (length < 1 || length > 200)
    throw new InvalidArgumentError(`\`name\` must be 1 to 200 characters (got ${length})`);
  const start = checkDate(input.data.operating_start, 'operating_start');
  const end = checkDate(input.data.operating_end, 'operating_end');
  if (start !== undefined && end !== undefined && start > end) {
    throw new InvalidArgumentError(
      `\`data.operating_start\` ${start} must not be after \`data.operating_end\` ${end}`,
    );
  }
  const domains = invalidAllowedDomains(input.data.allowed_domains);
  if (domains.length > 0) throw new InvalidArgumentError(domains.join('; '));
  const forbidden = forbiddenTemplateFields(input.data.template);
  if (forbidden.length > 0) {
    throw new InvalidArgumentError(
      `a template must not hold authorization or remote identity fields: ${forbidden.join(', ')}`,
    );
  }
  return input.kind as Kind;
}
