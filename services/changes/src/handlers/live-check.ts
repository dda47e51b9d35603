/**
 * The live check before a decision: the object a prepared change is about, re-read on the ad
 * platform (through the upstream-proxy, as the changes service's worker) and compared with the
 * object as it was when the change was prepared. A change whose object moved cannot be approved:
 * applying it would fail the apply worker's same check, and what the person reviewed (the
 * before/after table) would no longer describe what the platform holds.
 */
import { FailedPreconditionError, UnavailableError } from '@adsmcp/runtime/errors';
import { describePlatformRefusal } from '@adsmcp/runtime/platform-error';
import { readingFor } from '@adsmcp/runtime/service-client';
import { ConnectError } from '@connectrpc/connect';
import { staleTarget } from '../domain/change.ts';
import type { ChangeRow } from '../store/change-store.ts';
import type { Upstream } from './platform-reads.ts';

export type { Upstream };

/** What the re-read showed; `reason` is for a person. */
export interface LiveCheck {
  stale: boolean;
  reason: string;
  /** The object could not be re-read just now: nothing is known either way. */
  unavailable: boolean;
}

/** Statuses that mean the object (or its account) is gone: the plan can never be applied. */
const GONE = new Set([404, 410]);

/** checkLive re-reads the change's object and says whether the change's plan still holds. */
export async function checkLive(
  upstream: Upstream,
  row: ChangeRow,
  signal?: AbortSignal,
): Promise<LiveCheck> {
  // A change that creates an object has nothing live to compare with.
  if (row.target_path === '') return { stale: false, unavailable: false, reason: '' };
  let live: { status: number; bodyJson: string };
  try {
    live = await upstream.call(
      { accountId: row.account_id, method: 'GET', path: row.target_path, query: [] },
      readingFor(
        { workspaceId: row.workspace_id, credentialId: `change:${row.change_id}`, userId: null },
        signal,
      ),
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

/** requireFresh refuses approval of a change whose object moved, or could not be re-read. */
export async function requireFresh(upstream: Upstream, row: ChangeRow, signal?: AbortSignal): Promise<void> {
  const live = await checkLive(upstream, row, signal);
  if (live.stale) throw new FailedPreconditionError(`the change cannot be approved: ${live.reason}`);
  if (live.unavailable) throw new UnavailableError(`the change cannot be approved yet: ${live.reason}`);
}
