/**
 * The content of a marketing item: one of six shapes, chosen by the item's kind, each with the
 * spec's bounds and enumerations and no properties beyond those it lists.
 */
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import { check, isObject, list, object, oneOf, type Shape, summarize, text } from './rules.ts';

export const KINDS = ['brand', 'brief', 'playbook', 'inspiration', 'batch', 'creative'] as const;
export type Kind = (typeof KINDS)[number];

/** An item's data once validated: a JSON object in the shape of its kind. */
export type ItemData = Record<string, unknown>;

/** Every URL in item data is https and at most this long, as the spec's website is. */
const URL_MAX = 2048;
const httpsUrl = text(URL_MAX, { format: 'https-url' });
const uuid = text(36, { format: 'uuid' });

export const EVIDENCE = ['general_guidance', 'account_results', 'hypothesis'] as const;
export const OBSERVED_STATUSES = ['observed', 'no_longer_observed'] as const;

/** One variant of a batch: the copy, destination and image of one ad. */
export const BATCH_VARIANT: Shape = {
  label: 'batch variant',
  required: {
    title: text(50, { min: 3 }),
    body: text(100),
    target_url: httpsUrl,
    source_image_url: httpsUrl,
  },
  optional: { hook: text(200), offer: text(200) },
};

/** The data shape each kind requires. */
export const SHAPES: Readonly<Record<Kind, Shape>> = {
  brand: {
    label: 'voice profile',
    required: {
      voice: text(5000),
      audience: text(5000),
      approved_claims: text(5000),
      restrictions: text(5000),
    },
    optional: { website: httpsUrl },
  },
  brief: {
    label: 'brief',
    required: {
      product: text(5000),
      audience: text(5000),
      offer: text(5000),
      objective: text(5000),
      landing_page: httpsUrl,
      constraints: text(5000),
    },
    optional: { reference_ids: list(uuid, { max: 50 }) },
  },
  playbook: {
    label: 'guidance',
    required: { guidance: text(20000, { min: 1 }), evidence: oneOf(EVIDENCE) },
    optional: { source_url: httpsUrl },
  },
  inspiration: {
    label: 'observed example',
    required: {
      brand: text(200, { min: 1 }),
      source_url: httpsUrl,
      observed_at: text(64, { format: 'date-time' }),
      status: oneOf(OBSERVED_STATUSES),
      copy: text(5000),
    },
    optional: {
      industry: text(200),
      format: text(100),
      hook: text(500),
      offer: text(500),
      notes: text(5000),
    },
  },
  batch: {
    label: 'batch',
    required: { variants: list(object(BATCH_VARIANT), { min: 1, max: 100 }) },
    optional: { brief_id: uuid },
  },
  creative: {
    label: 'creative label',
    required: {
      account_id: uuid,
      ad_id: text(255, { min: 1 }),
      hook: text(200),
      offer: text(200),
    },
    optional: { brief_id: uuid, notes: text(5000) },
  },
};

const RULES: Readonly<Record<Kind, ReturnType<typeof object>>> = {
  brand: object(SHAPES.brand),
  brief: object(SHAPES.brief),
  playbook: object(SHAPES.playbook),
  inspiration: object(SHAPES.inspiration),
  batch: object(SHAPES.batch),
  creative: object(SHAPES.creative),
};

/** The messages of everything wrong with `data` as the data of a `kind` item (empty when valid). */
export function dataIssues(kind: Kind, data: unknown): string[] {
  return check(RULES[kind], data, 'data');
}

/** The kind whose shape `data` has, if any. */
function kindShaped(data: unknown): Kind | undefined {
  return KINDS.find((k) => dataIssues(k, data).length === 0);
}

/**
 * validateItemData returns `data` when it is a valid data object for a `kind` item; otherwise it
 * throws an InvalidArgumentError naming each path and rule broken, and, when the data is a
 * valid shape of another kind, saying so.
 */
export function validateItemData(kind: Kind, data: unknown): ItemData {
  const issues = dataIssues(kind, data);
  if (issues.length === 0 && isObject(data)) return data;
  const shape = SHAPES[kind];
  const other = kindShaped(data);
  if (other !== undefined) {
    throw new InvalidArgumentError(
      `data is a ${SHAPES[other].label} (the data of a ${other} item), but kind is ${kind}, whose data is a ${shape.label} ` +
        `with ${Object.keys(shape.required).join(', ')}; set kind to ${other} or send a ${shape.label}`,
    );
  }
  throw new InvalidArgumentError(summarize(issues));
}
