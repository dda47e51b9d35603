/**
 * Planning a change: the object the operation would produce is built from the live object and
 * checked before anything is recorded, so a person never approves a change the platform would
 * refuse, or one that would change nothing. Each kind of platform object has its rules here.
 */
import { diffRows } from '@adsmcp/runtime/change-diff';
import { FailedPreconditionError, InvalidArgumentError } from '@adsmcp/runtime/errors';
import { showSpaces, withSpaceLegend } from '@adsmcp/runtime/text';
import { asciiHost, asciiUrl, hostWarning } from '@adsmcp/runtime/url-host';
import { checkAdGroup } from './ad-group-rules.ts';
import { checkAd } from './ad-rules.ts';
import { checkMerge, checkReplace } from './audience-rules.ts';
import { checkBulkJob, summarizeBulkJob } from './bulk-job-rules.ts';
import { checkConversionSource, checkEventSetting } from './conversion-rules.ts';
import { checkFeed } from './feed-rules.ts';

export type PlatformObject = Record<string, unknown>;

interface ObjectRules {
  /** How people call it ("ad", "ad group"). */
  label: string;
  /** Fields that are objects merged field by field: supplied fields replace, the others stay. */
  mergedFields: readonly string[];
  /**
   * Checks the object an update or a create would produce; `patch` says which fields the agent
   * supplied (for a create, every field) and `live` the object before an update (none for a create).
   */
  check(result: PlatformObject, patch: PlatformObject, live?: PlatformObject): void;
  /** The effects this object supports. */
  effects: readonly Effect[];
  /**
   * For `replace`: checks the operation against the live object (throwing what the platform
   * would refuse) and says what replaces the object's content, for the summary.
   */
  replace?(live: PlatformObject, body: PlatformObject): string;
  /** For a create whose body is too large to list field by field: the summary a person reads. */
  summarize?(body: PlatformObject, accountName: string): string;
  /**
   * What of the ad account the body names, each checked on the platform when the change is planned
   * (the platform would refuse a missing one only when the approved change is applied).
   */
  references?: readonly Reference[];
}

/**
 * Something of the ad account an object's body names, resolved when the change is planned:
 * - `creative-images`: the image each creative names (`creativesOf`): a platform file (`file_id`)
 *   the account must have, or a saved campaign asset (`asset_id`) pinned for review and uploaded
 *   on apply; a crop the change gives must be square in that image's pixels.
 * - `audiences`: the custom audiences the ids at `field` name, which must be the account's and live.
 * - `pixels`: the pixels the ids at `field` name, which must be the account's.
 * `effects`, when given, limits the reference to those effects.
 */
export type Reference =
  | { kind: 'creative-images'; effects?: readonly Effect[] }
  | { kind: 'audiences'; field: string; effects?: readonly Effect[] }
  | { kind: 'pixels'; field: string; effects?: readonly Effect[] };

/** An object kind's rules for one effect, as `rulesFor` resolves them. */
export type Rules = ObjectRules & { effect: Effect };

/**
 * What an operation does to its object. `update` merges the body into the live object; the status
 * effects move the live object to a status; `create` makes a new object from the body, with no
 * live object to read; `merge` is a create whose new object is made of existing ones (the body
 * names them); `replace` acts on the live object with a body that is an instruction (a member
 * file), not fields merged into it.
 */
export type Effect = 'update' | 'archive' | 'pause' | 'activate' | 'create' | 'merge' | 'replace';

/** Whether an effect is about an existing object, which is read live and re-read before apply. */
export function needsTarget(effect: Effect): boolean {
  return effect !== 'create' && effect !== 'merge';
}

/** The status each status effect leads to. */
const STATUS_OF: Partial<Record<Effect, string>> = {
  archive: 'archived',
  pause: 'paused',
  activate: 'active',
};

const OBJECTS: Record<string, ObjectRules> = {
  ad: {
    label: 'ad',
    mergedFields: ['creative'],
    check: checkAd,
    effects: ['update', 'archive'],
    references: [{ kind: 'creative-images' }],
  },
  ad_group: {
    label: 'ad group',
    mergedFields: ['bidding_config', 'product_set'],
    check: checkAdGroup,
    effects: ['create', 'update', 'archive', 'pause', 'activate'],
  },
  product_feed: { label: 'product feed', mergedFields: [], check: checkFeed, effects: ['archive'] },
  custom_audience: {
    label: 'custom audience',
    mergedFields: [],
    check: checkMerge,
    effects: ['replace', 'merge', 'archive'],
    replace: checkReplace,
    references: [{ kind: 'audiences', field: 'custom_audience_ids', effects: ['merge'] }],
  },
  conversion_source: {
    label: 'conversion source',
    mergedFields: [],
    check: checkConversionSource,
    effects: ['create'],
  },
  conversion_event_setting: {
    label: 'conversion event setting',
    mergedFields: [],
    check: checkEventSetting,
    effects: ['create'],
    references: [{ kind: 'pixels', field: 'source_ids' }],
  },
  bulk_mutation_job: {
    label: 'bulk mutation job',
    mergedFields: [],
    check: checkBulkJob,
    effects: ['create'],
    summarize: summarizeBulkJob,
    references: [{ kind: 'creative-images' }],
  },
};

/** The rules of `objectType` for `effect`, or an error naming what is supported. */
export function rulesFor(objectType: string, effect: string): Rules {
  const rules = OBJECTS[objectType];
  if (rules === undefined) {
    throw new InvalidArgumentError(
      `object_type must be one of ${Object.keys(OBJECTS).join(', ')} (got ${JSON.stringify(objectType)})`,
    );
  }
  if (!rules.effects.includes(effect as Effect)) {
    throw new InvalidArgumentError(`effect for ${rules.label} must be one of ${rules.effects.join(', ')}`);
  }
  return { ...rules, effect: effect as Effect };
}

/** The references `rules` declare for their effect. */
export function referencesOf(rules: Rules): readonly Reference[] {
  return (rules.references ?? []).filter((r) => r.effects === undefined || r.effects.includes(rules.effect));
}

/** checkTargetPath refuses a target where the effect makes a new object, and its absence elsewhere. */
export function checkTargetPath(rules: Rules, targetPath: string): void {
  if (needsTarget(rules.effect) === (targetPath !== '')) return;
  throw new InvalidArgumentError(
    needsTarget(rules.effect)
      ? `target_path is required to ${rules.effect} a ${rules.label}`
      : `target_path must be empty: a ${rules.effect} makes a new ${rules.label}`,
  );
}

function isObject(v: unknown): v is PlatformObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The object an update would produce: `patch` over `live`, merged fields field by field. */
export function mergePatch(live: PlatformObject, patch: PlatformObject, mergedFields: readonly string[]) {
  const result: PlatformObject = { ...live };
  for (const [k, v] of Object.entries(patch)) {
    const was = live[k];
    result[k] = mergedFields.includes(k) && isObject(v) && isObject(was) ? { ...was, ...v } : v;
  }
  return result;
}

/**
 * A value as the summary quotes it. Its spaces shown: a page would collapse "Sale  now " into
 * "Sale now". Each URL whose host is not plain ASCII written with its host in ASCII form (the
 * IDNA A-label), the Unicode form and the warning after it, never the Unicode form alone:
 * `"https://shop.xn--exmple-4nf.com/spring" (its host shop.xn--exmple-4nf.com is shown as
 * "shop.exаmple.com": mixed Latin and Cyrillic letters; looks like shop.example.com)`.
 */
function show(v: unknown): string {
  if (v === undefined) return '(unset)';
  const notes = new Set<string>();
  const json = JSON.stringify(typeof v === 'string' ? showSpaces(v) : v, (_key, x: unknown) => {
    const ascii = typeof x === 'string' ? asciiUrl(x) : undefined;
    const warning = ascii === undefined ? undefined : hostWarning(ascii);
    if (ascii === undefined || warning === undefined) return x;
    notes.add(`its host ${asciiHost(ascii) ?? ''} is ${warning}`);
    return ascii;
  });
  return notes.size === 0 ? json : `${json} (${[...notes].join('; ')})`;
}
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** How a person names the object: `ad "Spring Sale — Ad 1" (ad_0123…)`. */
function nameOf(label: string, live: PlatformObject): string {
  const id = String(live.id ?? '');
  return typeof live.name === 'string' ? `${label} "${showSpaces(live.name)}" (${id})` : `${label} ${id}`;
}

/**
 * The line for a creative given a campaign asset: the platform holds no asset_id, so the line says
 * what the ad's image is now and what replaces it, rather than "creative.asset_id (unset) → …".
 */
function newImageLine(live: PlatformObject, assetId: unknown): string {
  const now = isObject(live.creative) ? live.creative.file_id : undefined;
  return `creative image ${now === undefined ? '(none)' : `file ${show(now)}`} → campaign asset ${show(assetId)}, uploaded when the change is applied`;
}

export interface PlanInput {
  objectType: string;
  effect: string;
  /** The operation's body. */
  body: PlatformObject;
  /** The object as the platform has it now; none for a create. */
  live: PlatformObject | undefined;
  accountName: string;
}

/** A create (or merge): the new object is the body, checked whole, and summarised field by field. */
function planCreate(rules: Rules, body: PlatformObject, accountName: string): { summary: string } {
  rules.check(body, body);
  if (rules.summarize !== undefined) return { summary: rules.summarize(body, accountName) };
  const name = typeof body.name === 'string' ? ` "${showSpaces(body.name)}"` : '';
  const lines = diffRows({}, body)
    .filter((r) => r.field !== 'name')
    .map((r) => `${r.field} ${show(r.after)}`);
  const verb = rules.effect === 'merge' ? 'Merge into a new' : 'Create';
  return {
    summary: `${verb} ${rules.label}${name} on ${accountName}${lines.length ? `: ${lines.join('; ')}` : ''}`,
  };
}

/** A replace: refused on an archived object, checked against the live one by the object's rules. */
function planReplace(
  rules: ObjectRules,
  live: PlatformObject,
  body: PlatformObject,
  what: string,
  accountName: string,
): { summary: string } {
  if (live.status === 'archived') {
    throw new FailedPreconditionError(`${what} is archived; an archived ${rules.label} cannot be changed`);
  }
  if (rules.replace === undefined) throw new InvalidArgumentError(`a ${rules.label} has no replace`);
  return {
    summary: `Replace the members of ${what} on ${accountName} with those of ${rules.replace(live, body)}`,
  };
}

/** What planning an operation on an object gives: what a person reads, and what they review. */
export interface ObjectPlan {
  summary: string;
  /** The fields the applied object should have (resultOf). */
  reviewed: PlatformObject;
}

/**
 * planObject checks the operation against the live object by the object's `rules` and returns the
 * summary a person reads and the result they review, or throws: InvalidArgument for an object the
 * platform would refuse, FailedPrecondition for a change that would change nothing or cannot apply
 * to the object's state.
 */
export function planObject(rules: Rules, input: Omit<PlanInput, 'objectType' | 'effect'>): ObjectPlan {
  return {
    summary: withSpaceLegend(planned(rules, input).summary),
    reviewed: resultOf(rules, input.live, input.body),
  };
}

/** planObject for an object kind and effect named by the caller. */
export function planChange(input: PlanInput): ObjectPlan {
  return planObject(rulesFor(input.objectType, input.effect), input);
}

function planned(rules: Rules, input: Omit<PlanInput, 'objectType' | 'effect'>): { summary: string } {
  const { live } = input;
  if (!needsTarget(rules.effect)) return planCreate(rules, input.body, input.accountName);
  if (live === undefined)
    throw new InvalidArgumentError(`target_path is required to ${rules.effect} a ${rules.label}`);
  const what = nameOf(rules.label, live);
  if (rules.effect === 'replace') return planReplace(rules, live, input.body, what, input.accountName);
  const status = STATUS_OF[rules.effect];
  if (status !== undefined) {
    if (live.status === status) {
      throw new FailedPreconditionError(`nothing would change: ${what} is already ${status}`);
    }
    if (live.status === 'archived') {
      throw new FailedPreconditionError(`${what} is archived; an archived ${rules.label} cannot be changed`);
    }
    return {
      summary: `${rules.effect[0]?.toUpperCase()}${rules.effect.slice(1)} ${what} on ${input.accountName} (status ${show(live.status)} → ${show(status)})`,
    };
  }
  const patch = input.body;
  if (Object.keys(patch).length === 0) {
    throw new InvalidArgumentError('`body` must change at least one field');
  }
  // A merged field given as {} would change none of its fields, and leave the summary nothing to say.
  const empty = rules.mergedFields.find((k) => {
    const v = patch[k];
    return isObject(v) && Object.keys(v).length === 0;
  });
  if (empty !== undefined) {
    throw new InvalidArgumentError(
      `\`body.${empty}\` is empty: name at least one of its fields to change, or leave it out`,
    );
  }
  if (live.status === 'archived') {
    throw new FailedPreconditionError(`${what} is archived; an archived ${rules.label} cannot be changed`);
  }
  rules.check(mergePatch(live, patch, rules.mergedFields), patch, live);
  const rows = diffRows(live, patch);
  const changed = rows.filter((r) => !same(r.before, r.after));
  if (rows.length === 0) throw new InvalidArgumentError('`body` must change at least one field');
  if (changed.length === 0) {
    const already = rows.map((r) => `${r.field} is already ${show(r.before)}`).join('; ');
    throw new FailedPreconditionError(`nothing would change: ${already}`);
  }
  const lines = changed.map((r) =>
    r.field === 'creative.asset_id'
      ? newImageLine(live, r.after)
      : `${r.field} ${show(r.before)} → ${show(r.after)}`,
  );
  return { summary: `Update ${what} on ${input.accountName}: ${lines.join('; ')}` };
}

/**
 * What a person reviewed, as the fields the applied object should then have: an update's fields (a
 * merged field as merged into the live one), a status effect's status, a create's fields. Nothing
 * for a merge, a replace or a bulk job: the platform answers those with another object (an
 * operation, a job) than the one the body describes.
 */
function resultOf(rules: Rules, live: PlatformObject | undefined, body: PlatformObject): PlatformObject {
  const status = STATUS_OF[rules.effect];
  let result: PlatformObject = {};
  if (status !== undefined) result = { status };
  else if (rules.effect === 'update') {
    const merged = mergePatch(live ?? {}, body, rules.mergedFields);
    result = Object.fromEntries(Object.keys(body).map((k) => [k, merged[k]]));
  } else if (rules.effect === 'create' && rules.summarize === undefined) result = body;
  return result;
}

/** The reviewed result (resultOf) of an operation on an object kind named by the caller. */
export function reviewedResult(
  objectType: string,
  effect: string,
  live: PlatformObject | undefined,
  body: PlatformObject,
): PlatformObject {
  return resultOf(rulesFor(objectType, effect), live, body);
}

/** `v` as JSON with every object's keys in order, so equal values are equal text. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (isObject(v)) {
    const keys = Object.keys(v).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/**
 * Where the platform's answer to the applied call differs from what was reviewed, a line per
 * field ("name: reviewed "A", applied "B""). A field the answer does not show is not compared; an
 * object field is compared field by field, so one the platform adds is not a difference.
 */
export function appliedDifferences(reviewed: PlatformObject, answerJson: string): string[] {
  let answer: unknown;
  try {
    answer = JSON.parse(answerJson);
  } catch {
    return [];
  }
  if (!isObject(answer)) return [];
  const lines: string[] = [];
  const compare = (field: string, want: unknown, got: unknown) => {
    if (canonical(want) !== canonical(got))
      lines.push(`${field}: reviewed ${show(want)}, applied ${show(got)}`);
  };
  for (const [field, want] of Object.entries(reviewed)) {
    if (!(field in answer)) continue;
    const got = answer[field];
    if (isObject(want) && isObject(got)) {
      for (const [sub, w] of Object.entries(want)) if (sub in got) compare(`${field}.${sub}`, w, got[sub]);
    } else {
      compare(field, want, got);
    }
  }
  return lines;
}
