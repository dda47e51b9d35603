/**
 * ApplyChange: asking for an approved change to be applied (or an unknown outcome sent again with
 * the same key), and waiting a while for its outcome.
 */
import { deterministicId } from '@adsmcp/runtime/bus/outbox';
import { principalOf } from '@adsmcp/runtime/connect-server';
import { inTransaction } from '@adsmcp/runtime/db';
import { FailedPreconditionError, InvalidArgumentError } from '@adsmcp/runtime/errors';
import { actorName } from '@adsmcp/runtime/principal';
import {
  applyRefusal,
  checkMayApply,
  expiryRefusal,
  refuse,
  unknownOutcomeResend,
} from '../domain/change.ts';
import { refuseFrozen } from '../planning/account-controls.ts';
import { markApplying, markRetrying } from '../store/change-store.ts';
import { expiryHours } from '../store/expiry-store.ts';
import { enqueueApply } from '../work/apply-message.ts';
import { load, TERMINAL, toProto } from './change-proto.ts';
import type { Deps, Rpcs } from './changes-handlers.ts';

/** Asking for an approved change to be applied, and waiting a while for its outcome. */
export function applyingRpcs({ pool, sleep, now }: Deps): Rpcs<'applyChange'> {
  return {
    async applyChange(req, ctx) {
      const p = principalOf(ctx);
      checkMayApply(p);
      if (req.waitMs < 0 || req.waitMs > 30_000)
        throw new InvalidArgumentError('wait_ms must be from 0 to 30000');
      let row = await load(pool, p, req.changeId);
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
      while (!TERMINAL.has(row.status) && Date.now() < deadline && !ctx.signal.aborted) {
        await sleep(100);
        row = await load(pool, p, req.changeId);
      }
      return { change: toProto(row, { expiry, now: now() }) };
    },
  };
}
