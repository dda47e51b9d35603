/**
 * The rules an ad must keep as a whole, checked on the ad an update would produce (the live ad
 * with the update merged in), so that an update that is valid alone but not with the ad's other
 * fields is refused when it is prepared, not when it is applied.
 */
import { InvalidArgumentError } from '@adsmcp/runtime/errors';

type Fields = Record<string, unknown>;

function asObject(v: unknown): Fields | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Fields) : undefined;
}

/** Whether the update supplies `creative.<field>` (otherwise the ad keeps the one it has). */
function supplies(patch: Fields, field: string): boolean {
  const creative = asObject(patch.creative);
  return creative !== undefined && field in creative;
}

/** Said of a value the ad keeps from its live state. */
const kept = (patch: Fields, field: string) => (supplies(patch, field) ? '' : ` (the ad's current ${field})`);

/** Floating-point fractions are compared with this much slack (0.8 + 0.2 is 1.0000000000000002). */
const EPSILON = 1e-9;

function checkCrop(creative: Fields, patch: Fields): void {
  const crop = asObject(creative.image_crop);
  if (crop === undefined) return;
  const type = String(creative.type ?? '');
  if (type !== 'chat_card') {
    throw new InvalidArgumentError(
      `\`body.creative.image_crop\` is only for chat_card creatives, and the ad would have a ${type} creative${kept(patch, 'type')} with an image_crop${kept(patch, 'image_crop')}`,
    );
  }
  // A campaign asset (asset_id) is an image too: it is sent as the file it is uploaded as.
  const image = (k: string) => typeof creative[k] === 'string' && creative[k] !== '';
  if (!image('file_id') && !image('asset_id')) {
    throw new InvalidArgumentError(
      '`body.creative.image_crop` needs an image to crop: `body.creative.file_id` or `body.creative.asset_id`',
    );
  }
  const [x, y, w, h] = ['x', 'y', 'width', 'height'].map((k) => Number(crop[k]));
  if (!(w !== undefined && h !== undefined && x !== undefined && y !== undefined)) return;
  if (w <= 0 || h <= 0) {
    throw new InvalidArgumentError(
      '`body.creative.image_crop` must have a width and a height greater than 0',
    );
  }
  // Square is a matter of pixels, so of the image's size: checked by checkCropSquare once it is known.
  if (x + w > 1 + EPSILON || y + h > 1 + EPSILON) {
    throw new InvalidArgumentError(
      `\`body.creative.image_crop\` must lie within the image: x + width (${x + w}) and y + height (${y + h}) must be at most 1`,
    );
  }
}

/** An image's size in pixels, upright (after its EXIF orientation), as its crop's fractions are of it. */
export interface ImageSize {
  width: number;
  height: number;
}

/** A number of pixels as a person reads it: whole, or to one decimal. */
const pixels = (n: number) => String(Math.round(n * 10) / 10);

/**
 * checkCropSquare refuses a creative whose image_crop is not square on `image`, the image it
 * crops (`what` names it): the fractions are of the image's upright width and height, so on a 300 × 100 image a
 * square is width 1/3 of height 1, and equal fractions are a rectangle. Sides within a pixel of
 * each other are square (fractions are rarely exact).
 */
export function checkCropSquare(creative: Fields, image: ImageSize & { what: string }, patch: Fields): void {
  const crop = asObject(creative.image_crop);
  if (crop === undefined) return;
  const w = Number(crop.width) * image.width;
  const h = Number(crop.height) * image.height;
  if (Math.abs(w - h) <= 1) return;
  throw new InvalidArgumentError(
    `\`body.creative.image_crop\` must be square in pixels: on ${image.what}, ${image.width} × ${image.height} pixels upright, it is ${pixels(w)} × ${pixels(h)} pixels${kept(patch, 'image_crop')}; for a square, width × ${image.width} must equal height × ${image.height}`,
  );
}

/** checkAd refuses an ad the platform would refuse, naming the field and the rule. */
export function checkAd(ad: Fields, patch: Fields): void {
  const creative = asObject(ad.creative);
  if (creative !== undefined) checkCrop(creative, patch);
}

/** The image of a creative: a chat_card shows one (its file_id), a product_ad_template none. */
export interface ImageReport {
  required: boolean;
  present: boolean;
  /** Why the image is wrong; empty when it is right. */
  issue: string;
}

export interface CreativeReport {
  valid: boolean;
  /** What the ad rules refuse in the creative, each naming the field and the rule. */
  copyIssues: string[];
  image: ImageReport;
}

/**
 * creativeReport checks a creative before any ad has it, by the rules checkAd applies to the ad an
 * update would produce, and reports a missing image apart: an ad can be prepared without one, but a
 * chat_card without an image cannot run.
 */
export function creativeReport(creative: Fields): CreativeReport {
  const copyIssues: string[] = [];
  try {
    checkAd({ creative }, { creative });
  } catch (e) {
    if (!(e instanceof InvalidArgumentError)) throw e;
    copyIssues.push(e.message);
  }
  const required = creative.type === 'chat_card';
  const present = typeof creative.file_id === 'string' && creative.file_id !== '';
  const issue =
    required && !present ? '`creative.file_id` is required: a chat_card shows an image, and it has none' : '';
  return { valid: copyIssues.length === 0 && issue === '', copyIssues, image: { required, present, issue } };
}
