/**
 * The source images of an ad batch, by URL, and their rules: which URLs a request may name, which
 * of them are one image (the same text), and the name an asset saved from a URL is given. What the
 * image must be is images/campaign-image.ts's, and how it is fetched images/remote-image.ts's.
 */
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import { canonicalId } from '@adsmcp/runtime/ids';
import { clip, firstCodePoints, quotedStart } from './code-points.ts';

/** How many URLs one request may name: an ad batch has at most 100 variants. */
export const MAX_SOURCE_URLS = 100;
/** A URL's length in characters (code points, as the tools and campaign_assets.source_url count). */
export const MAX_SOURCE_URL_CHARS = 2048;
/** account_id's length, as campaign_assets.account_id allows it. */
export const MAX_ACCOUNT_ID_CHARS = 255;
/** An asset's name, as campaign_assets.name allows it. */
export const MAX_ASSET_NAME_CHARS = 200;
/** How many source images one call fetches and checks at a time. */
export const FETCHES_AT_ONCE = 4;

/** The error of a URL a call did not get to, because it was cancelled or its deadline passed. */
export const NOT_FETCHED =
  'not fetched: the call was cancelled or ran out of time before this image was fetched';

const quoted = quotedStart;

/** A request's account and its distinct URLs, in the order first given. */
export interface SourceImagesRequest {
  accountId: string;
  urls: string[];
}

/** The number of code points of `text`, or max + 1 when there are more than `max`. */
const lengthUpTo = (text: string, max: number) =>
  firstCodePoints(text, max) === text ? [...text].length : max + 1;

function checkUrl(url: string, i: number): void {
  const field = `source_urls[${i}]`;
  if (lengthUpTo(url, MAX_SOURCE_URL_CHARS) > MAX_SOURCE_URL_CHARS) {
    throw new InvalidArgumentError(
      `${field} must be at most ${MAX_SOURCE_URL_CHARS} characters (got ${[...url].length}, starting ${quoted(url)})`,
    );
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidArgumentError(`${field} must be an absolute https URL (got ${quoted(url)})`);
  }
  if (parsed.protocol !== 'https:') {
    throw new InvalidArgumentError(`${field} must use https (got ${quoted(url)})`);
  }
}

/**
 * validateSourceImages checks an account and its URLs: account_id 1 to 255 characters (the ad
 * platform's ids are checked where the batch is prepared; here only what the table holds), 1 to
 * 100 URLs, each an https URL of at most 2048 characters. A URL given twice (the same text) is one
 * image: variants often share theirs.
 */
export function validateSourceImages(req: {
  accountId: string;
  sourceUrls: readonly string[];
}): SourceImagesRequest {
  const accountChars = lengthUpTo(req.accountId, MAX_ACCOUNT_ID_CHARS);
  if (accountChars < 1 || accountChars > MAX_ACCOUNT_ID_CHARS) {
    throw new InvalidArgumentError(
      `account_id must be 1 to ${MAX_ACCOUNT_ID_CHARS} characters (got ${accountChars < 1 ? 'an empty one' : `more than ${MAX_ACCOUNT_ID_CHARS}`})`,
    );
  }
  const count = req.sourceUrls.length;
  if (count < 1 || count > MAX_SOURCE_URLS) {
    throw new InvalidArgumentError(`source_urls must have 1 to ${MAX_SOURCE_URLS} URLs (got ${count})`);
  }
  req.sourceUrls.forEach(checkUrl);
  return { accountId: canonicalId(req.accountId), urls: [...new Set(req.sourceUrls)] };
}

/** A path segment percent-decoded, or as it is when it does not decode or decodes to control characters. */
function decodedSegment(segment: string): string {
  let decoded: string;
  try {
    decoded = decodeURIComponent(segment);
  } catch {
    return segment;
  }
  // A name is shown to people and in tool results: an encoded line break or NUL stays encoded.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is looked for
  return /[\u0000-\u001f\u007f-\u009f]/.test(decoded) ? segment : decoded;
}

/**
 * assetNameFromUrl names an asset saved from `url` (a URL validateSourceImages accepted): its last
 * path segment that is not empty, percent-decoded, or its host name when the path has none, at
 * most 200 characters (cut with a trailing …). `https://img.example.com/winter/spring%20hero.png`
 * is "spring hero.png", `https://img.example.com/` is "img.example.com".
 */
export function assetNameFromUrl(url: string): string {
  const parsed = new URL(url);
  const segments = parsed.pathname
    .split('/')
    .map((s) => decodedSegment(s).trim())
    .filter((s) => s !== '');
  return clip(segments.at(-1) ?? parsed.hostname, MAX_ASSET_NAME_CHARS);
}
