/** RevertService: PrepareRevert, proto <-> planning/revert.ts. */
import type { RevertService } from '@adsmcp/proto/changes/v1/revert_pb';
import { principalOf } from '@adsmcp/runtime/connect-server';
import { PermissionDeniedError } from '@adsmcp/runtime/errors';
import type { ServiceImpl } from '@connectrpc/connect';
import { planRevert, prepareRevert } from '../planning/revert.ts';
import { expiryHours } from '../store/expiry-store.ts';
import { toProto } from './change-proto.ts';
import { type HandlerDeps, planReport } from './changes-handlers.ts';

export function revertHandlers({
  pool,
  upstream,
  marketing,
  now = () => new Date(),
}: HandlerDeps): ServiceImpl<typeof RevertService> {
  return {
    async prepareRevert(req, ctx) {
      const p = principalOf(ctx);
      // A revert is prepared for a person to review, never recorded by a worker.
      if (p.via === 'worker') throw new PermissionDeniedError('a worker cannot prepare a revert');
      const expiry = await expiryHours(pool, p.workspaceId);
      const row = await prepareRevert({ db: pool, upstream, marketing }, p, {
        changeId: req.changeId,
        reason: req.reason,
        expiry,
        now,
      });
      return { change: toProto(row, { expiry, now: now() }) };
    },

    async planRevert(req, ctx) {
      const p = principalOf(ctx);
      const { planned } = await planRevert({ db: pool, upstream, marketing }, p, {
        changeId: req.changeId,
        reason: req.reason,
        expiry: await expiryHours(pool, p.workspaceId),
        now,
        report: { accountId: req.accountId },
      });
      return { plan: planReport(planned) };
    },
  };
}
