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
  if (typeof creative.file_id !== 'string' || creative.file_id === '') {
    throw new InvalidArgumentError(
      '`body.creative.image_crop` needs `body.creative.file_id`, the image it crops',
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
