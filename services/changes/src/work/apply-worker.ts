/**
 * The apply worker: for each apply request on the bus it re-reads the target object (a stale
 * plan is refused), then sends exactly the reviewed operation to the ad platform through the
 * upstream-proxy, with an Idempotency-Key derived from the change. A retry after a crash or a
 * lost answer sends the same key, so the platform replays instead of applying twice.
 */
import type { UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import type { Delivery, HandlerContext } from '@adsmcp/runtime/bus/bus';
import type { Pool } from '@adsmcp/runtime/db';
import type { Logger } from '@adsmcp/runtime/log';
import { describePlatformRefusal } from '@adsmcp/runtime/platform-error';
import type { Principal } from '@adsmcp/runtime/principal';
import { callerKey } from '@adsmcp/runtime/service-client';
import { type Client, Code, ConnectError, createContextValues } from '@connectrpc/connect';
import { staleTarget } from '../domain/change.ts';
import { appliedDifferences } from '../domain/plan.ts';
import type { ApplyMessage } from '../handlers/changes-handlers.ts';
import { standardsRefusalAtApply } from '../handlers/standards-enforcement.ts';
import { type ChangeRow, findChange, finishApply, markSent } from '../store/change-store.ts';

/** The key the platform deduplicates this change's application by. */
export function idempotencyKeyFor(changeId: string): string {
  return `change-${changeId}`;
}

/** Codes after which sending again cannot help: the change fails with the reason. */
const PERMANENT = new Set([
  Code.InvalidArgument,
  Code.NotFound,
  Code.PermissionDenied,
  Code.FailedPrecondition,
]);

export interface ApplyWorkerDeps {
  pool: Pool;
  upstream: Client<typeof UpstreamService>;
  logger: Logger;
  maxAttempts: number;
}

export function createApplyHandler(d: ApplyWorkerDeps) {
  return async (message: Delivery<ApplyMessage>, ctx: HandlerContext): Promise<void> => {
    const { change_id: changeId, workspace_id: workspaceId } = message.payload;
    const change = await findChange(d.pool, workspaceId, changeId);
    if (change === undefined || change.status !== 'applying') {
      d.logger.info(
        { change_id: changeId, status: change?.status },
        'apply skipped: the change is not applying',
      );
      return;
    }
    const finish = (
      status: 'applied' | 'failed',
      upstreamStatus: number | null,
      response: string | null,
      error: string | null,
      appliedDifferences: string[] = [],
    ) =>
      ctx.inTx((tx) =>
        finishApply(tx, {
          workspaceId,
          changeId,
          status,
          upstreamStatus,
          upstreamResponseJson: response,
          error,
          appliedDifferences,
        }),
      );
    const principal: Principal = {
      workspaceId,
      credentialId: `change:${changeId}`,
      userId: change.approver_user_id,
      role: 'editor',
      scopes: ['read', 'write'],
      via: 'worker',
    };
    const options = { contextValues: createContextValues().set(callerKey, principal), signal: ctx.signal };
    try {
      if (change.sent_at === null && change.target_path !== '') {
        // First send: the object must still be as it was reviewed (a stale plan is refused). A
        // change that creates an object has none to re-read.
        const live = await d.upstream.call(
          { accountId: change.account_id, method: 'GET', path: change.target_path, query: [] },
          options,
        );
        if (live.status !== 200) {
          await finish(
            'failed',
            live.status,
            live.bodyJson,
            `the object could not be re-read before applying: ${describePlatformRefusal(live.status, live.bodyJson)}`,
          );
          return;
        }
        const stale = staleTarget(change.target_before_json, live.bodyJson);
        if (stale !== undefined) {
          await finish('failed', null, null, stale);
          return;
        }
      }
      if (change.sent_at === null) {
        // The account's standards and spend guard as they are now, before anything is sent.
        const refusal = await standardsRefusalAtApply(d.pool, d.upstream, change, options);
        if (refusal !== undefined) {
          await finish('failed', null, null, refusal);
          return;
        }
        await markSent(d.pool, workspaceId, changeId);
      }
      // Sent before (the outcome was lost): the same key makes the platform replay its first
      // answer if it applied the change, so nothing is re-checked or doubled.
      const res = await d.upstream.call(
        {
          accountId: change.account_id,
          method: change.method,
          path: change.path,
          query: [],
          bodyJson: change.body_json,
          idempotencyKey: idempotencyKeyFor(changeId),
        },
        options,
      );
      if (res.status >= 200 && res.status < 300) {
        // The platform's answer is held against what was reviewed: a field it did not take as
        // sent is recorded and shown beside the change, never passed over in silence.
        const differences = appliedDifferences(JSON.parse(change.reviewed_result_json), res.bodyJson);
        await finish('applied', res.status, res.bodyJson, null, differences);
        if (differences.length > 0) {
          d.logger.warn(
            { change_id: changeId, applied_differences: differences },
            'change applied, but the platform answered with another result than the one reviewed',
          );
        }
        d.logger.info({ change_id: changeId, attempts: res.attempts }, 'change applied');
      } else {
        await finish('failed', res.status, res.bodyJson, describePlatformRefusal(res.status, res.bodyJson));
      }
    } catch (err) {
      const e = ConnectError.from(err);
      if (PERMANENT.has(e.code)) {
        await finish('failed', null, null, e.rawMessage);
        return;
      }
      if (message.attempt >= d.maxAttempts) {
        // The outcome may be unknown; the same key makes a later manual retry safe.
        await finish(
          'failed',
          null,
          null,
          `the ad platform could not be reached after ${message.attempt} attempts (${e.rawMessage}); the change may not have been applied`,
        );
        return;
      }
      throw err;
    }
  };
}

export type { ChangeRow };
