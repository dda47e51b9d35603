/**
 * Ads: the resource, its JSON form, its serving issues, and how an update body changes it.
 * Pure functions; the store persists ads and the routes validate requests.
 */
import { invalidRequest, PlatformHttpError } from './errors.ts';

export const AD_STATUSES = ['active', 'paused', 'archived'] as const;
export type AdStatus = (typeof AD_STATUSES)[number];

export const CREATIVE_TYPES = ['chat_card', 'product_ad_template'] as const;
export type CreativeType = (typeof CREATIVE_TYPES)[number];

/** A crop of the (EXIF-oriented) source image, each value a fraction 0 to 1 of it. */
export interface ImageCrop {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface Creative {
  type: CreativeType;
  title: string;
  body: string;
  price?: string;
  target_url?: string;
  file_id?: string;
  image_crop?: ImageCrop;
}

export interface LandingPageConfiguration {
  query_string_template: string;
}

export interface Ad {
  /** Creation sequence: the list order, and what cursors point at. Not part of the JSON. */
  seq: number;
  id: string;
  accountId: string;
  campaignId: string;
  adGroupId: string;
  name: string;
  status: AdStatus;
  creative: Creative;
  landingPageConfiguration: LandingPageConfiguration | null;
  revision: number;
  createdAt: Date;
  updatedAt: Date;
}

/** A validated ad update body: only the fields the client sent. */
export interface AdUpdate {
  name?: string;
  /** Creative fields to replace; the others are kept. */
  creative?: Partial<Creative>;
  status?: AdStatus;
  landing_page_configuration?: LandingPageConfiguration | null;
}

export interface ServingIssue {
  code: string;
  message: string;
}

/** Landing pages on this (reserved, never resolvable) domain are reported unreachable. */
const UNREACHABLE_HOST_SUFFIX = '.invalid';

/** canonicalCreative returns `c` with its keys in one fixed order and no undefined values. */
export function canonicalCreative(c: Creative): Creative {
  const out: Creative = { type: c.type, title: c.title, body: c.body };
  if (c.price !== undefined) out.price = c.price;
  if (c.target_url !== undefined) out.target_url = c.target_url;
  if (c.file_id !== undefined) out.file_id = c.file_id;
  if (c.image_crop !== undefined) {
    const { x, y, width, height } = c.image_crop;
    out.image_crop = { x, y, width, height };
  }
  return out;
}

function landingPageUnreachable(targetUrl: string | undefined): boolean {
  if (targetUrl === undefined || !URL.canParse(targetUrl)) return false;
  return new URL(targetUrl).hostname.endsWith(UNREACHABLE_HOST_SUFFIX);
}

/**
 * servingIssues returns why an ad is not (fully) serving, deterministically from its state:
 * paused and archived ads say so, and an ad whose target URL is on a `.invalid` host reports
 * its landing page unreachable.
 */
export function servingIssues(ad: Ad): ServingIssue[] {
  const issues: ServingIssue[] = [];
  if (ad.status === 'paused') issues.push({ code: 'paused', message: 'The ad is paused.' });
  if (ad.status === 'archived') issues.push({ code: 'archived', message: 'The ad is archived.' });
  if (landingPageUnreachable(ad.creative.target_url)) {
    issues.push({
      code: 'landing_page_unreachable',
      message: `The landing page ${ad.creative.target_url} could not be reached.`,
    });
  }
  return issues;
}

/** adJson is an ad as the API returns it; `serving_issues` only when asked for. */
export function adJson(ad: Ad, include: { servingIssues: boolean } = { servingIssues: false }) {
  return {
    id: ad.id,
    account_id: ad.accountId,
    campaign_id: ad.campaignId,
    ad_group_id: ad.adGroupId,
    name: ad.name,
    status: ad.status,
    creative: canonicalCreative(ad.creative),
    landing_page_configuration: ad.landingPageConfiguration,
    revision: ad.revision,
    created_at: ad.createdAt.toISOString(),
    updated_at: ad.updatedAt.toISOString(),
    ...(include.servingIssues ? { serving_issues: servingIssues(ad) } : {}),
  };
}

export type AdJson = ReturnType<typeof adJson>;

/** The editable state of an ad, to tell whether an update changed anything. */
function editableState(ad: Ad): string {
  return JSON.stringify([
    ad.name,
    ad.status,
    canonicalCreative(ad.creative),
    ad.landingPageConfiguration === null ? null : ad.landingPageConfiguration.query_string_template,
  ]);
}

/**
 * checkCreative returns a whole creative in canonical form, or refuses it (400) when it does not
 * hold together: an `image_crop` needs a `file_id` and is not supported for `product_ad_template`.
 */
export function checkCreative(creative: Creative): Creative {
  if (creative.image_crop !== undefined) {
    if (creative.type === 'product_ad_template') {
      throw invalidRequest(
        'creative.image_crop',
        'creative.image_crop is not supported for product_ad_template creatives',
      );
    }
    if (creative.file_id === undefined) {
      throw invalidRequest('creative.image_crop', 'creative.image_crop requires creative.file_id');
    }
  }
  return canonicalCreative(creative);
}

/**
 * applyUpdate returns the ad as `update` leaves it, and whether anything changed. An archived
 * ad is final (409). Supplied creative fields replace the ad's, the others are kept, and the
 * resulting creative must hold together: an `image_crop` needs a `file_id` and is not supported
 * for `product_ad_template` creatives (400).
 */
export function applyUpdate(ad: Ad, update: AdUpdate): { ad: Ad; changed: boolean } {
  if (ad.status === 'archived') {
    throw new PlatformHttpError(
      409,
      'conflict',
      `the ad ${ad.id} is archived; an archived ad cannot be changed`,
    );
  }
  const next: Ad = { ...ad };
  if (update.name !== undefined) next.name = update.name;
  if (update.status !== undefined) next.status = update.status;
  if (update.landing_page_configuration !== undefined) {
    next.landingPageConfiguration = update.landing_page_configuration;
  }
  if (update.creative !== undefined) {
    const creative: Creative = { ...ad.creative };
    for (const [key, value] of Object.entries(update.creative)) {
      if (value !== undefined) (creative as unknown as Record<string, unknown>)[key] = value;
    }
    next.creative = checkCreative(creative);
  }
  return { ad: next, changed: editableState(next) !== editableState(ad) };
}

/** archive returns the ad archived, and whether it was not archived already. */
export function archive(ad: Ad): { ad: Ad; changed: boolean } {
  if (ad.status === 'archived') return { ad, changed: false };
  return { ad: { ...ad, status: 'archived' }, changed: true };
}
