/**
 * Literal ad variations: every combination of the parts given. Nothing is read, written or
 * generated. The request's field rules bound the lists and the lengths; what they cannot say (a
 * visible title, no hidden characters, https URLs, the number of combinations) is checked here,
 * in the words the tool's arguments are refused with.
 */
import { DomainError, InvalidArgumentError } from '@adsmcp/runtime/errors';
import { blankRefusal, hiddenCharacter, stackedMarksRefusal } from '@adsmcp/runtime/text';
import { isWrittenUrl } from '@adsmcp/runtime/written-url';

/** The most combinations one call builds; a batch item holds at most as many variants. */
export const VARIATIONS_MAX = 100;

export interface Variation {
  title: string;
  body: string;
  source_image_url: string;
  target_url: string;
}

export interface VariationParts {
  titles: readonly string[];
  bodies: readonly string[];
  image_urls: readonly string[];
  target_urls: readonly string[];
}

/**
 * The combinations would be more than VARIATIONS_MAX: says how many, and the limit, also as the
 * refusal's details (`combinations`, `limit`), which the tool error shows beside its message.
 */
export class TooManyVariationsError extends DomainError {
  constructor(
    readonly combinations: number,
    counts: readonly number[],
  ) {
    super(
      `titles × bodies × image_urls × target_urls would make ${combinations} combinations ` +
        `(${counts.join(' × ')}); the limit is ${VARIATIONS_MAX}`,
      'invalid_argument',
      { combinations, limit: VARIATIONS_MAX },
    );
  }
}

/** A value as a refusal quotes it: cut at 40 characters. */
function show(value: string): string {
  const chars = [...value];
  return JSON.stringify(chars.length > 40 ? `${chars.slice(0, 40).join('')}…` : value);
}

/** Why one part is refused, or undefined when it is fine. */
function partRefusal(field: string, value: string, rule: 'title' | 'body' | 'url'): string | undefined {
  const name = `\`${field}\``;
  const hidden = hiddenCharacter(value);
  if (hidden !== undefined)
    return `${name} must not contain the invisible character ${hidden}: control, format and blank characters hide or change what the text shows`;
  const stacked = stackedMarksRefusal(name, value);
  if (stacked !== undefined) return stacked;
  if (rule === 'title') return blankRefusal(name, value);
  if (rule === 'url' && !isWrittenUrl(value, 'https'))
    return `${name} must be an https URL${/[\s\\]/.test(value) ? ' with no spaces or backslashes' : ''} (got ${show(value)})`;
  return undefined;
}

/**
 * checkParts refuses parts a person reviewing the ads could be misled by, naming each part and
 * its rule: hidden characters, a title with nothing visible, a URL that is not https.
 */
export function checkParts(parts: VariationParts): void {
  const refusals = [
    ...parts.titles.map((v, i) => partRefusal(`titles[${i}]`, v, 'title')),
    ...parts.bodies.map((v, i) => partRefusal(`bodies[${i}]`, v, 'body')),
    ...parts.image_urls.map((v, i) => partRefusal(`image_urls[${i}]`, v, 'url')),
    ...parts.target_urls.map((v, i) => partRefusal(`target_urls[${i}]`, v, 'url')),
  ].filter((r): r is string => r !== undefined);
  if (refusals.length > 0) throw new InvalidArgumentError(refusals.join('; '));
}

/**
 * buildVariations returns every title × body × image × target combination, titles varying
 * slowest and target URLs fastest, so the same parts always give the same order. More than
 * VARIATIONS_MAX combinations is refused, saying how many there would be.
 */
export function buildVariations(parts: VariationParts): Variation[] {
  const { titles, bodies, image_urls: images, target_urls: targets } = parts;
  const counts = [titles.length, bodies.length, images.length, targets.length];
  const count = counts.reduce((a, b) => a * b, 1);
  if (count > VARIATIONS_MAX) throw new TooManyVariationsError(count, counts);
  return titles.flatMap((title) =>
    bodies.flatMap((body) =>
      images.flatMap((image) =>
        targets.map((target) => ({ title, body, source_image_url: image, target_url: target })),
      ),
    ),
  );
}
