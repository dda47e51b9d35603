/**
 * What a saved account standard or template must be. The gateway checks the shape and the bounds
 * of `data` by the tool's schema; this is what the service relies on whoever calls it: the kind,
 * the name, the dates in order, and a template free of credentials and of remote identities (a
 * template is copied into new objects, where a token would leak and an id would point at another
 * account's object).
 */
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
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

const MAX_DEPTH = 32;

function forbiddenReason(key: string): string | undefined {
  const k = key.toLowerCase();
  if (
    (AUTHORIZATION_KEYS as readonly string[]).includes(k) ||
    AUTHORIZATION_SUFFIXES.some((s) => k.endsWith(s))
  )
    return 'an authorization field';
  if ((REMOTE_ID_KEYS as readonly string[]).includes(k)) return 'a remote identity field';
  return undefined;
}

/** The forbidden fields of a template, each by its path (`data.template.creative.account_id`). */
export function forbiddenTemplateFields(value: unknown, path = 'data.template', depth = 0): string[] {
  if (depth > MAX_DEPTH || typeof value !== 'object' || value === null) return [];
  if (Array.isArray(value))
    return value.flatMap((v, i) => forbiddenTemplateFields(v, `${path}[${i}]`, depth + 1));
  return Object.entries(value).flatMap(([key, v]) => {
    const reason = forbiddenReason(key);
    const here = reason === undefined ? [] : [`${path}.${key} (${reason})`];
    return [...here, ...forbiddenTemplateFields(v, `${path}.${key}`, depth + 1)];
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
  const length = [...input.name].length;
  if (length < 1 || length > 200)
    throw new InvalidArgumentError(`\`name\` must be 1 to 200 characters (got ${length})`);
  const start = checkDate(input.data.operating_start, 'operating_start');
  const end = checkDate(input.data.operating_end, 'operating_end');
  if (start !== undefined && end !== undefined && start > end) {
    throw new InvalidArgumentError(
      `\`data.operating_start\` ${start} must not be after \`data.operating_end\` ${end}`,
    );
  }
  const forbidden = forbiddenTemplateFields(input.data.template);
  if (forbidden.length > 0) {
    throw new InvalidArgumentError(
      `a template must not hold authorization or remote identity fields: ${forbidden.join(', ')}`,
    );
  }
  return input.kind as Kind;
}
