/**
 * Validation of the ad endpoints' query strings and bodies. Every refusal is a 400
 * `invalid_request` whose `field` is the dotted path of the offending value and whose message
 * names it and the rule it breaks.
 */
import {
  AD_STATUSES,
  type AdStatus,
  type AdUpdate,
  CREATIVE_TYPES,
  type Creative,
  type CreativeType,
  type ImageCrop,
  type LandingPageConfiguration,
} from './ads.ts';
import { invalidRequest } from './errors.ts';

/** A parsed query string: repeated parameters arrive as arrays. */
export type RawQuery = Record<string, string | string[] | undefined>;

export const DEFAULT_LIMIT = 25;
export const MAX_LIMIT = 500;
export const INCLUDE_VALUES = ['serving_issues'] as const;

export interface Includes {
  servingIssues: boolean;
}

export interface ListAdsQuery {
  adGroupId: string | undefined;
  name: string | undefined;
  limit: number;
  order: 'asc' | 'desc';
  afterSeq: number | undefined;
  beforeSeq: number | undefined;
  include: Includes;
}

const CURSOR_PREFIX = 'ads:';

/** encodeCursor returns the opaque cursor that points at the ad with sequence number `seq`. */
export function encodeCursor(seq: number): string {
  return Buffer.from(`${CURSOR_PREFIX}${seq}`, 'utf8').toString('base64url');
}

function decodeCursor(field: string, cursor: string): number {
  const decoded = /^[A-Za-z0-9_-]{1,64}$/.test(cursor)
    ? Buffer.from(cursor, 'base64url').toString('utf8')
    : '';
  const match = /^ads:([1-9][0-9]{0,14})$/.exec(decoded);
  if (match?.[1] === undefined) {
    throw invalidRequest(field, `${field} is not a valid cursor; use paging.${field} of an earlier page`);
  }
  return Number(match[1]);
}

const countChars = (s: string): number => [...s].length;
const hasContent = (s: string): boolean => /\S/.test(s);

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const list = (values: readonly string[]): string => values.map((v) => `"${v}"`).join(', ');

// ---- query strings ----

export function refuseUnknownParameters(query: RawQuery, allowed: readonly string[]): void {
  for (const name of Object.keys(query)) {
    if (!allowed.includes(name)) {
      throw invalidRequest(
        name,
        `${name} is not a known query parameter; allowed parameters are ${allowed.join(', ') || 'none'}`,
      );
    }
  }
}

/** The single value of a query parameter that may appear at most once. */
export function single(query: RawQuery, name: string): string | undefined {
  const value = query[name];
  if (Array.isArray(value)) throw invalidRequest(name, `${name} must be given at most once`);
  return value;
}

function parseInclude(query: RawQuery): Includes {
  const raw = query.include;
  const values = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
  for (const value of values) {
    if (!(INCLUDE_VALUES as readonly string[]).includes(value)) {
      throw invalidRequest('include', `include must be one of ${list(INCLUDE_VALUES)}; got "${value}"`);
    }
  }
  return { servingIssues: values.includes('serving_issues') };
}

/** parseGetAdQuery validates the query of `GET /ads/{ad_id}`. */
export function parseGetAdQuery(query: RawQuery): Includes {
  refuseUnknownParameters(query, ['include']);
  return parseInclude(query);
}

/** refuseQuery refuses any query parameter, for endpoints that take none. */
export function refuseQuery(query: RawQuery): void {
  refuseUnknownParameters(query, []);
}

/** parseListAdsQuery validates the query of `GET /ads`. */
export function parseListAdsQuery(query: RawQuery): ListAdsQuery {
  refuseUnknownParameters(query, ['ad_group_id', 'name', 'limit', 'after', 'before', 'order', 'include']);

  const adGroupId = single(query, 'ad_group_id');
  if (adGroupId === '') throw invalidRequest('ad_group_id', 'ad_group_id must not be empty');

  const name = single(query, 'name');
  if (name !== undefined) {
    if (countChars(name) < 3 || countChars(name) > 1000) {
      throw invalidRequest('name', 'name must be 3 to 1000 characters');
    }
    if (!hasContent(name)) throw invalidRequest('name', 'name must contain a non-whitespace character');
  }

  const rawLimit = single(query, 'limit');
  let limit = DEFAULT_LIMIT;
  if (rawLimit !== undefined) {
    limit = /^[0-9]{1,4}$/.test(rawLimit) ? Number(rawLimit) : Number.NaN;
    if (!(limit >= 1 && limit <= MAX_LIMIT)) {
      throw invalidRequest('limit', `limit must be an integer from 1 to ${MAX_LIMIT}; got "${rawLimit}"`);
    }
  }

  const rawOrder = single(query, 'order');
  if (rawOrder !== undefined && rawOrder !== 'asc' && rawOrder !== 'desc') {
    throw invalidRequest('order', `order must be "asc" or "desc"; got "${rawOrder}"`);
  }

  const after = single(query, 'after');
  const before = single(query, 'before');
  if (after !== undefined && before !== undefined) {
    throw invalidRequest('before', 'after and before cannot be combined; give one cursor');
  }

  return {
    adGroupId,
    name,
    limit,
    order: rawOrder ?? 'asc',
    afterSeq: after === undefined ? undefined : decodeCursor('after', after),
    beforeSeq: before === undefined ? undefined : decodeCursor('before', before),
    include: parseInclude(query),
  };
}

// ---- bodies ----

function refuseUnknownProperties(
  obj: Record<string, unknown>,
  allowed: readonly string[],
  path: string,
): void {
  for (const key of Object.keys(obj)) {
    if (!allowed.includes(key)) {
      const field = path === '' ? key : `${path}.${key}`;
      const rule = allowed.length === 0 ? 'no properties are allowed' : `allowed are ${allowed.join(', ')}`;
      throw invalidRequest(field, `${field} is not a known property; ${rule}`);
    }
  }
}

function requireObject(value: unknown, field: string): Record<string, unknown> {
  if (!isRecord(value)) throw invalidRequest(field, `${field} must be an object`);
  return value;
}

function string(
  value: unknown,
  field: string,
  rule: { min?: number; max?: number; content?: boolean },
): string {
  if (typeof value !== 'string') throw invalidRequest(field, `${field} must be a string`);
  const n = countChars(value);
  const min = rule.min ?? 0;
  const max = rule.max ?? Number.POSITIVE_INFINITY;
  if (n < min || n > max) {
    throw invalidRequest(
      field,
      min === 0
        ? `${field} must be at most ${max} characters`
        : `${field} must be ${min} to ${max} characters`,
    );
  }
  if (rule.content === true && !hasContent(value)) {
    throw invalidRequest(field, `${field} must contain a non-whitespace character`);
  }
  return value;
}

function oneOf<T extends string>(value: unknown, field: string, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw invalidRequest(field, `${field} must be one of ${list(allowed)}`);
  }
  return value as T;
}

function fraction(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1) {
    throw invalidRequest(field, `${field} must be a number from 0 to 1`);
  }
  return value;
}

const IMAGE_CROP_KEYS = ['x', 'y', 'width', 'height'] as const;

function parseImageCrop(value: unknown, field: string): ImageCrop {
  const obj = requireObject(value, field);
  refuseUnknownProperties(obj, IMAGE_CROP_KEYS, field);
  const crop: Record<string, number> = {};
  for (const key of IMAGE_CROP_KEYS) {
    if (obj[key] === undefined) throw invalidRequest(`${field}.${key}`, `${field}.${key} is required`);
    crop[key] = fraction(obj[key], `${field}.${key}`);
  }
  return crop as unknown as ImageCrop;
}

const CREATIVE_KEYS = ['type', 'title', 'body', 'price', 'target_url', 'file_id', 'image_crop'] as const;

function parseCreativePatch(value: unknown): Partial<Creative> {
  const obj = requireObject(value, 'creative');
  refuseUnknownProperties(obj, CREATIVE_KEYS, 'creative');
  const patch: Partial<Creative> = {};
  if (obj.type !== undefined) patch.type = oneOf<CreativeType>(obj.type, 'creative.type', CREATIVE_TYPES);
  if (obj.title !== undefined) {
    patch.title = string(obj.title, 'creative.title', { min: 1, max: 50, content: true });
  }
  if (obj.body !== undefined) patch.body = string(obj.body, 'creative.body', { max: 100 });
  if (obj.price !== undefined) patch.price = string(obj.price, 'creative.price', { max: 100 });
  if (obj.target_url !== undefined) {
    patch.target_url = string(obj.target_url, 'creative.target_url', { max: 2048 });
  }
  if (obj.file_id !== undefined) patch.file_id = string(obj.file_id, 'creative.file_id', {});
  if (obj.image_crop !== undefined) patch.image_crop = parseImageCrop(obj.image_crop, 'creative.image_crop');
  // Rules that hold within the supplied fields alone; the merged creative is checked on apply.
  if (patch.image_crop !== undefined && patch.type === 'product_ad_template') {
    throw invalidRequest(
      'creative.image_crop',
      'creative.image_crop is not supported for product_ad_template creatives',
    );
  }
  return patch;
}

function parseLandingPageConfiguration(value: unknown): LandingPageConfiguration | null {
  if (value === null) return null;
  const field = 'landing_page_configuration';
  const obj = requireObject(value, field);
  refuseUnknownProperties(obj, ['query_string_template'], field);
  if (obj.query_string_template === undefined) {
    throw invalidRequest(`${field}.query_string_template`, `${field}.query_string_template is required`);
  }
  return {
    query_string_template: string(obj.query_string_template, `${field}.query_string_template`, {}),
  };
}

const UPDATE_KEYS = ['name', 'creative', 'status', 'landing_page_configuration'] as const;

/** parseAdUpdate validates the body of `POST /ads/{ad_id}` (the ad update body of the spec). */
export function parseAdUpdate(body: unknown): AdUpdate {
  if (!isRecord(body)) throw invalidRequest(undefined, 'the body must be a JSON object');
  refuseUnknownProperties(body, UPDATE_KEYS, '');
  const update: AdUpdate = {};
  if (body.name !== undefined) update.name = string(body.name, 'name', { min: 3, max: 1000, content: true });
  if (body.creative !== undefined) update.creative = parseCreativePatch(body.creative);
  if (body.status !== undefined) update.status = oneOf<AdStatus>(body.status, 'status', AD_STATUSES);
  if (body.landing_page_configuration !== undefined) {
    update.landing_page_configuration = parseLandingPageConfiguration(body.landing_page_configuration);
  }
  return update;
}

/** parseArchiveBody accepts only an absent body or `{}` for `POST /ads/{ad_id}/archive`. */
export function parseArchiveBody(body: unknown): void {
  if (body === undefined) return;
  if (!isRecord(body)) throw invalidRequest(undefined, 'the body must be empty or {}');
  refuseUnknownProperties(body, [], '');
}
