/**
 * The live check before a decision: the object a prepared change is about, re-read on the ad
 * platform (through the upstream-proxy, as the changes service's worker) and compared with the
 * object as it was when the change was prepared, and the change held to the account's standards
 * and spend guard (and spend envelope) as they are now. A change whose object moved, or that breaks the current rules,
 * cannot be approved: applying it would fail the apply worker's same checks, and what the person
 * reviewed would no longer describe what is sent or what the platform holds.
 */
import type { Queryable } from '@adsmcp/runtime/db';
import { FailedPreconditionError, UnavailableError } from '@adsmcp/runtime/errors';
import { isRecord } from '@adsmcp/runtime/json';
import { describePlatformRefusal } from '@adsmcp/runtime/platform-error';
import { readingFor } from '@adsmcp/runtime/service-client';
import { ConnectError } from '@connectrpc/connect';
import { staleTarget } from '../domain/change.ts';
import type { ChangeRow } from '../store/change-store.ts';
import { envelopeRefusalNow, useOf } from './account-controls.ts';
import type { Upstream } from './platform-reads.ts';
import { judgeStandards } from './standards.ts';

/** What the re-read showed; `reason` is for a person. */
export interface LiveCheck {
  /** The change cannot be approved: its object moved or is gone, or it breaks the current rules. */
  stale: boolean;
  reason: string;
  /** The object could not be re-read just now: nothing is known either way. */
  unavailable: boolean;
}

/** Statuses that mean the object (or its account) is gone: the plan can never be applied. */
const GONE = new Set([404, 410]);

/** checkLive re-reads the change's object and says whether the change's plan still holds. */
export async function checkLive(
  db: Queryable,
  upstream: Upstream,
  row: ChangeRow,
  signal?: AbortSignal,
): Promise<LiveCheck> {
  const object = await checkObject(upstream, row, signal);
  if (object.stale || object.unavailable) return object;
  return checkRules(db, upstream, row, signal);
}

/** The options of a read made for the change by this service's worker. */
function readingForChange(row: ChangeRow, signal?: AbortSignal) {
  return readingFor(
    { workspaceId: row.workspace_id, credentialId: `change:${row.change_id}`, userId: null },
    signal,
  );
}

/** The account's standards and spend guard as they are now, held against the change. */
async function checkRules(
  db: Queryable,
  upstream: Upstream,
  row: ChangeRow,
  signal?: AbortSignal,
): Promise<LiveCheck> {
  let account: { accountId: string; timeZone: string; currency: string } | undefined;
  try {
    account = (await upstream.getAccount({ accountId: row.account_id }, readingForChange(row, signal)))
      .account;
  } catch (err) {
    return {
      stale: false,
      unavailable: true,
      reason: `the account's standards could not be checked just now, try again: ${ConnectError.from(err).rawMessage}`,
    };
  }
  if (account === undefined)
    return { stale: false, unavailable: true, reason: 'the upstream-proxy answered without the account' };
  const reviewed: unknown = JSON.parse(row.reviewed_result_json);
  const { violations } = await judgeStandards(
    db,
    row.workspace_id,
    account,
    { method: row.method, path: row.path, bodyJson: row.body_json },
    isRecord(reviewed) ? reviewed : undefined,
  );
  // The spend envelope as the last 24 hours left it: approval is refused for a change that no
  // longer fits, as its apply would be.
  const envelope = await envelopeRefusalNow(
    db,
    {
      workspaceId: row.workspace_id,
      accountId: row.account_id,
      currency: account.currency,
      exceptChangeId: row.change_id,
    },
    useOf(row),
  );
  if (envelope !== undefined) violations.push(envelope);
  return violations.length === 0
    ? { stale: false, unavailable: false, reason: '' }
    : {
        stale: true,
        unavailable: false,
        reason: `it breaks the account's standards or spend guard as they are now: ${violations.join('; ')}`,
      };
}

/** The change's object re-read and compared with the object as it was when prepared. */
async function checkObject(upstream: Upstream, row: ChangeRow, signal?: AbortSignal): Promise<LiveCheck> {
  // A change that creates an object has nothing live to compare with.
  if (row.target_path === '') return { stale: false, unavailable: false, reason: '' };
  let live: { status: number; bodyJson: string };
  try {
    live = await upstream.call(
      { accountId: row.account_id, method: 'GET', path: row.target_path, query: [] },
      readingForChange(row, signal),
    );
  } catch (err) {
    return {
      stale: false,
      unavailable: true,
      reason: `the object could not be re-read on the ad platform just now, try again: ${ConnectError.from(err).rawMessage}`,
    };
  }
  if (GONE.has(live.status)) {
    return {
      stale: true,
      unavailable: false,
      reason: `the object is no longer on the ad platform, so the change can never be applied: ${describePlatformRefusal(live.status, live.bodyJson)}`,
    };
  }
  if (live.status !== 200) {
    return {
      stale: false,
      unavailable: true,
      reason: `the object could not be re-read on the ad platform just now, try again: ${describePlatformRefusal(live.status, live.bodyJson)}`,
    };
  }
  const stale = staleTarget(row.target_before_json, live.bodyJson);
  return stale === undefined
    ? { stale: false, unavailable: false, reason: '' }
    : { stale: true, unavailable: false, reason: stale };
}

/**
 * requireFresh refuses approval of a change whose object moved, or could not be re-read, or that
 * breaks the account's standards or spend guard as they are now.
 */
export async function requireFresh(
  db: Queryable,
  upstream: Upstream,
  row: ChangeRow,
  signal?: AbortSignal,
): Promise<void> {
  const live = await checkLive(db, upstream, row, signal);
  if (live.stale) throw new FailedPreconditionError(`the change cannot be approved: ${live.reason}`);
  if (live.unavailable) throw new UnavailableError(`the change cannot be approved yet: ${live.reason}`);
}
