/** The rules of a prepared change: what may be recorded, who may move it, and to where. */

import { createHash } from 'node:crypto';
import { AccessLevel } from '@adsmcp/proto/adsmcp/v1/access_pb';
import { accessNeeds, accessRefusal } from '@adsmcp/runtime/access-policy';
import { FailedPreconditionError, InvalidArgumentError, PermissionDeniedError } from '@adsmcp/runtime/errors';
import { isUuid } from '@adsmcp/runtime/ids';
import { MAX_PLATFORM_BODY_BYTES } from '@adsmcp/runtime/platform-limits';
import type { Principal } from '@adsmcp/runtime/principal';
import { appliedDifferences, type PlatformObject } from './plan.ts';
import { type Upload, uploadsDigestPart } from './uploads.ts';

export type ChangeStatus = 'prepared' | 'approved' | 'rejected' | 'applying' | 'applied' | 'failed';

export interface Operation {
  method: string;
  path: string;
  bodyJson: string;
}

/**
 * The digest of exactly what will be sent: method, path and the body's bytes, and the image of
 * each campaign asset the change uploads (its sha256, pinned when the change was prepared).
 */
export function digestOf(
  op: Operation,
  uploads: readonly Pick<Upload, 'asset_id' | 'sha256'>[] = [],
): string {
  return createHash('sha256')
    .update(`${op.method}\n${op.path}\n${op.bodyJson}${uploadsDigestPart(uploads)}`, 'utf8')
    .digest('hex');
}

const PATH = /^(\/[A-Za-z0-9_.:-]+)+$/;

function jsonObject(text: string, field: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new InvalidArgumentError(`${field} must be JSON text`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidArgumentError(`${field} must be a JSON object`);
  }
  return value as Record<string, unknown>;
}

/** The operation's body, which checkPrepare found to be a JSON object. */
export function bodyOf(op: Operation): Record<string, unknown> {
  return jsonObject(op.bodyJson, 'operation.body_json');
}

export interface PrepareInput {
  accountId: string;
  tool: string;
  operation: Operation;
  targetPath: string;
}

/** checkPrepare refuses a change that could not be applied as recorded. */
export function checkPrepare(input: PrepareInput): void {
  if (!isUuid(input.accountId)) throw new InvalidArgumentError('account_id must be a UUID');
  if (!/^ads_[a-z_]+$/.test(input.tool)) throw new InvalidArgumentError('tool must name the prepare tool');
  if (input.operation.method !== 'POST') throw new InvalidArgumentError('operation.method must be POST');
  for (const [field, path] of [
    ['operation.path', input.operation.path],
    ['target_path', input.targetPath],
  ] as const) {
    // A change that creates an object has no target to read.
    if (field === 'target_path' && path === '') continue;
    if (path.length > 2048 || !PATH.test(path))
      throw new InvalidArgumentError(`${field} must be a platform path such as /ads/ad_123`);
  }
  jsonObject(input.operation.bodyJson, 'operation.body_json');
  // Every field within its bounds may still make a body the platform would never take: refused
  // now, before a person reviews a change that could not be sent.
  const bytes = Buffer.byteLength(input.operation.bodyJson, 'utf8');
  if (bytes > MAX_PLATFORM_BODY_BYTES)
    throw new InvalidArgumentError(
      `body is ${bytes} bytes as JSON, over the ${MAX_PLATFORM_BODY_BYTES} bytes (1 MiB) the ad platform takes in ` +
        'one request: the change could never be sent; make it smaller (fewer or shorter items in its lists, ' +
        'such as context_hints or product_set filter values)',
    );
}

/**
 * The roles that may change an ad account (the policy's write access): those that may also decide
 * a change or settle its outcome, in person.
 */
const EDITING_ROLES = accessNeeds(AccessLevel.WRITE).roles;

/** The write access of the one policy (access-policy.ts), in its words, for `what` is done. */
function writeRefusal(p: Principal, what: string): string | undefined {
  return accessRefusal({ level: AccessLevel.WRITE, doing: what }, p);
}

function needWrite(p: Principal, what: string): void {
  const refusal = writeRefusal(p, what);
  if (refusal !== undefined) throw new PermissionDeniedError(refusal);
}

/** Why `p` may not prepare changes, or undefined when it may. */
export function prepareRefusal(p: Principal): string | undefined {
  return writeRefusal(p, 'preparing a change');
}

export function checkMayPrepare(p: Principal): void {
  needWrite(p, 'preparing a change');
}

export function checkMayApply(p: Principal): void {
  needWrite(p, 'applying a change');
  if (p.via === 'worker') throw new PermissionDeniedError('a worker cannot request an apply');
}

/** Approval and rejection belong to people: a signed-in person or an operator, never an agent. */
export function checkMayDecide(p: Principal): void {
  if (p.via !== 'dashboard' && p.via !== 'operator') {
    throw new PermissionDeniedError(
      'changes are approved or rejected by a person in the dashboard, not through an MCP client',
    );
  }
  if (!EDITING_ROLES.includes(p.role)) {
    throw new PermissionDeniedError(`the role "${p.role}" may not approve or reject changes`);
  }
}

/** Why a change in `status` cannot be approved, or undefined when it can. */
export function decisionRefusal(status: ChangeStatus): string | undefined {
  return status === 'prepared'
    ? undefined
    : `the change is ${status}; only a prepared change can be approved`;
}

/**
 * Why a change in `status` cannot be rejected, or undefined when it can: a prepared change, and
 * an approved one nobody asked to apply yet (its approval is withdrawn: nothing was sent).
 */
export function rejectionRefusal(status: ChangeStatus): string | undefined {
  return status === 'prepared' || status === 'approved'
    ? undefined
    : `the change is ${status}; only a prepared change, or an approved one not yet being applied, can be rejected`;
}

/** How a person settles a change whose outcome is unknown (ResolveChange). */
export const RESOLUTIONS = ['send_again', 'applied', 'not_applied'] as const;
export type Resolution = (typeof RESOLUTIONS)[number];

/**
 * Whether a change failed with its outcome unknown: it was sent to the platform, and no answer of
 * the platform was recorded (it did not answer, or the last attempt could not reach it), and no
 * person found it not applied (a person who found it applied made it applied). It may have been
 * applied; sent again with its idempotency key, it is applied at most once.
 */
export function outcomeUnknown(c: {
  status: ChangeStatus;
  sent_at: Date | null;
  upstream_status: number | null;
  resolution?: string | null;
}): boolean {
  return (
    c.status === 'failed' &&
    c.sent_at !== null &&
    c.upstream_status === null &&
    c.resolution !== 'not_applied'
  );
}

/** Settling an outcome belongs to people, as approval does (checkMayDecide), never an agent. */
export function checkMaySettle(p: Principal): void {
  if (p.via !== 'dashboard' && p.via !== 'operator') {
    throw new PermissionDeniedError(
      'the outcome of a change is settled by a person in the dashboard or by an operator command, not through an MCP client',
    );
  }
  if (!EDITING_ROLES.includes(p.role)) {
    throw new PermissionDeniedError(`the role "${p.role}" may not settle the outcome of a change`);
  }
}

/** The resolution asked for, or an error naming the field and its values. */
export function parseResolution(text: string): Resolution {
  if ((RESOLUTIONS as readonly string[]).includes(text)) return text as Resolution;
  throw new InvalidArgumentError(
    `resolution must be one of ${RESOLUTIONS.join(', ')} (got ${JSON.stringify(text.slice(0, 40))})`,
  );
}

/**
 * Why a change cannot be settled, or undefined when it can: only a change whose outcome is
 * unknown has anything to settle.
 */
export function settleRefusal(c: {
  status: ChangeStatus;
  sent_at: Date | null;
  upstream_status: number | null;
  resolution: string | null;
}): string | undefined {
  if (outcomeUnknown(c)) return undefined;
  const why =
    c.status !== 'failed'
      ? `the change is ${c.status}`
      : c.resolution === 'not_applied'
        ? 'the change is failed, and a person already found it not applied'
        : c.sent_at === null
          ? 'the change is failed, and it was never sent to the ad platform'
          : `the change is failed, and the platform answered it (HTTP ${c.upstream_status ?? 0})`;
  return `${why}; only a change whose apply outcome is unknown (failed after it was sent, with no answer from the platform) can be settled`;
}

/** The error a change found not applied keeps: the earlier failure, and that a person settled it. */
export function notAppliedError(earlier: string | null): string {
  // What went wrong, without the advice to send it again that no longer holds.
  const why =
    (earlier ?? '')
      .split(/\. The outcome is unknown|; the change may or may not have been applied/)[0]
      ?.trim() ?? '';
  return `not applied: a person checked the ad platform and found the change not there, so it is not sent again; prepare a new change if it is still wanted${why === '' ? '' : ` (the earlier attempt: ${why})`}`;
}

/**
 * How long after it was first sent a change whose outcome is unknown may be sent again with its
 * idempotency key. Platforms keep a key for a limited time (a day is usual); sent again after the
 * platform forgot it, a create that had landed would be made twice.
 */
export const RESEND_WITHIN_HOURS = 24;

/**
 * Whether a change whose outcome is unknown may be sent again at `now`: undefined when its
 * outcome is known (or it was never sent), 'resend' within RESEND_WITHIN_HOURS of its first
 * send, and 'too late' after.
 */
export function unknownOutcomeResend(
  c: {
    status: ChangeStatus;
    sent_at: Date | null;
    upstream_status: number | null;
    resolution?: string | null;
  },
  now: Date,
): 'resend' | 'too late' | undefined {
  if (!outcomeUnknown(c) || c.sent_at === null) return undefined;
  return now.getTime() - c.sent_at.getTime() < RESEND_WITHIN_HOURS * 3_600_000 ? 'resend' : 'too late';
}

/**
 * Why a change in `status` cannot be applied, or undefined when it can (or already is being). A
 * failed change whose outcome is unknown can be applied again while `unknownOutcome` says
 * 'resend' (unknownOutcomeResend).
 */
export function applyRefusal(
  status: ChangeStatus,
  appliedAt: string | null,
  unknownOutcome?: 'resend' | 'too late',
): string | undefined {
  switch (status) {
    case 'approved':
    case 'applying':
      return undefined;
    case 'prepared':
      return 'the change is not approved yet: a person must approve it in the dashboard before it can be applied';
    case 'rejected':
      return 'the change was rejected and cannot be applied; prepare a new change if it is still wanted';
    case 'applied':
      return `the change was already applied${appliedAt ? ` at ${appliedAt}` : ''}; it is applied once`;
    case 'failed':
      if (unknownOutcome === 'resend') return undefined;
      return unknownOutcome === 'too late'
        ? `whether the change was applied is not known, and it was first sent more than ${RESEND_WITHIN_HOURS} hours ago, after which the ad platform may no longer recognise its idempotency key; it is not sent again: read the object, and prepare a new change if it is still wanted`
        : 'the change failed when it was applied (see its error); prepare a new change';
  }
}

/** How long changes stay usable when a workspace set nothing. */
export const DEFAULT_EXPIRY: ExpiryHours = { preparedValidHours: 72, approvalValidHours: 24 };

/** The bounds of both settings: an hour at least, thirty days at most. */
export const EXPIRY_HOURS_RANGE = { min: 1, max: 720 } as const;

/** A workspace's expiry settings (ExpirySettings): hours after prepare, and after approval. */
export interface ExpiryHours {
  preparedValidHours: number;
  approvalValidHours: number;
}

/** Refuses a setting out of range, naming the field and the rule. */
export function checkExpiryHours(h: ExpiryHours): void {
  for (const [field, value] of [
    ['prepared_valid_hours', h.preparedValidHours],
    ['approval_valid_hours', h.approvalValidHours],
  ] as const) {
    if (!Number.isInteger(value) || value < EXPIRY_HOURS_RANGE.min || value > EXPIRY_HOURS_RANGE.max)
      throw new InvalidArgumentError(
        `${field} must be a whole number of hours from ${EXPIRY_HOURS_RANGE.min} to ${EXPIRY_HOURS_RANGE.max} (got ${value})`,
      );
  }
}

/** Setting how long changes stay usable belongs to a workspace admin, in person (as approval does). */
export function checkMaySetExpiry(p: Principal): void {
  if (p.via !== 'dashboard' && p.via !== 'operator') {
    throw new PermissionDeniedError(
      'how long changes stay usable is set by a workspace admin in the dashboard, not through an MCP client',
    );
  }
  if (p.role !== 'admin') {
    throw new PermissionDeniedError(
      `the role "${p.role}" may not set how long changes stay usable; an admin may`,
    );
  }
}

/**
 * When a change stops being usable if nobody acts: a prepared change its hours after it was
 * prepared, an approved one (no apply asked for) its hours after approval. Undefined for every
 * other status: an apply request uses the approval, and the apply worker's own bound takes over.
 */
export function expiresAt(
  c: { status: ChangeStatus; prepared_at: Date; approved_at: Date | null },
  h: ExpiryHours,
): Date | undefined {
  if (c.status === 'prepared') return new Date(c.prepared_at.getTime() + h.preparedValidHours * 3_600_000);
  if (c.status === 'approved' && c.approved_at !== null)
    return new Date(c.approved_at.getTime() + h.approvalValidHours * 3_600_000);
  return undefined;
}

/** The status a reader sees: `expired` for a prepared or approved change past its expiry. */
export function shownStatus(
  c: { status: ChangeStatus; prepared_at: Date; approved_at: Date | null },
  h: ExpiryHours,
  now: Date,
): ChangeStatus | 'expired' {
  const at = expiresAt(c, h);
  return at !== undefined && now.getTime() >= at.getTime() ? 'expired' : c.status;
}

/** Why a change cannot be approved or applied because it expired, or undefined when it has not. */
export function expiryRefusal(
  c: { status: ChangeStatus; prepared_at: Date; approved_at: Date | null },
  h: ExpiryHours,
  now: Date,
): string | undefined {
  const at = expiresAt(c, h);
  if (at === undefined || now.getTime() < at.getTime()) return undefined;
  return c.status === 'prepared'
    ? `the change expired at ${at.toISOString()}: nobody approved it within ${h.preparedValidHours} hours of its preparation (the workspace's setting); it can no longer be approved or applied: prepare it again if it is still wanted`
    : `the change expired at ${at.toISOString()}: its approval was not followed by an apply request within ${h.approvalValidHours} hours (the workspace's setting); it can no longer be applied: prepare it again if it is still wanted`;
}

export function refuse(message: string | undefined): void {
  if (message !== undefined) throw new FailedPreconditionError(message);
}

/**
 * The stale-plan check at apply time: the object must still be at the revision it had when the
 * change was reviewed. Objects without a revision are not checked.
 */
export function staleTarget(beforeJson: string, liveJson: string): string | undefined {
  const before = (JSON.parse(beforeJson) as { revision?: unknown }).revision;
  const live = (JSON.parse(liveJson) as { revision?: unknown }).revision;
  if (typeof before !== 'number') return undefined;
  if (live !== before) {
    return `the object changed since this change was prepared (revision ${before}, now ${String(live)}); prepare a new change against its current state`;
  }
  return undefined;
}

/**
 * Why a change whose earlier send has an unknown outcome may not be sent again now, or undefined
 * when it may. Sent again with its key, a change the platform applied is replayed, not repeated;
 * one it did not apply is applied now, so the object must still be as it was reviewed (its
 * revision has not moved), or already show every field the change sets (`reviewed`): the earlier
 * send landed, or the object already holds what was reviewed. Otherwise something else changed it
 * meanwhile, which a change sent now would overwrite.
 */
export function resendRefusal(
  beforeJson: string,
  reviewed: PlatformObject,
  liveJson: string,
): string | undefined {
  if (staleTarget(beforeJson, liveJson) === undefined) return undefined;
  if (appliedDifferences(reviewed, liveJson).length === 0) return undefined;
  return (
    'the object changed since this change was prepared, and whether its earlier attempt was applied is not ' +
    'known; nothing was sent again: read the object, and prepare a new change if it is still wanted'
  );
}
