/**
 * Validation of the ad endpoints' query strings and bodies. Every refusal is a 400
 * `invalid_request` whose `field` is the dotted path of the offending value and whose message
 * names it and the rule it breaks.
 */
import { isRecord } from '@adsmcp/runtime/json';
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
import { many, PAGING_PARAMETERS, type PageRequest, parsePaging, type RawQuery, single } from './paging.ts';

export type { RawQuery } from './paging.ts';

export const INCLUDE_VALUES = ['serving_issues'] as const;

export interface Includes {
  servingIssues: boolean;
}

export interface ListAdsQuery extends PageRequest {
  adGroupId: string | undefined;
  name: string | undefined;
  include: Includes;
}

/** The kind of the ad list's cursors. */
export const ADS_CURSOR_KIND = 'ads';

export const countChars = (s: string): number => [...s].length;
export const hasContent = (s: string): boolean => /\S/.test(s);

export const list = (values: readonly string[]): string => values.map((v) => `"${v}"`).join(', ');

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

export function parseInclude(query: RawQuery): Includes {
  const values = many(query, 'include');
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
  refuseUnknownParameters(query, ['ad_group_id', 'name', ...PAGING_PARAMETERS, 'include']);

  const adGroupId = single(query, 'ad_group_id');
  if (adGroupId === '') throw invalidRequest('ad_group_id', 'ad_group_id must not be empty');
  return {
    adGroupId,
    name: parseNameFilter(query),
    ...parsePaging(query, ADS_CURSOR_KIND),
    include: parseInclude(query),
  };
}

/** parseNameFilter validates a list's `name` filter: 3 to 1000 characters with some content. */
export function parseNameFilter(query: RawQuery): string | undefined {
  const name = single(query, 'name');
  if (name !== undefined) {
    if (countChars(name) < 3 || countChars(name) > 1000) {
      throw invalidRequest('name', 'name must be 3 to 1000 characters');
    }
    if (!hasContent(name)) throw invalidRequest('name', 'name must contain a non-whitespace character');
  }
  return name;
}

// ---- bodies ----

export function refuseUnknownProperties(
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

export function requireObject(value: unknown, field: string): Record<string, unknown> {
  if (!isRecord(value)) throw invalidRequest(field, `${field} must be an object`);
  return value;
}

export function string(
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

export function oneOf<T extends string>(value: unknown, field: string, allowed: readonly T[]): T {
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

export function parseCreativePatch(value: unknown): Partial<Creative> {
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

export function parseLandingPageConfiguration(value: unknown): LandingPageConfiguration | null {
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
