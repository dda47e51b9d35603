/**
 * Publishing: an approved proposal becomes one change through the changes service, recorded as
 * approved by the person who approved the proposal and queued for its apply there (the same
 * digest-bound, exactly-once apply as every change). The change id is derived from the proposal,
 * so a retried dispatch finds the change it made. The proposal is locked while it is dispatched,
 * so a cancellation or a pause either comes first (nothing is dispatched) or finds it publishing.
 */
import { ChangeStatusSchema, type ChangesService } from '@adsmcp/proto/changes/v1/changes_pb';
import type { Delivery, GiveUpReason, HandlerContext } from '@adsmcp/runtime/bus/bus';
import { deterministicId, enqueue } from '@adsmcp/runtime/bus/outbox';
import { inTransaction, type Pool, type PoolClient } from '@adsmcp/runtime/db';
import { enumWord } from '@adsmcp/runtime/enum-words';
import type { Logger } from '@adsmcp/runtime/log';
import type { Principal } from '@adsmcp/runtime/principal';
import { onBehalfOf } from '@adsmcp/runtime/service-client';
import { type Client, Code, ConnectError } from '@connectrpc/connect';
import { type Proposal, publishBody, shownProposalStatus } from '../domain/proposal.ts';
import { getOptimizer } from '../store/optimizer-store.ts';
import { getProposal, updateProposal } from '../store/review-store.ts';

/** The bus topic of approved proposals waiting to be published. */
export const PUBLISH_TOPIC = 'optimizer.publish';

export interface PublishMessage {
  [key: string]: string;
  proposal_id: string;
  workspace_id: string;
}

/** Refusals after which dispatching again cannot help: the proposal fails with the reason. */
const PERMANENT = new Set([
  Code.InvalidArgument,
  Code.NotFound,
  Code.PermissionDenied,
  Code.FailedPrecondition,
]);

export interface PublishDeps {
  pool: Pool;
  changes: Client<typeof ChangesService>;
  logger: Logger;
  clock: () => Date;
  /** How long one delivery waits for the change's outcome before following it up later. */
  waitMs?: number;
  /** How long after that the follow-up comes (default FOLLOW_UP_MS). */
  followUpMs?: number;
}

/**
 * How long a publish that waited `waitMs` for its change's outcome (the change keeps being tried
 * through an outage, for as long as its approval is valid) pauses before its follow-up reads it
 * again: each delivery already waits, so the follow-ups only space the deliveries out.
 */
export const FOLLOW_UP_MS = 1_000;

/**
 * followUp queues, in `tx`, the next publish message of a proposal after `message`, delivered in
 * `delayMs`: one successor per message, so a handler or give-up path run twice queues one.
 */
function followUp(tx: PoolClient, message: Delivery<PublishMessage>, delayMs: number) {
  return enqueue(tx, {
    topic: PUBLISH_TOPIC,
    key: message.key,
    payload: message.payload,
    id: deterministicId('publish', message.payload.proposal_id, 'after', message.id),
    delayMs,
  });
}

/** The change that publishes a proposal has this id, whoever dispatches it and however often. */
export function changeIdOf(proposalId: string): string {
  return deterministicId('optimizer-proposal-change', proposalId);
}

/** The principal the worker publishes as: the optimizer's worker, for the person who approved. */
function workerFor(p: Proposal) {
  const principal: Principal = {
    workspaceId: p.workspaceId,
    credentialId: `optimizer-proposal:${p.proposalId}`,
    userId: p.approvedUserId,
    role: 'editor',
    scopes: ['read', 'write'],
    via: 'worker',
  };
  return onBehalfOf(principal);
}

const moved = (p: Proposal, patch: Partial<Proposal>, now: Date): Proposal => ({
  ...p,
  ...patch,
  revision: p.revision + 1,
  updatedAt: now,
});

export function createPublishHandler(d: PublishDeps) {
  const waitMs = d.waitMs ?? 20_000;
  return (message: Delivery<PublishMessage>, ctx: HandlerContext): Promise<void> =>
    publish(d, waitMs, message, ctx);
}

/** Dispatches the proposal of `message`, then waits up to `waitMs` for its change's outcome. */
async function publish(
  d: PublishDeps,
  waitMs: number,
  message: Delivery<PublishMessage>,
  ctx: HandlerContext,
): Promise<void> {
  const { proposal_id: proposalId, workspace_id: workspaceId } = message.payload;
  const p = await dispatch(d, workspaceId, proposalId);
  if (p === undefined || p.changeId === null || (p.status !== 'publishing' && p.status !== 'cancelled'))
    return;
  // A cancelled proposal whose change ended has it recorded. One still publishing is recorded
  // below even when its change had ended by the time it was dispatched (a dispatch given again
  // after its first commit was lost finds the change the changes service already applied).
  if (p.status === 'cancelled' && (p.changeStatus === 'applied' || p.changeStatus === 'failed')) return;
  const changeId = p.changeId;
  const deadline = Date.now() + waitMs;
  for (;;) {
    const { change } = await d.changes.getChange({ changeId, checkLive: false }, workerFor(p));
    const status = change === undefined ? '' : (enumWord(ChangeStatusSchema, change.state) ?? '');
    if (status === 'applied' || status === 'failed') {
      await ctx.inTx((tx) => recordOutcome(d, tx, workspaceId, proposalId, status, change?.error || null));
      return;
    }
    if (ctx.signal.aborted) throw new Error(`change ${changeId} is still ${status}; stopped waiting for it`);
    if (Date.now() > deadline) {
      // Followed up by a message of its own, not by retries: the change may take as long as its
      // approval is valid (an outage), far beyond what this message's attempts would cover.
      await ctx.inTx((tx) => followUp(tx, message, d.followUpMs ?? FOLLOW_UP_MS));
      return;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Records the change's end on its proposal: published or failed, unless it was cancelled meanwhile. */
async function recordOutcome(
  d: PublishDeps,
  tx: PoolClient,
  workspaceId: string,
  proposalId: string,
  status: 'applied' | 'failed',
  changeError: string | null,
): Promise<void> {
  const current = await getProposal(tx, workspaceId, proposalId, true);
  if (current === undefined) return;
  const now = d.clock();
  const outcome =
    current.status === 'publishing'
      ? { status: status === 'applied' ? ('published' as const) : ('failed' as const) }
      : {};
  await updateProposal(
    tx,
    moved(
      current,
      { ...outcome, changeStatus: status, changeError, publishedAt: status === 'applied' ? now : null },
      now,
    ),
    current.revision,
  );
}

/** Dispatches an approved proposal; returns it as it is afterwards. */
function dispatch(d: PublishDeps, workspaceId: string, proposalId: string): Promise<Proposal | undefined> {
  return inTransaction(d.pool, async (tx) => {
    const p = await getProposal(tx, workspaceId, proposalId, true);
    if (p === undefined || p.status !== 'approved') return p;
    const now = d.clock();
    const write = async (next: Proposal) => (await updateProposal(tx, next, p.revision)) ?? next;
    if (shownProposalStatus(p, now) === 'expired') {
      return write(
        moved(p, { status: 'expired', changeError: 'publish_hours ran out before it was published' }, now),
      );
    }
    const optimizer = await getOptimizer(tx, workspaceId, p.optimizerId);
    if (optimizer === undefined || !optimizer.enabled) {
      return write(
        moved(p, { status: 'cancelled', cancelledAt: now, cancelReason: 'the optimizer was paused' }, now),
      );
    }
    return write(moved(p, await recordChange(d, p), now));
  });
}

/**
 * Has the changes service record the proposal's change as approved: the proposal is then
 * publishing; after a refusal that dispatching again cannot help, failed.
 */
async function recordChange(d: PublishDeps, p: Proposal): Promise<Partial<Proposal>> {
  const adPath = `/ads/${encodeURIComponent(p.variant.baseAdId)}`;
  try {
    const { change } = await d.changes.recordApprovedChange(
      {
        change: {
          accountId: p.accountId,
          tool: 'ads_update_ad',
          operation: { method: 'POST', path: adPath, bodyJson: JSON.stringify(publishBody(p.variant)) },
          targetPath: adPath,
          objectType: 'ad',
          effect: 'update',
        },
        changeId: changeIdOf(p.proposalId),
        approvedBy: `${p.approvedBy ?? 'a person'} (optimization proposal ${p.proposalId})`,
        approverUserId: p.approvedUserId ?? '',
      },
      workerFor(p),
    );
    return {
      status: 'publishing',
      changeId: change?.changeId ?? null,
      changeStatus: change === undefined ? null : enumWord(ChangeStatusSchema, change.state),
    };
  } catch (err) {
    const e = ConnectError.from(err);
    if (!PERMANENT.has(e.code)) throw err;
    d.logger.warn({ proposal_id: p.proposalId, err: e.rawMessage }, 'publishing refused');
    return { status: 'failed', changeError: e.rawMessage };
  }
}

/**
 * createPublishGiveUp returns the give-up path of publish messages (past their last attempt): a
 * proposal still approved or publishing is followed up by a new message later, so an outage
 * never strands it; it ends by itself (published or failed with its change, or expired when its
 * publish hours run out before it was dispatched).
 */
export function createPublishGiveUp(d: Pick<PublishDeps, 'pool' | 'logger' | 'followUpMs'>) {
  return async (
    message: Delivery<PublishMessage>,
    ctx: HandlerContext,
    reason: GiveUpReason,
  ): Promise<void> => {
    const { proposal_id: proposalId, workspace_id: workspaceId } = message.payload;
    const p = await getProposal(d.pool, workspaceId, proposalId);
    if (p === undefined || (p.status !== 'approved' && p.status !== 'publishing')) return;
    d.logger.warn(
      { proposal_id: proposalId, reason: reason.kind },
      'publishing ran out of attempts; it is followed up later',
    );
    await ctx.inTx((tx) => followUp(tx, message, d.followUpMs ?? FOLLOW_UP_MS));
  };
}
