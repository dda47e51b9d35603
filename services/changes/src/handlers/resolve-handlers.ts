/**
 * A person settles a change whose apply outcome is unknown (it was sent, and the platform's
 * answer never came): send it again with the same idempotency key, or record what they found on
 * the platform (applied, or not applied). And what they look at first: the object as the platform
 * shows it now, against what was reviewed.
 */
import { deterministicId } from '@adsmcp/runtime/bus/outbox';
import { inTransaction, type Pool } from '@adsmcp/runtime/db';
import { FailedPreconditionError, InvalidArgumentError } from '@adsmcp/runtime/errors';
import { describePlatformRefusal } from '@adsmcp/runtime/platform-error';
import type { Principal } from '@adsmcp/runtime/principal';
import { readingFor } from '@adsmcp/runtime/service-client';
import { hiddenCharacter, textLength } from '@adsmcp/runtime/text';
import { ConnectError } from '@connectrpc/connect';
import {
  applyRefusal,
  checkMaySettle,
  notAppliedError,
  parseResolution,
  refuse,
  settleRefusal,
  unknownOutcomeResend,
} from '../domain/change.ts';
import { appliedDifferences, type PlatformObject } from '../domain/plan.ts';
import { withFileIds } from '../domain/uploads.ts';
import type { Upstream } from '../planning/platform-reads.ts';
import { type ChangeRow, markRetrying, recordSendAgain, settleOutcome } from '../store/change-store.ts';
import { enqueueApply } from '../work/apply-message.ts';

/** The object of a change whose outcome is unknown, as the platform shows it now. */
export interface LiveOutcome {
  stale: boolean;
  reason: string;
  unavailable: boolean;
  objectJson: string;
  showsReviewed: boolean;
  differences: string[];
}

/**
 * liveOutcome re-reads the object of a change whose outcome is unknown and compares it with what
 * was reviewed, so that a person can see whether the platform shows the change.
 */
export async function liveOutcome(
  upstream: Upstream,
  row: ChangeRow,
  signal?: AbortSignal,
): Promise<LiveOutcome> {
  const none = { stale: false, unavailable: false, objectJson: '', showsReviewed: false, differences: [] };
  if (row.target_path === '')
    return {
      ...none,
      reason:
        'the change creates an object, so there is no object to re-read: look for the new object on the ad platform',
    };
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
      ...none,
      unavailable: true,
      reason: `the object could not be read on the ad platform just now, try again: ${ConnectError.from(err).rawMessage}`,
    };
  }
  if (live.status !== 200)
    return {
      ...none,
      unavailable: true,
      reason: `the object could not be read on the ad platform: ${describePlatformRefusal(live.status, live.bodyJson)}`,
    };
  const reviewed = withFileIds(JSON.parse(row.reviewed_result_json) as PlatformObject, row.uploads);
  const differences = appliedDifferences(reviewed, live.bodyJson);
  return {
    ...none,
    reason: '',
    objectJson: live.bodyJson,
    showsReviewed: differences.length === 0,
    differences,
  };
}

/** A person's note: optional, trimmed, at most 2000 characters, no hidden characters. */
function parseNote(text: string): string | null {
  const note = text.trim();
  if (note === '') return null;
  const length = textLength(note);
  if (length > 2000) throw new InvalidArgumentError(`note must be at most 2000 characters (got ${length})`);
  const hidden = hiddenCharacter(note, true);
  if (hidden !== undefined)
    throw new InvalidArgumentError(`note must not contain control or format characters (found ${hidden})`);
  return note;
}

export interface ResolveDeps {
  pool: Pool;
}

/**
 * resolveChange settles a change whose outcome is unknown, as person `p` (`by`, the actor text):
 * `send_again` moves it to applying and queues its apply in one commit, as ApplyChange's resend
 * does (refused after RESEND_WITHIN_HOURS, as there); `applied` and `not_applied` record what the
 * person found.
 */
export async function resolveChange(
  d: ResolveDeps,
  p: Principal,
  by: string,
  row: ChangeRow,
  req: { resolution: string; note: string },
): Promise<ChangeRow> {
  checkMaySettle(p);
  const resolution = parseResolution(req.resolution);
  const note = parseNote(req.note);
  refuse(settleRefusal(row));
  const meanwhile = 'the change was settled, or sent again, meanwhile; reload it';
  if (resolution === 'send_again') {
    refuse(applyRefusal(row.status, null, unknownOutcomeResend(row, new Date())));
    const moved = await inTransaction(d.pool, async (tx) => {
      const m = await markRetrying(tx, { workspaceId: p.workspaceId, changeId: row.change_id, by });
      if (m === undefined) return undefined;
      await enqueueApply(
        tx,
        m,
        deterministicId('apply', m.change_id, m.apply_retried_at?.toISOString() ?? ''),
      );
      return recordSendAgain(tx, { workspaceId: p.workspaceId, changeId: m.change_id, by, note });
    });
    if (moved === undefined) throw new FailedPreconditionError(meanwhile);
    return moved;
  }
  const settled = await settleOutcome(d.pool, {
    workspaceId: p.workspaceId,
    changeId: row.change_id,
    resolution,
    by,
    note,
    error: resolution === 'applied' ? null : notAppliedError(row.error),
  });
  if (settled === undefined) throw new FailedPreconditionError(meanwhile);
  return settled;
}
