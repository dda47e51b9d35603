/**
 * An optimizer: which campaigns of an ad account to review, how often, on what evidence, and
 * within which limits to propose new ads. The configuration's field bounds are its proto's rules
 * (proto/optimizer/v1/optimizer.proto), which the server checks for every caller before a handler
 * runs; the rules here are the save, revision, pause and list rules.
 * They import no generated code and no pg.
 */

import { InvalidArgumentError, StaleRevisionError } from '@adsmcp/runtime/errors';
import { isUuid } from '@adsmcp/runtime/ids';

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

/** A save as the caller asked for it, within the tool's argument bounds. */
export interface SaveInput {
  accountId: string;
  name: string;
  /** Undefined when the request carried none. */
  config: UncheckedConfig | undefined;
  enabled: boolean;
  optimizerId?: string | undefined;
  expectedRevision?: number | undefined;
}

/** A configuration as it arrived: the goal is still the string the request carried. */
export type UncheckedConfig = Omit<OptimizerConfig, 'goal'> & { goal: string };

/** A save whose every domain rule holds. */
export interface CheckedSave {
  accountId: string;
  name: string;
  config: OptimizerConfig;
  enabled: boolean;
  /** Present for an update, with the revision the caller read. */
  update?: { optimizerId: string; expectedRevision: number };
}

const HOUR_MS = 3_600_000;

/** `s` quoted for a message, cut after 40 characters (code points: never half an emoji). */
function quoted(s: string): string {
  const points = [...s];
  return JSON.stringify(points.length > 40 ? `${points.slice(0, 40).join('')}…` : s);
}

/**
 * canonicalUuid returns `value` in the one form the optimizer stores and compares UUIDs in (lower
 * case, as PostgreSQL's uuid type gives them back), or throws an InvalidArgumentError naming
 * `field` unless it is a UUID. UUIDs are case-insensitive: every UUID a caller sends (ids, claim
 * tokens, asset ids) goes through here before it is compared or kept.
 */
export function canonicalUuid(field: string, value: string): string {
  if (!isUuid(value)) throw new InvalidArgumentError(`${field} must be a UUID (got ${quoted(value)})`);
  return value.toLowerCase();
}

/**
 * validateSave checks the rules of a save that no argument schema can state: the ids it names,
 * that it carries a configuration, and that an update names the revision it was made from (and
 * a create names none). The server has already checked every field against the proto's rules.
 */
export function validateSave(input: SaveInput): CheckedSave {
  const accountId = canonicalUuid('account_id', input.accountId);
  if (input.config === undefined) {
    throw new InvalidArgumentError('config is required: the optimizer configuration');
  }
  // The proto's rules refused any goal but cpc, cpa or ctr; the type cannot say so.
  const config = { ...input.config, goal: input.config.goal as Goal };
  const saved = { accountId, name: input.name, config, enabled: input.enabled };
  const { expectedRevision } = input;
  if (input.optimizerId === undefined) {
    if (expectedRevision !== undefined) {
      // Most likely an update whose optimizer_id was forgotten: creating would duplicate it.
      throw new InvalidArgumentError(
        'expected_revision is only for updates: pass the optimizer_id it belongs to, or omit expected_revision to create a new optimizer',
      );
    }
    return saved;
  }
  const optimizerId = canonicalUuid('optimizer_id', input.optimizerId);
  if (expectedRevision === undefined) {
    throw new InvalidArgumentError(
      'expected_revision is required when updating an optimizer: get it for its current revision',
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
