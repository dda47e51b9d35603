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
  if (Math.abs(w - h) > EPSILON) {
    throw new InvalidArgumentError(
      `\`body.creative.image_crop\` must be square: width ${w} and height ${h} differ${kept(patch, 'image_crop')}`,
    );
  }
  if (x + w > 1 + EPSILON || y + h > 1 + EPSILON) {
    throw new InvalidArgumentError(
      `\`body.creative.image_crop\` must lie within the image: x + width (${x + w}) and y + height (${y + h}) must be at most 1`,
    );
  }
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
