/**
 * A competitor source: a public page the workspace watches, its schedule and who may stop it.
 * The argument bounds are the tool's input schema, checked at the gateway; the rules here are
 * the save, revision, schedule and pause rules. They import no generated code and no pg.
 */
import { InvalidArgumentError, PermissionDeniedError, StaleRevisionError } from '@adsmcp/runtime/errors';
import { canonicalId, isUuid } from '@adsmcp/runtime/ids';
import { actorName, type Principal } from '@adsmcp/runtime/principal';
import { quotedStart } from './code-points.ts';
import type { Baseline } from './page-comparison.ts';
import { normaliseText } from './page-text.ts';

const HOUR_MS = 3_600_000;
/** A newly enabled source (or a new url) is first checked within this, so its baseline comes soon. */
export const FIRST_CHECK_WITHIN_MS = 60_000;
/** Jitter added to each scheduled check: up to a tenth of the interval, at most 15 minutes. */
export const JITTER_MAX_MS = 15 * 60_000;

export type Outcome = 'baseline' | 'unchanged' | 'changed' | 'refused' | 'failed';

/** The latest check, as the source keeps it for lists. */
export interface LastCheck {
  observationId: string;
  checkedAt: Date;
  outcome: Outcome;
  httpStatus: number | null;
  summary: string;
}

export interface CompetitorSource {
  sourceId: string;
  workspaceId: string;
  accountId: string;
  name: string;
  url: string;
  /** The URL's host, lowercased: politeness is per host. */
  host: string;
  literals: string[];
  intervalHours: number;
  enabled: boolean;
  pausedAt: Date | null;
  /** When the scheduler enqueues the next check; null while paused. */
  nextCheckAt: Date | null;
  createdBy: string;
  revision: number;
  createdAt: Date;
  updatedAt: Date;
  baselineAt: Date | null;
  baseline: Baseline | null;
  lastCheck: LastCheck | null;
}

export interface SaveInput {
  accountId: string;
  name: string;
  url: string;
  intervalHours: number;
  enabled: boolean;
  literals: string[];
  sourceId?: string | undefined;
  expectedRevision?: number | undefined;
}

export interface CheckedSave {
  accountId: string;
  name: string;
  url: string;
  host: string;
  intervalHours: number;
  enabled: boolean;
  literals: string[];
  update?: { sourceId: string; expectedRevision: number };
}

const quoted = quotedStart;

/** requireUuid throws an InvalidArgumentError naming `field` unless `value` is a UUID. */
export function requireUuid(field: string, value: string): void {
  if (!isUuid(value)) throw new InvalidArgumentError(`${field} must be a UUID (got ${quoted(value)})`);
}

/** hostOf parses a source URL (https, as the schema requires) and returns its lowercased host. */
export function hostOf(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidArgumentError(`url must be an absolute https URL (got ${quoted(url)})`);
  }
  if (parsed.protocol !== 'https:') throw new InvalidArgumentError(`url must use https (got ${quoted(url)})`);
  if (parsed.username || parsed.password) {
    throw new InvalidArgumentError('url must not contain a user name or password');
  }
  return parsed.hostname.toLowerCase();
}

/**
 * validateSave checks what no argument schema can state: the ids, the URL's parts, literals with
 * visible text and each phrase once, and that an update names the revision it was made from (and a create none).
 */
export function validateSave(input: SaveInput): CheckedSave {
  requireUuid('account_id', input.accountId);
  const host = hostOf(input.url);
  const seen = new Map<string, number>();
  input.literals.forEach((phrase, i) => {
    const normal = normaliseText(phrase);
    if (normal === '') {
      throw new InvalidArgumentError(`literals[${i}] must contain visible text, not only spaces`);
    }
    const earlier = seen.get(normal);
    if (earlier !== undefined) {
      throw new InvalidArgumentError(
        `literals[${i}] repeats literals[${earlier}]: phrases are found ignoring case and spacing, so each must differ in its words`,
      );
    }
    seen.set(normal, i);
  });
  const saved = {
    accountId: canonicalId(input.accountId),
    name: input.name,
    url: input.url,
    host,
    intervalHours: input.intervalHours,
    enabled: input.enabled,
    literals: input.literals,
  };
  const { sourceId, expectedRevision } = input;
  if (sourceId === undefined) {
    if (expectedRevision !== undefined) {
      throw new InvalidArgumentError(
        'expected_revision is only for updates: pass the source_id it belongs to, or omit expected_revision to create a new source',
      );
    }
    return saved;
  }
  requireUuid('source_id', sourceId);
  if (expectedRevision === undefined) {
    throw new InvalidArgumentError(
      'expected_revision is required when updating a source: ads_list_competitor_sources shows its current revision',
    );
  }
  return { ...saved, update: { sourceId, expectedRevision } };
}

/** firstCheckAt is when a newly enabled source is first checked: soon, spread over a minute. */
export function firstCheckAt(now: Date, random: () => number): Date {
  return new Date(now.getTime() + Math.floor(random() * FIRST_CHECK_WITHIN_MS));
}

/** nextCheckAt is one interval after `from`, plus jitter so that sources saved together drift apart. */
export function nextCheckAt(from: Date, intervalHours: number, random: () => number): Date {
  const interval = intervalHours * HOUR_MS;
  const jitter = Math.floor(random() * Math.min(interval / 10, JITTER_MAX_MS));
  return new Date(from.getTime() + interval + jitter);
}

/** newSource is the first revision of a checked create. */
export function newSource(
  save: CheckedSave,
  ids: { sourceId: string; workspaceId: string; createdBy: string },
  now: Date,
  random: () => number,
): CompetitorSource {
  return {
    ...ids,
    accountId: save.accountId,
    name: save.name,
    url: save.url,
    host: save.host,
    literals: save.literals,
    intervalHours: save.intervalHours,
    enabled: save.enabled,
    pausedAt: save.enabled ? null : now,
    nextCheckAt: save.enabled ? firstCheckAt(now, random) : null,
    revision: 1,
    createdAt: now,
    updatedAt: now,
    baselineAt: null,
    baseline: null,
    lastCheck: null,
  };
}

const sameLiterals = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((p, i) => p === b[i]);

/** The next check of a source that stays or becomes enabled by a save. */
function scheduleAfterSave(
  current: CompetitorSource,
  save: CheckedSave,
  newBaseline: boolean,
  now: Date,
  random: () => number,
) {
  if (!current.enabled || newBaseline || current.nextCheckAt === null) return firstCheckAt(now, random);
  if (save.intervalHours === current.intervalHours) return current.nextCheckAt;
  return nextCheckAt(current.lastCheck?.checkedAt ?? now, save.intervalHours, random);
}

/**
 * updatedSource applies a checked update: the caller must have read the current revision, and a
 * source stays with its ad account. A new url or new literals start a new baseline; enabling
 * schedules a check soon; disabling pauses it.
 */
export function updatedSource(
  current: CompetitorSource,
  save: CheckedSave,
  now: Date,
  random: () => number,
): CompetitorSource {
  if (save.update?.expectedRevision !== current.revision)
    throw new StaleRevisionError(current.revision, 'source');
  if (save.accountId !== current.accountId) {
    throw new InvalidArgumentError(
      `account_id cannot change: source ${current.sourceId} belongs to account ${current.accountId}; save a new source (without source_id) for account ${save.accountId}`,
    );
  }
  const newBaseline = save.url !== current.url || !sameLiterals(save.literals, current.literals);
  return {
    ...current,
    name: save.name,
    url: save.url,
    host: save.host,
    literals: save.literals,
    intervalHours: save.intervalHours,
    enabled: save.enabled,
    pausedAt: save.enabled ? null : (current.pausedAt ?? now),
    nextCheckAt: save.enabled ? scheduleAfterSave(current, save, newBaseline, now, random) : null,
    revision: current.revision + 1,
    updatedAt: now,
    ...(newBaseline ? { baselineAt: null, baseline: null } : {}),
  };
}

/**
 * requireOwnerOrAdmin allows changing a saved source (pausing it, or saving it anew: its url,
 * literals, schedule or enabled flag) to the member who created it and to workspace admins:
 * enabling it authorised recurring reads in their name, and only they may withdraw or redirect
 * that. Another editor saves a source of their own instead. `what` is the verb refused.
 */
export function requireOwnerOrAdmin(principal: Principal, source: CompetitorSource, what: string): void {
  if (principal.role === 'admin' || actorName(principal, 'member') === source.createdBy) return;
  throw new PermissionDeniedError(
    `only the member who created source ${source.sourceId} or a workspace admin may ${what}; this caller has role ${principal.role}`,
  );
}

/** requirePauser allows pausing a source to its creator and to workspace admins. */
export function requirePauser(principal: Principal, source: CompetitorSource): void {
  requireOwnerOrAdmin(principal, source, 'pause it');
}

/**
 * requireUpdater allows saving an existing source to its creator and to workspace admins, the
 * same members who may pause it: a save can disable it, or point its reads at another page.
 */
export function requireUpdater(principal: Principal, source: CompetitorSource): void {
  requireOwnerOrAdmin(
    principal,
    source,
    'change it (save your own source without source_id to watch a page yourself)',
  );
}

/** pausedSource stops future checks; a paused source is returned as it is (undefined). */
export function pausedSource(current: CompetitorSource, now: Date): CompetitorSource | undefined {
  if (!current.enabled) return undefined;
  return {
    ...current,
    enabled: false,
    pausedAt: now,
    nextCheckAt: null,
    revision: current.revision + 1,
    updatedAt: now,
  };
}
