/**
 * The account's standards and spend guard applied to one operation: the one place both planning
 * (PrepareChange, PlanChange) and the apply worker check them, so a change is held to the rules
 * in force when it is prepared and again to those in force when it is applied.
 */
import type { Queryable } from '@adsmcp/runtime/db';
import { FailedPreconditionError, InvalidArgumentError } from '@adsmcp/runtime/errors';
import { isRecord } from '@adsmcp/runtime/platform-error';
import { Temporal } from 'temporal-polyfill';
import { BULK_JOB_PATH } from '../domain/bulk-job-rules.ts';
import { bodyOf, type Operation } from '../domain/change.ts';
import {
  type CheckedStandard,
  checkedStandard,
  lookalikeHostViolations,
  type Standard,
  standardViolations,
  stopsServing,
} from '../domain/standards-rules.ts';
import { type AccountRules, accountRules, activeStandards } from '../store/standards-store.ts';

export interface StandardsVerdict {
  checked: CheckedStandard[];
  /** Every rule the operation breaks; empty when it keeps them all. */
  violations: string[];
}

/** The account-local date of `now` in `timeZone`. */
export function localToday(now: Date, timeZone: string): string {
  return Temporal.Instant.fromEpochMilliseconds(now.getTime())
    .toZonedDateTimeISO(timeZone)
    .toPlainDate()
    .toString();
}

/** A standard's row as the rules read it. */
function asStandard(r: AccountRules['standards'][number]): Standard {
  return { standardId: r.standard_id, name: r.name, revision: r.revision, data: r.data };
}

/** The account's active standards, as the rules read them. */
async function standardsOf(db: Queryable, workspaceId: string, accountId: string): Promise<Standard[]> {
  return (await activeStandards(db, workspaceId, accountId)).map(asStandard);
}

/** judgeStandards checks `op` against the active standards and spend guard of the account. */
export async function judgeStandards(
  db: Queryable,
  workspaceId: string,
  account: { accountId: string; timeZone: string },
  op: Operation,
  result?: Record<string, unknown>,
  now: Date = new Date(),
): Promise<StandardsVerdict> {
  const rules = await accountRules(db, workspaceId, account.accountId);
  return verdictOf(rules, account.timeZone, op, result, now);
}

/**
 * The verdict of `rules` on `op`. The account's time zone (the date `now` is there) is read by the
 * standards' date windows alone: with no standard active it may be undefined.
 */
function verdictOf(
  rules: AccountRules,
  timeZone: string | undefined,
  op: Operation,
  result: Record<string, unknown> | undefined,
  now: Date,
): StandardsVerdict {
  const standards = rules.standards.map(asStandard);
  if (standards.length > 0 && timeZone === undefined)
    throw new Error("the account's standards are checked without its time zone");
  const zone = timeZone ?? 'UTC';
  const big = (v: string | null | undefined) => (v === null || v === undefined ? null : BigInt(v));
  const body = bodyOf(op);
  const violations = standardViolations(
    body,
    standards,
    {
      maxDailyBudgetMicros: big(rules.guard?.max_daily_budget_micros),
      maxBidMicros: big(rules.guard?.max_bid_micros),
    },
    {
      // Read by the standards' windows only (none here when the time zone is not known).
      today: localToday(now, zone),
      timeZone: zone,
      stopsServing: stopsServing(op.path, body),
      wireFormat: op.path === BULK_JOB_PATH ? 'bulk' : 'single',
    },
    result,
  );
  return { checked: standards.map(checkedStandard), violations };
}

/**
 * refuseLookalikeHosts refuses (invalid_argument) a body that links to a look-alike host: a label
 * mixing scripts, or the skeleton of one of the account's allowed domains or of a host `current`
 * (the live object) links to, without being that host; unless an active standard of the account
 * lists the host exactly in `allowed_domains`. Every such URL is named with its field.
 */
export async function refuseLookalikeHosts(
  db: Queryable,
  workspaceId: string,
  accountId: string,
  body: unknown,
  current?: unknown,
): Promise<void> {
  refuseLookalikesOf(await standardsOf(db, workspaceId, accountId), body, current);
}

/** refuseLookalikeHosts with the account's active standards already read. */
function refuseLookalikesOf(standards: readonly Standard[], body: unknown, current?: unknown): void {
  const lookalikes = lookalikeHostViolations(body, standards, current);
  if (lookalikes.length > 0) throw new InvalidArgumentError(lookalikes.join('; '));
}

/**
 * enforceStandards returns the standards `op` was checked against, or refuses it: invalid_argument
 * for a URL whose host is a look-alike (refuseLookalikeHosts, compared with the `live` object the
 * change is made to, when there is one), then failed_precondition naming each rule of the standards
 * and the spend guard it breaks (held against the reviewed `result`). The account's rules are read
 * once for both.
 */
export async function enforceStandards(
  db: Queryable,
  workspaceId: string,
  account: { accountId: string; timeZone: string },
  op: Operation,
  result?: Record<string, unknown>,
  live?: Record<string, unknown>,
): Promise<CheckedStandard[]> {
  const rules = await accountRules(db, workspaceId, account.accountId);
  refuseLookalikesOf(rules.standards.map(asStandard), bodyOf(op), live);
  const { checked, violations } = verdictOf(rules, account.timeZone, op, result, new Date());
  if (violations.length > 0) throw new FailedPreconditionError(violations.join('; '));
  return checked;
}

/**
 * Why the apply worker must not send `change` (its operation breaks the account's standards or
 * spend guard as they are now), or undefined when it may. The account's time zone is asked for
 * (`timeZoneOf`, the worker's read of the account through the upstream-proxy, with its refusals
 * and waits) only when a standard is active: the spend guard's caps hold whatever the date, and a
 * call to the upstream-proxy less is a good part of an apply's cost.
 */
export async function standardsRefusalAtApply(
  db: Queryable,
  timeZoneOf: () => Promise<string>,
  change: {
    workspace_id: string;
    account_id: string;
    method: string;
    path: string;
    body_json: string;
    reviewed_result_json: string;
  },
): Promise<string | undefined> {
  const rules = await accountRules(db, change.workspace_id, change.account_id);
  const timeZone = rules.standards.length > 0 ? await timeZoneOf() : undefined;
  const op = { method: change.method, path: change.path, bodyJson: change.body_json };
  const reviewed: unknown = JSON.parse(change.reviewed_result_json);
  const result = isRecord(reviewed) ? reviewed : undefined;
  const { violations } = verdictOf(rules, timeZone, op, result, new Date());
  if (violations.length === 0) return undefined;
  return `refused before applying, nothing was sent to the ad account: ${violations.join('; ')}`;
}
