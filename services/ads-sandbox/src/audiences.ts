/**
 * Custom audiences and the operations that fill them. The platform never shows members and never
 * an exact count: a matched count is shown rounded to two significant figures, or only as a
 * power-of-ten range, and not at all below a thousand. An operation's state follows from its age
 * on the sandbox clock: pending, then processing, then completed.
 */
import { sha256Hex } from './ids.ts';

export const INTENDED_USES = ['inclusion', 'exclusion', 'bid_multiplier'] as const;
export type IntendedUse = (typeof INTENDED_USES)[number];
/** The fewest matched members an active audience needs for each use. */
export const MIN_MATCHED_FOR_USE: Record<IntendedUse, number> = {
  inclusion: 1000,
  exclusion: 100,
  bid_multiplier: 10_000,
};
export const IDENTIFIER_TYPES = ['email', 'phone', 'email_sha256', 'phone_number_sha256', 'gaid'] as const;
export type IdentifierType = (typeof IDENTIFIER_TYPES)[number];
/** Typical bytes per line of an uploaded file, by identifier, to estimate its identifiers. */
const BYTES_PER_IDENTIFIER: Record<IdentifierType, number> = {
  email: 26,
  phone: 14,
  email_sha256: 65,
  phone_number_sha256: 65,
  gaid: 37,
};
/** Below this a count is not shown at all, so that no small group can be singled out. */
export const PRIVACY_THRESHOLD = 1000;
export const MAX_MERGE_SOURCES = 64;
export const MAX_LIST_IDS = 500;

/** How long an operation waits before processing starts, and how long until it completes. */
export const OPERATION_PENDING_MS = 5_000;
export const OPERATION_COMPLETED_MS = 30_000;

/** The data-use terms audiences are accepted under: the current ones and the previous ones. */
export const POLICY_REVISION = sha256Hex('sandbox custom audience terms 2026-06');
export const PREVIOUS_POLICY_REVISION = sha256Hex('sandbox custom audience terms 2024-01');

export type OperationType = 'replace' | 'merge';
export type OperationStatus = 'pending' | 'processing' | 'completed';

export interface Audience {
  seq: number;
  id: string;
  accountId: string;
  name: string;
  status: 'active' | 'archived';
  revision: number;
  policyRevision: string;
  /** The exact matched count as of now (null until a new audience's first operation completes). */
  matchedCount: number | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface Operation {
  id: string;
  accountId: string;
  audienceId: string;
  type: OperationType;
  revision: number;
  /** Exact; shown only rounded, and only once the operation has completed. */
  matchedCount: number;
  createdAt: Date;
}

/** roundedCount is a count as the platform shows it: two significant figures, null below the threshold. */
export function roundedCount(n: number): number | null {
  if (n < PRIVACY_THRESHOLD) return null;
  const unit = 10 ** (Math.floor(Math.log10(n)) - 1);
  return Math.round(n / unit) * unit;
}

/** countRange is the power-of-ten range a count lies in, from 0 below the threshold. */
export function countRange(n: number): { lower_bound: number; upper_bound: number } {
  if (n < PRIVACY_THRESHOLD) return { lower_bound: 0, upper_bound: PRIVACY_THRESHOLD };
  const lower = 10 ** Math.floor(Math.log10(n));
  return { lower_bound: lower, upper_bound: lower * 10 };
}

/** eligibleUses are what an audience may be used for now. */
export function eligibleUses(a: Audience): IntendedUse[] {
  const matched = a.matchedCount;
  if (a.status !== 'active' || matched === null) return [];
  return INTENDED_USES.filter((use) => matched >= MIN_MATCHED_FOR_USE[use]);
}

/** operationStatus is where an operation created at `createdAt` stands at instant `now`. */
export function operationStatus(createdAt: Date, now: number): OperationStatus {
  const age = now - createdAt.getTime();
  if (age < OPERATION_PENDING_MS) return 'pending';
  if (age < OPERATION_COMPLETED_MS) return 'processing';
  return 'completed';
}

/** operationJson is an operation as the API returns it at instant `now`. */
export function operationJson(op: Operation, now: number) {
  const status = operationStatus(op.createdAt, now);
  const at = (ms: number) => new Date(op.createdAt.getTime() + ms).toISOString();
  return {
    id: op.id,
    custom_audience_id: op.audienceId,
    type: op.type,
    status,
    revision: op.revision,
    created_at: op.createdAt.toISOString(),
    started_at: status === 'pending' ? null : at(OPERATION_PENDING_MS),
    completed_at: status === 'completed' ? at(OPERATION_COMPLETED_MS) : null,
    matched_count: status === 'completed' ? roundedCount(op.matchedCount) : null,
    matched_count_range: status === 'completed' ? countRange(op.matchedCount) : null,
  };
}

/** audienceJson is an audience as the API returns it; `granular` shows the rounded count too. */
export function audienceJson(
  a: Audience,
  latest: { op: Operation; now: number } | undefined,
  granular: boolean,
) {
  return {
    id: a.id,
    account_id: a.accountId,
    name: a.name,
    status: a.status,
    revision: a.revision,
    policy_revision: a.policyRevision,
    eligible_uses: eligibleUses(a),
    matched_count: granular && a.matchedCount !== null ? roundedCount(a.matchedCount) : null,
    matched_count_range: a.matchedCount === null ? null : countRange(a.matchedCount),
    latest_operation:
      latest === undefined
        ? null
        : {
            id: latest.op.id,
            type: latest.op.type,
            status: operationStatus(latest.op.createdAt, latest.now),
          },
    created_at: a.createdAt.toISOString(),
    updated_at: a.updatedAt.toISOString(),
  };
}

/**
 * replaceMatchedCount is how many members a member file matches: its identifiers (estimated from
 * its size) times a match rate of 35 to 75 % that follows from the file id.
 */
export function replaceMatchedCount(
  fileId: string,
  fileSize: number,
  identifierType: IdentifierType,
): number {
  const identifiers = Math.floor(fileSize / BYTES_PER_IDENTIFIER[identifierType]);
  const rate = 0.35 + 0.4 * (Number.parseInt(sha256Hex(`match|${fileId}`).slice(0, 8), 16) / 2 ** 32);
  return Math.floor(identifiers * rate);
}

/** mergedMatchedCount estimates the union of audiences that overlap by 30 %. */
export function mergedMatchedCount(counts: number[]): number {
  const largest = Math.max(0, ...counts);
  const rest = counts.reduce((sum, n) => sum + n, 0) - largest;
  return largest + Math.floor(rest * 0.7);
}
