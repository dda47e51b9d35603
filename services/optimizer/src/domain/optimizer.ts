/**
 * An optimizer: which campaigns of an ad account to review, how often, on what evidence, and
 * within which limits to propose new ads. The rules here are the spec's "Optimizer
 * configuration" and the save, pause and list rules; they import no generated code and no pg.
 */

import { InvalidArgumentError, StaleRevisionError } from '@adsmcp/runtime/errors';
import { HOSTNAME, HOSTNAME_HINT, isUuid } from '@adsmcp/runtime/ids';

export const GOALS = ['cpc', 'cpa', 'ctr'] as const;
export type Goal = (typeof GOALS)[number];

export interface OptimizerConfig {
  campaignIds: string[];
  goal: Goal;
  conversionGoalId?: string;
  target?: number;
  cadenceHours: number;
  windowHours: number;
  reportingDelayHours: number;
  minImpressions: number;
  minClicks: number;
  minConversions: number;
  maxAdsPerCampaign: number;
  reviewHours: number;
  publishHours: number;
  brandInstructions?: string;
  allowedDomains: string[];
}

export type OptimizerStatus = 'active' | 'paused';

export interface Optimizer {
  optimizerId: string;
  workspaceId: string;
  accountId: string;
  name: string;
  config: OptimizerConfig;
  /** Always `pausedAt === null`: an optimizer is either enabled or paused. */
  enabled: boolean;
  /** When it stopped being enabled (paused, or saved disabled); null while enabled. */
  pausedAt: Date | null;
  /** When the next review is due; null while paused. */
  nextReviewAt: Date | null;
  revision: number;
  createdAt: Date;
  updatedAt: Date;
}

/** A save as the caller asked for it, before any rule was checked. */
export interface SaveInput {
  accountId: string;
  name: string;
  /** Undefined when the request carried none. */
  config: UncheckedConfig | undefined;
  enabled: boolean;
  optimizerId?: string | undefined;
  expectedRevision?: number | undefined;
}

/** A configuration as it arrived: every field of the right type, no rule checked yet. */
export type UncheckedConfig = Omit<OptimizerConfig, 'goal'> & { goal: string };

/** A save whose every rule holds. */
export interface CheckedSave {
  accountId: string;
  name: string;
  config: OptimizerConfig;
  enabled: boolean;
  /** Present for an update, with the revision the caller read. */
  update?: { optimizerId: string; expectedRevision: number };
}

export const NAME_MAX = 200;
export const REVISION_MAX = 1_000_000;
export const LIST_LIMIT_DEFAULT = 20;
export const LIST_LIMIT_MAX = 100;
export const LIST_OFFSET_MAX = 100_000;
const HOUR_MS = 3_600_000;

export { HOSTNAME, HOSTNAME_HINT };

/** Integer fields of the configuration and their inclusive bounds. */
export const INTEGER_BOUNDS = {
  cadence_hours: [6, 720],
  window_hours: [24, 744],
  reporting_delay_hours: [24, 168],
  min_impressions: [1, 10_000_000],
  min_clicks: [1, 1_000_000],
  min_conversions: [1, 1_000_000],
  max_ads_per_campaign: [1, 5],
  review_hours: [1, 72],
  publish_hours: [1, 24],
} as const satisfies Record<string, readonly [number, number]>;

export const TARGET_MAX = 1_000_000;
export const BRAND_INSTRUCTIONS_MAX = 12_000;
export const CAMPAIGN_IDS = { minItems: 1, maxItems: 20, maxLength: 255 } as const;
export const ALLOWED_DOMAINS = { minItems: 1, maxItems: 30, maxLength: 253 } as const;
export const CONVERSION_GOAL_ID_MAX = 255;

/** Length in Unicode code points, as the tool schemas count it. */
const length = (s: string) => [...s].length;

const quoted = (s: string) => JSON.stringify(s.length > 40 ? `${s.slice(0, 40)}…` : s);

export { isUuid };

/** requireUuid throws an InvalidArgumentError naming `field` unless `value` is a UUID. */
export function requireUuid(field: string, value: string): void {
  if (!isUuid(value)) throw new InvalidArgumentError(`${field} must be a UUID (got ${quoted(value)})`);
}

function checkInteger(field: keyof typeof INTEGER_BOUNDS, value: number): void {
  const [min, max] = INTEGER_BOUNDS[field];
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new InvalidArgumentError(`config.${field} must be an integer from ${min} to ${max} (got ${value})`);
  }
}

/** Checks a list of unique, bounded strings, naming the first item that breaks a rule. */
function checkList(
  field: string,
  items: readonly string[],
  bounds: { minItems: number; maxItems: number; maxLength: number },
  itemRule?: { test(item: string): boolean; hint: string },
): void {
  if (items.length < bounds.minItems || items.length > bounds.maxItems) {
    throw new InvalidArgumentError(
      `config.${field} must have ${bounds.minItems} to ${bounds.maxItems} items (got ${items.length})`,
    );
  }
  const seen = new Set<string>();
  for (const [i, item] of items.entries()) {
    const at = `config.${field}[${i}]`;
    const n = length(item);
    if (n < 1 || n > bounds.maxLength) {
      throw new InvalidArgumentError(`${at} must be 1 to ${bounds.maxLength} characters (got ${n})`);
    }
    if (itemRule !== undefined && !itemRule.test(item)) {
      throw new InvalidArgumentError(`${at} must be ${itemRule.hint} (got ${quoted(item)})`);
    }
    if (seen.has(item)) {
      throw new InvalidArgumentError(`${at} repeats ${quoted(item)}; items must be unique`);
    }
    seen.add(item);
  }
}

/**
 * validateConfig checks every rule of an optimizer configuration and returns it typed; it
 * throws an InvalidArgumentError naming the first field (or list item) that breaks one.
 */
export function validateConfig(c: UncheckedConfig): OptimizerConfig {
  checkList('campaign_ids', c.campaignIds, CAMPAIGN_IDS);
  const goal = GOALS.find((g) => g === c.goal);
  if (goal === undefined) {
    throw new InvalidArgumentError(`config.goal must be one of ${GOALS.join(', ')} (got ${quoted(c.goal)})`);
  }
  if (c.conversionGoalId !== undefined) {
    const n = length(c.conversionGoalId);
    if (n < 1 || n > CONVERSION_GOAL_ID_MAX) {
      throw new InvalidArgumentError(
        `config.conversion_goal_id must be 1 to ${CONVERSION_GOAL_ID_MAX} characters (got ${n})`,
      );
    }
  }
  if (c.target !== undefined && !(Number.isFinite(c.target) && c.target > 0 && c.target <= TARGET_MAX)) {
    throw new InvalidArgumentError(
      `config.target must be a number greater than 0 and at most ${TARGET_MAX} (got ${c.target})`,
    );
  }
  checkInteger('cadence_hours', c.cadenceHours);
  checkInteger('window_hours', c.windowHours);
  checkInteger('reporting_delay_hours', c.reportingDelayHours);
  checkInteger('min_impressions', c.minImpressions);
  checkInteger('min_clicks', c.minClicks);
  checkInteger('min_conversions', c.minConversions);
  checkInteger('max_ads_per_campaign', c.maxAdsPerCampaign);
  checkInteger('review_hours', c.reviewHours);
  checkInteger('publish_hours', c.publishHours);
  if (c.brandInstructions !== undefined && length(c.brandInstructions) > BRAND_INSTRUCTIONS_MAX) {
    throw new InvalidArgumentError(
      `config.brand_instructions must be at most ${BRAND_INSTRUCTIONS_MAX} characters (got ${length(c.brandInstructions)})`,
    );
  }
  checkList('allowed_domains', c.allowedDomains, ALLOWED_DOMAINS, {
    test: (d) => HOSTNAME.test(d),
    hint: HOSTNAME_HINT,
  });
  return { ...c, goal };
}

/**
 * validateSave checks a save request: the account, the name, the configuration, and that an
 * update names the revision it was made from (and a create names none).
 */
export function validateSave(input: SaveInput): CheckedSave {
  requireUuid('account_id', input.accountId);
  const n = length(input.name);
  if (n < 1 || n > NAME_MAX) {
    throw new InvalidArgumentError(`name must be 1 to ${NAME_MAX} characters (got ${n})`);
  }
  if (input.config === undefined) {
    throw new InvalidArgumentError('config is required: the optimizer configuration');
  }
  const config = validateConfig(input.config);
  const saved = { accountId: input.accountId, name: input.name, config, enabled: input.enabled };
  const { optimizerId, expectedRevision } = input;
  if (optimizerId === undefined) {
    if (expectedRevision !== undefined) {
      // Most likely an update whose optimizer_id was forgotten: creating would duplicate it.
      throw new InvalidArgumentError(
        'expected_revision is only for updates: pass the optimizer_id it belongs to, or omit expected_revision to create a new optimizer',
      );
    }
    return saved;
  }
  requireUuid('optimizer_id', optimizerId);
  if (expectedRevision === undefined) {
    throw new InvalidArgumentError(
      'expected_revision is required when updating an optimizer: get it for its current revision',
    );
  }
  if (!Number.isInteger(expectedRevision) || expectedRevision < 1 || expectedRevision > REVISION_MAX) {
    throw new InvalidArgumentError(
      `expected_revision must be an integer from 1 to ${REVISION_MAX} (got ${expectedRevision})`,
    );
  }
  return { ...saved, update: { optimizerId, expectedRevision } };
}

/** statusOf says whether the optimizer is reviewing (active) or stopped (paused). */
export function statusOf(o: Pick<Optimizer, 'enabled'>): OptimizerStatus {
  return o.enabled ? 'active' : 'paused';
}

const nextReview = (enabled: boolean, config: OptimizerConfig, now: Date): Date | null =>
  enabled ? new Date(now.getTime() + config.cadenceHours * HOUR_MS) : null;

/** newOptimizer is the first revision of a checked create, as of `now`. */
export function newOptimizer(
  save: CheckedSave,
  ids: { optimizerId: string; workspaceId: string },
  now: Date,
): Optimizer {
  return {
    ...ids,
    accountId: save.accountId,
    name: save.name,
    config: save.config,
    enabled: save.enabled,
    pausedAt: save.enabled ? null : now,
    nextReviewAt: nextReview(save.enabled, save.config, now),
    revision: 1,
    createdAt: now,
    updatedAt: now,
  };
}

/**
 * updatedOptimizer applies a checked update to the current record: the caller must have read
 * the current revision, and an optimizer stays with the ad account it was made for (its
 * campaigns, runs and proposals belong to that account). A save that enables it resumes it; one
 * that disables it pauses it, keeping the time it was first paused.
 */
export function updatedOptimizer(current: Optimizer, save: CheckedSave, now: Date): Optimizer {
  const expected = save.update?.expectedRevision;
  if (expected !== current.revision) throw new StaleRevisionError(current.revision, 'optimizer');
  if (save.accountId !== current.accountId) {
    throw new InvalidArgumentError(
      `account_id cannot change: optimizer ${current.optimizerId} belongs to account ${current.accountId}; save a new optimizer (without optimizer_id) for account ${save.accountId}`,
    );
  }
  return {
    ...current,
    name: save.name,
    config: save.config,
    enabled: save.enabled,
    pausedAt: save.enabled ? null : (current.pausedAt ?? now),
    nextReviewAt: nextReview(save.enabled, save.config, now),
    revision: current.revision + 1,
    updatedAt: now,
  };
}

/**
 * pausedOptimizer stops future reviews. Pausing needs nothing else to hold; an optimizer that is
 * already paused is returned as it is (undefined: nothing to write).
 */
export function pausedOptimizer(current: Optimizer, now: Date): Optimizer | undefined {
  if (!current.enabled) return undefined;
  return {
    ...current,
    enabled: false,
    pausedAt: now,
    nextReviewAt: null,
    revision: current.revision + 1,
    updatedAt: now,
  };
}

export interface Page {
  limit: number;
  offset: number;
}

/** pageOf checks a list page, defaulting limit to 20 and offset to 0. */
export function pageOf(limit: number | undefined, offset: number | undefined): Page {
  const l = limit ?? LIST_LIMIT_DEFAULT;
  const o = offset ?? 0;
  if (!Number.isInteger(l) || l < 1 || l > LIST_LIMIT_MAX) {
    throw new InvalidArgumentError(`limit must be an integer from 1 to ${LIST_LIMIT_MAX} (got ${l})`);
  }
  if (!Number.isInteger(o) || o < 0 || o > LIST_OFFSET_MAX) {
    throw new InvalidArgumentError(`offset must be an integer from 0 to ${LIST_OFFSET_MAX} (got ${o})`);
  }
  return { limit: l, offset: o };
}

/**
 * nextOffsetOf is the offset of the page after `page`, or undefined when `page` is the last (or
 * the next would start beyond the largest offset a list accepts).
 */
export function nextOffsetOf(page: Page, returned: number, total: number): number | undefined {
  const next = page.offset + returned;
  return returned > 0 && next < total && next <= LIST_OFFSET_MAX ? next : undefined;
}
