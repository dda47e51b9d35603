/**
 * ApplyChange: asking for an approved change to be applied (or an unknown outcome sent again with
 * the same key), and waiting a while for its outcome.
 */
import type { ApplyChangeRequest } from '@adsmcp/proto/changes/v1/changes_pb';
import { deterministicId } from '@adsmcp/runtime/bus/outbox';
import { principalOf } from '@adsmcp/runtime/connect-server';
import { inTransaction } from '@adsmcp/runtime/db';
import { FailedPreconditionError, InvalidArgumentError } from '@adsmcp/runtime/errors';
import { actorName, type Principal } from '@adsmcp/runtime/principal';
import {
  applyRefusal,
  checkMayApply,
  expiryRefusal,
  refuse,
  shownStatus,
  unknownOutcomeResend,
} from '../domain/change.ts';
import { refuseFrozen } from '../planning/account-controls.ts';
import { type ChangeRow, markApplying, markRetrying } from '../store/change-store.ts';
import { expiryHours } from '../store/expiry-store.ts';
import { enqueueApply } from '../work/apply-message.ts';
import { load, TERMINAL, toProto } from './change-proto.ts';
import type { Deps, Rpcs } from './changes-handlers.ts';

/** Asking for an approved change to be applied, and waiting a while for its outcome. */
export function applyingRpcs(deps: Deps): Rpcs<'applyChange'> {
  return {
    async applyChange(req, ctx) {
      const p = principalOf(ctx);
      checkMayApply(p);
      if (req.waitMs < 0 || req.waitMs > 30_000)
        throw new InvalidArgumentError('wait_ms must be from 0 to 30000');
      const row = await load(deps.pool, p, req.changeId);
      try {
        return await applyLoaded(deps, p, req, row, ctx.signal);
      } catch (err) {
        // A digest that is not the change's is refused as that, whatever the change's status.
        const reviewed = req.digest === '' || req.digest === row.digest;
        if (!(err instanceof FailedPreconditionError) || !reviewed || err.details !== undefined) throw err;
        throw await namingStatus(deps, p, row.change_id, err);
      }
    },
  };
}

/**
 * The refusal of an existing change with its status (as it reads after the refusal) and change_id
 * in its details, so that an agent whose change still awaits a person can send them to its review
 * page (the gateway adds the page's address).
 */
async function namingStatus(
  { pool, now }: Deps,
  p: Principal,
  changeId: string,
  refusal: FailedPreconditionError,
): Promise<FailedPreconditionError> {
  const row = await load(pool, p, changeId);
  const status = shownStatus(row, await expiryHours(pool, p.workspaceId), now());
  return new FailedPreconditionError(refusal.message, { status, change_id: row.change_id });
}

/** Requests the apply of `row` (loaded for `p`) and waits up to wait_ms for its outcome. */
async function applyLoaded(
  { pool, sleep, now }: Deps,
  p: Principal,
  req: ApplyChangeRequest,
  loaded: ChangeRow,
  signal: AbortSignal,
) {
  let row = loaded;
  // A frozen account's approved changes wait, approved, until it is unfrozen.
  await refuseFrozen(pool, p.workspaceId, row.account_id);
  if (req.digest !== '' && req.digest !== row.digest) {
    throw new FailedPreconditionError(
      "the digest given is not this change's; the change is not the one you reviewed",
    );
  }
  const expiry = await expiryHours(pool, p.workspaceId);
  refuse(expiryRefusal(row, expiry, now()));
  const resend = unknownOutcomeResend(row, new Date());
  refuse(applyRefusal(row.status, row.applied_at?.toISOString() ?? null, resend));
  // An approved change is sent; one whose outcome was unknown is sent again, with the same key.
  const retry = resend === 'resend';
  if (row.status === 'approved' || retry) {
    // The state change and the work it causes commit together.
    const moved = await inTransaction(pool, async (tx) => {
      const target = { workspaceId: p.workspaceId, changeId: row.change_id, by: actorName(p) };
      const m = retry
        ? await markRetrying(tx, target)
        : await markApplying(tx, { ...target, approvalValidHours: expiry.approvalValidHours });
      if (m === undefined) return undefined;
      const id = retry
        ? deterministicId('apply', m.change_id, m.apply_retried_at?.toISOString() ?? '')
        : deterministicId('apply', m.change_id);
      await enqueueApply(tx, m, id);
      return m;
    });
    row = moved ?? (await load(pool, p, req.changeId));
    refuse(expiryRefusal(row, expiry, now()));
    refuse(
      row.status === 'approved'
        ? undefined
        : applyRefusal(
            row.status,
            row.applied_at?.toISOString() ?? null,
            unknownOutcomeResend(row, new Date()),
          ),
    );
  }
  const deadline = Date.now() + req.waitMs;
  while (!TERMINAL.has(row.status) && Date.now() < deadline && !signal.aborted) {
    await sleep(100);
    row = await load(pool, p, req.changeId);
  }
  return { change: toProto(row, { expiry, now: now() }) };
}
