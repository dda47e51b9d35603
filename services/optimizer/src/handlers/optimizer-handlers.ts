/** OptimizerService: proto <-> domain for the workspace's optimizers. */

import { randomUUID } from 'node:crypto';
import type {
  OptimizerConfig as ConfigMessage,
  OptimizerConfigSchema,
  OptimizerSchema,
  OptimizerService,
} from '@adsmcp/proto/optimizer/v1/optimizer_pb';
import { principalOf } from '@adsmcp/runtime/connect-server';
import { inTransaction, type Pool, type Queryable } from '@adsmcp/runtime/db';
import { NotFoundError, StaleRevisionError } from '@adsmcp/runtime/errors';
import { nextOffset, pageOf } from '@adsmcp/runtime/paging';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import {
  canonicalUuid,
  newOptimizer,
  type Optimizer,
  type OptimizerConfig,
  pausedOptimizer,
  statusOf,
  type UncheckedConfig,
  updatedOptimizer,
  validateSave,
} from '../domain/optimizer.ts';
import {
  countOptimizers,
  getOptimizer,
  insertOptimizer,
  listOptimizers,
  lockOptimizer,
  updateOptimizer,
} from '../store/optimizer-store.ts';
import { cancelOpenRuns, cancelUndispatched, setFeatureSuspended } from '../store/review-store.ts';

export interface OptimizerHandlerDeps {
  pool: Pool;
  /** The time; a test hands in a fake one. */
  clock: () => Date;
}

const notFound = (optimizerId: string) =>
  new NotFoundError(
    `no optimizer ${optimizerId} in this workspace; ads_list_optimizers lists the optimizers you can use`,
  );

function fromConfigMessage(c: ConfigMessage): UncheckedConfig {
  return {
    campaignIds: [...c.campaignIds],
    goal: c.goal,
    ...(c.conversionGoalId !== undefined && { conversionGoalId: c.conversionGoalId }),
    ...(c.target !== undefined && { target: c.target }),
    cadenceHours: c.cadenceHours,
    windowHours: c.windowHours,
    reportingDelayHours: c.reportingDelayHours,
    minImpressions: c.minImpressions,
    minClicks: c.minClicks,
    minConversions: c.minConversions,
    maxAdsPerCampaign: c.maxAdsPerCampaign,
    reviewHours: c.reviewHours,
    publishHours: c.publishHours,
    ...(c.brandInstructions !== undefined && { brandInstructions: c.brandInstructions }),
    allowedDomains: [...c.allowedDomains],
  };
}

function toConfigMessage(c: OptimizerConfig): MessageInitShape<typeof OptimizerConfigSchema> {
  return {
    campaignIds: c.campaignIds,
    goal: c.goal,
    conversionGoalId: c.conversionGoalId,
    target: c.target,
    cadenceHours: c.cadenceHours,
    windowHours: c.windowHours,
    reportingDelayHours: c.reportingDelayHours,
    minImpressions: c.minImpressions,
    minClicks: c.minClicks,
    minConversions: c.minConversions,
    maxAdsPerCampaign: c.maxAdsPerCampaign,
    reviewHours: c.reviewHours,
    publishHours: c.publishHours,
    brandInstructions: c.brandInstructions,
    allowedDomains: c.allowedDomains,
  };
}

function toOptimizerMessage(o: Optimizer): MessageInitShape<typeof OptimizerSchema> {
  return {
    optimizerId: o.optimizerId,
    accountId: o.accountId,
    name: o.name,
    config: toConfigMessage(o.config),
    enabled: o.enabled,
    status: statusOf(o),
    revision: o.revision,
    createdAt: o.createdAt.toISOString(),
    updatedAt: o.updatedAt.toISOString(),
    pausedAt: o.pausedAt?.toISOString(),
    nextReviewAt: o.nextReviewAt?.toISOString(),
  };
}

/**
 * stopWork ends what a paused optimizer must not do: its open runs are cancelled (no review
 * happens) and its approved proposals not yet dispatched are cancelled (nothing is published).
 * Proposals already publishing finish; live ads stay live.
 */
async function stopWork(tx: Queryable, o: Optimizer, now: Date): Promise<void> {
  await cancelOpenRuns(tx, o.workspaceId, o.optimizerId, 'the optimizer was paused', now);
  await cancelUndispatched(
    tx,
    o.workspaceId,
    o.optimizerId,
    'the optimizer was paused before it was published',
    now,
  );
}

// Each RPC's function takes its request and answer types from the generated service, so a moved
// function is checked exactly as its table entry was.
type Impl = ServiceImpl<typeof OptimizerService>;
type Req<K extends keyof Impl> = Parameters<Impl[K]>[0];
type Res<K extends keyof Impl> = Promise<Awaited<ReturnType<Impl[K]>>>;

/** createOptimizerHandlers builds the OptimizerService implementation from its dependencies. */
export function createOptimizerHandlers(deps: OptimizerHandlerDeps): Impl {
  return {
    saveOptimizer: (req, ctx) => saveOptimizer(deps, req, ctx),
    getOptimizer: (req, ctx) => readOptimizer(deps, req, ctx),
    listOptimizers: (req, ctx) => readOptimizers(deps, req, ctx),
    pauseOptimizer: (req, ctx) => pauseOptimizer(deps, req, ctx),
    setWorkspaceFeature: (req, ctx) => setWorkspaceFeature(deps, req, ctx),
  };
}

async function saveOptimizer(
  deps: OptimizerHandlerDeps,
  req: Req<'saveOptimizer'>,
  ctx: HandlerContext,
): Res<'saveOptimizer'> {
  const principal = principalOf(ctx);
  const save = validateSave({
    accountId: req.accountId,
    name: req.name,
    config: req.config === undefined ? undefined : fromConfigMessage(req.config),
    enabled: req.enabled,
    optimizerId: req.optimizerId,
    expectedRevision: req.expectedRevision,
  });
  const workspaceId = principal.workspaceId;
  const now = deps.clock();
  const { update } = save;
  if (update === undefined) {
    const created = await insertOptimizer(
      deps.pool,
      newOptimizer(save, { optimizerId: randomUUID(), workspaceId }, now),
    );
    return { optimizer: toOptimizerMessage(created), created: true };
  }
  const saved = await inTransaction(deps.pool, async (tx) => {
    const current = await lockOptimizer(tx, workspaceId, update.optimizerId);
    if (current === undefined) throw notFound(update.optimizerId);
    const next = updatedOptimizer(current, save, now);
    const written = await updateOptimizer(tx, next, current.revision);
    // The row is locked, so its revision cannot have moved since it was read.
    if (written === undefined) throw new StaleRevisionError(current.revision, 'optimizer');
    if (current.enabled && !written.enabled) await stopWork(tx, written, now);
    return written;
  });
  return { optimizer: toOptimizerMessage(saved), created: false };
}

async function readOptimizer(
  deps: OptimizerHandlerDeps,
  req: Req<'getOptimizer'>,
  ctx: HandlerContext,
): Res<'getOptimizer'> {
  const principal = principalOf(ctx);
  const optimizerId = canonicalUuid('optimizer_id', req.optimizerId);
  const found = await getOptimizer(deps.pool, principal.workspaceId, optimizerId);
  if (found === undefined) throw notFound(optimizerId);
  return { optimizer: toOptimizerMessage(found) };
}

async function readOptimizers(
  deps: OptimizerHandlerDeps,
  req: Req<'listOptimizers'>,
  ctx: HandlerContext,
): Res<'listOptimizers'> {
  const principal = principalOf(ctx);
  const accountId = req.accountId === undefined ? undefined : canonicalUuid('account_id', req.accountId);
  const page = pageOf(req);
  const workspaceId = principal.workspaceId;
  const [optimizers, total] = await Promise.all([
    listOptimizers(deps.pool, { workspaceId, accountId, ...page }),
    countOptimizers(deps.pool, workspaceId, accountId),
  ]);
  return {
    optimizers: optimizers.map(toOptimizerMessage),
    total,
    nextOffset: nextOffset(page, optimizers.length, total),
  };
}

async function pauseOptimizer(
  deps: OptimizerHandlerDeps,
  req: Req<'pauseOptimizer'>,
  ctx: HandlerContext,
): Res<'pauseOptimizer'> {
  const principal = principalOf(ctx);
  const optimizerId = canonicalUuid('optimizer_id', req.optimizerId);
  const now = deps.clock();
  const result = await inTransaction(deps.pool, async (tx) => {
    const current = await lockOptimizer(tx, principal.workspaceId, optimizerId);
    if (current === undefined) throw notFound(optimizerId);
    const paused = pausedOptimizer(current, now);
    if (paused === undefined) return current;
    const written = await updateOptimizer(tx, paused, current.revision);
    if (written === undefined) throw new Error('a locked optimizer row changed its revision');
    await stopWork(tx, written, now);
    return written;
  });
  return { optimizer: toOptimizerMessage(result) };
}

async function setWorkspaceFeature(
  deps: OptimizerHandlerDeps,
  req: Req<'setWorkspaceFeature'>,
  ctx: HandlerContext,
): Res<'setWorkspaceFeature'> {
  const principal = principalOf(ctx);
  const changed = await setFeatureSuspended(deps.pool, principal.workspaceId, !req.enabled, deps.clock());
  return { changed };
}
