/**
 * A delivery of a change's apply message as the bus makes it, for the tests that run the apply
 * worker themselves instead of a bus consumer: the message, and a handler context whose inbox
 * transaction is a transaction of the service's pool.
 */
import { randomUUID } from 'node:crypto';
import type { Delivery, GiveUpReason, HandlerContext } from '@adsmcp/runtime/bus/bus';
import { inTransaction, type Pool } from '@adsmcp/runtime/db';
import { createLogger } from '@adsmcp/runtime/log';
import { SERVICE_NAME } from '../src/server.ts';
import { APPLY_TOPIC, type ApplyMessage } from '../src/work/apply-message.ts';
import { type ApplyWorkerDeps, createApplyGiveUp, createApplyHandler } from '../src/work/apply-worker.ts';

/** What the worker is run with; its log is silent unless one is given. */
export type ApplyTestDeps = Omit<ApplyWorkerDeps, 'logger'> & Partial<Pick<ApplyWorkerDeps, 'logger'>>;

const withLogger = (d: ApplyTestDeps): ApplyWorkerDeps => ({
  logger: createLogger(SERVICE_NAME, 'silent'),
  ...d,
});

/** The apply message of `changeId`, delivered for the `attempt`th time, and its context. */
function delivery(pool: Pool, workspaceId: string, changeId: string, attempt: number) {
  const message: Delivery<ApplyMessage> = {
    id: randomUUID(),
    topic: APPLY_TOPIC,
    key: changeId,
    payload: { change_id: changeId, workspace_id: workspaceId },
    headers: {},
    attempt,
    enqueuedAt: new Date(),
  };
  const ctx = {
    inTx: (fn) => inTransaction(pool, fn),
    signal: new AbortController().signal,
  } as HandlerContext;
  return { message, ctx };
}

/** Runs the apply worker once on the change, as one delivery of its message; a throw is the caller's. */
export async function deliverApply(d: ApplyTestDeps, workspaceId: string, changeId: string): Promise<void> {
  const { message, ctx } = delivery(d.pool, workspaceId, changeId, 1);
  await createApplyHandler(withLogger(d))(message, ctx);
}

/** Runs it as the bus's last delivery (`attempt`): a throw goes to the give-up path, as the bus hands it. */
export async function deliverApplyLast(
  d: ApplyTestDeps,
  workspaceId: string,
  changeId: string,
  attempt = 3,
): Promise<void> {
  const deps = withLogger(d);
  const { message, ctx } = delivery(d.pool, workspaceId, changeId, attempt);
  await createApplyHandler(deps)(message, ctx).catch((error: unknown) =>
    createApplyGiveUp(deps)(message, ctx, { kind: 'failed', error }),
  );
}

/** Runs only the give-up path of the change's apply message, for `reason`. */
export async function giveUpApply(
  d: ApplyTestDeps,
  workspaceId: string,
  changeId: string,
  reason: GiveUpReason,
): Promise<void> {
  const { message, ctx } = delivery(d.pool, workspaceId, changeId, 3);
  await createApplyGiveUp(withLogger(d))(message, ctx, reason);
}
