/** ReviewService: proto <-> domain for review runs and proposals, and the transactions around them. */

import { randomUUID } from 'node:crypto';
import {
  type AdPerformanceSchema,
  type ProposalSchema,
  ProposalStatusSchema,
  type ReviewRunSchema,
  type ReviewService,
  RunOutcomeSchema,
  RunStatusSchema,
  RunTriggerSchema,
  type Variant as VariantMessage,
} from '@adsmcp/proto/optimizer/v1/reviews_pb';
import { deterministicId, enqueue } from '@adsmcp/runtime/bus/outbox';
import { principalOf } from '@adsmcp/runtime/connect-server';
import { dateTimeProblem } from '@adsmcp/runtime/date-time';
import { inTransaction, type Pool, type Queryable } from '@adsmcp/runtime/db';
import { enumValue, enumWord, enumWords } from '@adsmcp/runtime/enum-words';
import { FailedPreconditionError, InvalidArgumentError, NotFoundError } from '@adsmcp/runtime/errors';
import { nextOffset, pageOf } from '@adsmcp/runtime/paging';
import { actorName, type Principal } from '@adsmcp/runtime/principal';
import type { DescEnum, MessageInitShape } from '@bufbuild/protobuf';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { canonicalUuid, type Optimizer } from '../domain/optimizer.ts';
import {
  approvedProposal,
  cancelledProposal,
  checkMayApprove,
  editedProposal,
  newProposal,
  type Proposal,
  reviewedProposal,
  shownProposalStatus,
} from '../domain/proposal.ts';
import {
  type AdPerformance,
  checkCompletion,
  claimed,
  completedRun,
  completionDigest,
  type Run,
  type RunStatus,
  requestRefusal,
  requireClaim,
  type SnapshotInput,
  shownStatus,
  snapshotOf,
  type Variant,
} from '../domain/review.ts';
import { getOptimizer, lockOptimizer } from '../store/optimizer-store.ts';
import {
  countProposals,
  countRuns,
  insertProposal,
  proposalIdsOf,
  getProposal as readProposal,
  listProposals as readProposals,
  getRun as readRun,
  listRuns as readRuns,
  requestRun,
  runProposals,
  updateProposal,
  updateRun,
} from '../store/review-store.ts';
import { PUBLISH_TOPIC, type PublishMessage } from '../work/publish.ts';
import { enqueueProposalAwaiting } from '../work/webhook-events.ts';
import { type Assets, checkVariantAssets } from './asset-checks.ts';

/** An RFC 3339 date-time with its offset. */

export interface ReviewHandlerDeps {
  pool: Pool;
  clock: () => Date;
  /** The marketing service's campaign assets, to check a variant's asset_id; none without MARKETING_URL. */
  assets?: Assets;
}

const iso = (d: Date | null) => d?.toISOString();

function toPerformance(a: AdPerformance): MessageInitShape<typeof AdPerformanceSchema> {
  return {
    adId: a.adId,
    adName: a.adName,
    campaignId: a.campaignId,
    adGroupId: a.adGroupId,
    status: a.status,
    title: a.title,
    body: a.body,
    targetUrl: a.targetUrl,
    impressions: BigInt(a.impressions),
    clicks: BigInt(a.clicks),
    conversions: a.conversions,
    spendMicros: BigInt(a.spendMicros),
    ctr: a.ctr,
    cpcMicros: a.cpcMicros === undefined ? undefined : BigInt(a.cpcMicros),
    cpaMicros: a.cpaMicros === undefined ? undefined : BigInt(a.cpaMicros),
    meetsThresholds: a.meetsThresholds,
    belowThresholds: a.belowThresholds,
  };
}

export function toRunMessage(
  r: Run,
  now: Date,
  proposalIds: string[] = [],
): MessageInitShape<typeof ReviewRunSchema> {
  const status = shownStatus(r, now);
  const s = r.snapshot;
  return {
    runId: r.runId,
    optimizerId: r.optimizerId,
    accountId: r.accountId,
    // The row's words by the one rule (enum-words.ts); a word the proto lacks throws.
    state: enumValue(RunStatusSchema, status),
    queuedBy: enumValue(RunTriggerSchema, r.trigger),
    requestedBy: r.requestedBy,
    createdAt: r.createdAt.toISOString(),
    updatedAt: r.updatedAt.toISOString(),
    claimedAt: iso(r.claimedAt),
    claimExpiresAt: status === 'claimed' ? iso(r.claimExpiresAt) : undefined,
    found: r.outcome === null ? undefined : enumValue(RunOutcomeSchema, r.outcome),
    summary: r.summary ?? undefined,
    completedAt: iso(r.completedAt),
    cancelReason: r.cancelReason ?? undefined,
    proposalIds,
    snapshot: s === null ? undefined : { ...s, ads: s.ads.map(toPerformance) },
  };
}

export function toProposalMessage(p: Proposal, now: Date): MessageInitShape<typeof ProposalSchema> {
  return {
    proposalId: p.proposalId,
    optimizerId: p.optimizerId,
    accountId: p.accountId,
    runId: p.runId,
    // The row's word by the one rule (enum-words.ts); a word the proto lacks throws.
    state: enumValue(ProposalStatusSchema, shownProposalStatus(p, now)),
    revision: p.revision,
    variant: p.variant,
    evidence: p.evidence === null ? undefined : toPerformance(p.evidence),
    createdAt: p.createdAt.toISOString(),
    updatedAt: p.updatedAt.toISOString(),
    reviewExpiresAt: iso(p.reviewExpiresAt),
    reviewNote: p.reviewNote ?? undefined,
    reviewedBy: p.reviewedBy ?? undefined,
    approvedBy: p.approvedBy ?? undefined,
    approvedAt: iso(p.approvedAt),
    publishBy: iso(p.publishBy),
    changeId: p.changeId ?? undefined,
    changeStatus: p.changeStatus ?? undefined,
    changeError: p.changeError ?? undefined,
    publishedAt: iso(p.publishedAt),
    cancelledAt: iso(p.cancelledAt),
    cancelReason: p.cancelReason ?? undefined,
  };
}

/** The variant of a request; `field` names it in errors (`variants[0]`, `variant`). */
function fromVariant(v: VariantMessage, field: string): Variant {
  return {
    baseAdId: v.baseAdId,
    name: v.name,
    title: v.title,
    body: v.body,
    targetUrl: v.targetUrl,
    rationale: v.rationale,
    hypothesis: v.hypothesis,
    ...(v.assetId !== undefined && { assetId: canonicalUuid(`${field}.asset_id`, v.assetId) }),
  };
}

/**
 * The word a list is filtered by (enum-words.ts), or none when the request names no status. A
 * number the enum lacks (a newer caller's value) would match nothing and read as "none": refused.
 */
function statusFilter(desc: DescEnum, value: number | undefined): string | undefined {
  if (value === undefined || value === 0) return undefined;
  if (desc.value[value] === undefined) {
    throw new InvalidArgumentError(`status must be one of ${enumWords(desc).join(', ')} (got ${value})`);
  }
  return enumWord(desc, value) ?? undefined;
}

const optimizerNotFound = (id: string) =>
  new NotFoundError(
    `no optimizer ${id} in this workspace; ads_list_optimizers lists the optimizers you can use`,
  );
const runNotFound = (id: string) =>
  new NotFoundError(`no optimization run ${id} in this workspace; ads_list_optimization_runs lists them`);
const proposalNotFound = (id: string) =>
  new NotFoundError(
    `no optimization proposal ${id} in this workspace; ads_list_optimization_proposals lists them`,
  );

async function loadOptimizer(db: Queryable, workspaceId: string, id: string): Promise<Optimizer> {
  const o = await getOptimizer(db, workspaceId, id);
  if (o === undefined) throw optimizerNotFound(id);
  return o;
}

/** The run claimed with `token`, or why it is not: the one check before a snapshot is read or recorded. */
export async function claimedRun(
  db: Queryable,
  workspaceId: string,
  runId: string,
  token: string,
  now: Date,
) {
  const run = await readRun(db, workspaceId, runId);
  if (run === undefined) throw runNotFound(runId);
  requireClaim(run, token, now);
  return { run, optimizer: await loadOptimizer(db, workspaceId, run.optimizerId) };
}

/**
 * recordSnapshot judges `input` by the optimizer's thresholds and stores it as the snapshot of the
 * run claimed with `token`, checking the claim again under the run's lock.
 */
export async function recordSnapshot(
  pool: Pool,
  workspaceId: string,
  runId: string,
  token: string,
  input: SnapshotInput,
  now: Date,
): Promise<Run> {
  return inTransaction(pool, async (tx) => {
    const current = await readRun(tx, workspaceId, runId, true);
    if (current === undefined) throw runNotFound(runId);
    requireClaim(current, token, now);
    const optimizer = await loadOptimizer(tx, workspaceId, current.optimizerId);
    const snapshot = snapshotOf(input, optimizer.config, now);
    return updateRun(tx, { ...current, snapshot, updatedAt: now });
  });
}

// Each RPC's function takes its request and answer types from the generated service, so a moved
// function is checked exactly as its table entry was.
type Impl = ServiceImpl<typeof ReviewService>;
type Req<K extends keyof Impl> = Parameters<Impl[K]>[0];
type Res<K extends keyof Impl> = Promise<Awaited<ReturnType<Impl[K]>>>;

/** createReviewHandlers builds the ReviewService implementation from its dependencies. */
export function createReviewHandlers(deps: ReviewHandlerDeps): ServiceImpl<typeof ReviewService> {
  return {
    requestReview: (req, ctx) => requestReview(deps, req, ctx),
    listRuns: (req, ctx) => listRuns(deps, req, ctx),
    getRun: (req, ctx) => getRun(deps, req, ctx),
    claimRun: (req, ctx) => claimRun(deps, req, ctx),
    recordSnapshot: (req, ctx) => recordClaimedSnapshot(deps, req, ctx),
    completeRun: (req, ctx) => completeRun(deps, req, ctx),
    listProposals: (req, ctx) => listProposals(deps, req, ctx),
    getProposal: (req, ctx) => getProposal(deps, req, ctx),
    editProposal: (req, ctx) => editProposal(deps, req, ctx),
    reviewProposal: (req, ctx) => reviewProposal(deps, req, ctx),
    cancelProposal: (req, ctx) => cancelProposal(deps, req, ctx),
    approveProposal: (req, ctx) => approveProposal(deps, req, ctx),
  };
}

async function withProposals(deps: ReviewHandlerDeps, workspaceId: string, run: Run, now: Date) {
  return toRunMessage(
    run,
    now,
    (await proposalIdsOf(deps.pool, workspaceId, [run.runId])).get(run.runId) ?? [],
  );
}

/** Locks a proposal, applies `change` and writes it; the result as the API shows it. */
async function changeProposal(
  deps: ReviewHandlerDeps,
  principal: Principal,
  proposalId: string,
  change: (p: Proposal, optimizer: Optimizer, now: Date) => Proposal | undefined,
  after?: (tx: Queryable, p: Proposal) => Promise<void>,
) {
  const id = canonicalUuid('proposal_id', proposalId);
  const now = deps.clock();
  const saved = await inTransaction(deps.pool, async (tx) => {
    const seen = await readProposal(tx, principal.workspaceId, id, false);
    if (seen === undefined) throw proposalNotFound(id);
    // The optimizer first, shared, then the proposal: the order a pause takes them in, so a
    // decision read against an enabled optimizer cannot commit after a pause that did not see it.
    const optimizer = await lockOptimizer(tx, principal.workspaceId, seen.optimizerId, 'share');
    if (optimizer === undefined) throw optimizerNotFound(seen.optimizerId);
    const current = await readProposal(tx, principal.workspaceId, id, true);
    if (current === undefined) throw proposalNotFound(id);
    const next = change(current, optimizer, now);
    if (next === undefined) return current;
    const written = await updateProposal(tx, next, current.revision);
    if (written === undefined) throw new Error('a locked proposal changed its revision');
    await after?.(tx, written);
    return written;
  });
  return { proposal: toProposalMessage(saved, now) };
}

async function requestReview(
  deps: ReviewHandlerDeps,
  req: Req<'requestReview'>,
  ctx: HandlerContext,
): Res<'requestReview'> {
  const principal = principalOf(ctx);
  const optimizerId = canonicalUuid('optimizer_id', req.optimizerId);
  const now = deps.clock();
  const result = await inTransaction(deps.pool, async (tx) => {
    const optimizer = await lockOptimizer(tx, principal.workspaceId, optimizerId);
    if (optimizer === undefined) throw optimizerNotFound(optimizerId);
    const refusal = requestRefusal(optimizer);
    if (refusal !== undefined) throw new FailedPreconditionError(refusal);
    return requestRun(tx, optimizer, 'request', actorName(principal), now);
  });
  return { run: await withProposals(deps, principal.workspaceId, result.run, now), created: result.created };
}

async function listRuns(deps: ReviewHandlerDeps, req: Req<'listRuns'>, ctx: HandlerContext): Res<'listRuns'> {
  const principal = principalOf(ctx);
  const optimizerId =
    req.optimizerId === undefined ? undefined : canonicalUuid('optimizer_id', req.optimizerId);
  const status = statusFilter(RunStatusSchema, req.state) as RunStatus | undefined;
  const page = pageOf(req);
  const now = deps.clock();
  const filter = {
    workspaceId: principal.workspaceId,
    optimizerId,
    status,
    now,
  };
  const [runs, total] = await Promise.all([
    readRuns(deps.pool, { ...filter, ...page }),
    countRuns(deps.pool, filter),
  ]);
  const ids = await proposalIdsOf(
    deps.pool,
    principal.workspaceId,
    runs.map((r) => r.runId),
  );
  return {
    runs: runs.map((r) => toRunMessage(r, now, ids.get(r.runId) ?? [])),
    total,
    nextOffset: nextOffset(page, runs.length, total),
  };
}

async function getRun(deps: ReviewHandlerDeps, req: Req<'getRun'>, ctx: HandlerContext): Res<'getRun'> {
  const principal = principalOf(ctx);
  const runId = canonicalUuid('run_id', req.runId);
  const run = await readRun(deps.pool, principal.workspaceId, runId);
  if (run === undefined) throw runNotFound(runId);
  return { run: await withProposals(deps, principal.workspaceId, run, deps.clock()) };
}

/** Claims a run for the caller, with its own token or a new one; SnapshotService's one-call claim uses it too. */
export async function claimRun(
  deps: Pick<ReviewHandlerDeps, 'pool' | 'clock'>,
  req: Pick<Req<'claimRun'>, 'runId' | 'claimToken'>,
  ctx: HandlerContext,
): Res<'claimRun'> {
  const principal = principalOf(ctx);
  const runId = canonicalUuid('run_id', req.runId);
  const token = req.claimToken === undefined ? randomUUID() : canonicalUuid('claim_token', req.claimToken);
  const now = deps.clock();
  const { run, optimizer } = await inTransaction(deps.pool, async (tx) => {
    const current = await readRun(tx, principal.workspaceId, runId, true);
    if (current === undefined) throw runNotFound(runId);
    const o = await loadOptimizer(tx, principal.workspaceId, current.optimizerId);
    const decided = claimed(current, token, actorName(principal), now);
    return { run: decided.renewed ? await updateRun(tx, decided.run) : decided.run, optimizer: o };
  });
  const c = optimizer.config;
  return {
    run: toRunMessage(run, now),
    claimToken: token,
    campaignIds: c.campaignIds,
    goal: c.goal,
    windowHours: c.windowHours,
    reportingDelayHours: c.reportingDelayHours,
    minImpressions: c.minImpressions,
    minClicks: c.minClicks,
    minConversions: c.minConversions,
    claimedAt: (run.claimedAt ?? now).toISOString(),
  };
}

async function recordClaimedSnapshot(
  deps: ReviewHandlerDeps,
  req: Req<'recordSnapshot'>,
  ctx: HandlerContext,
): Res<'recordSnapshot'> {
  const principal = principalOf(ctx);
  const runId = canonicalUuid('run_id', req.runId);
  const token = canonicalUuid('claim_token', req.claimToken);
  const now = deps.clock();
  const run = await recordSnapshot(
    deps.pool,
    principal.workspaceId,
    runId,
    token,
    {
      timeRange: req.timeRange,
      windowStart: req.windowStart,
      windowEnd: req.windowEnd,
      currency: req.currency,
      timeZone: req.timeZone,
      ads: req.ads.map((a) => ({
        adId: a.adId,
        adName: a.adName,
        campaignId: a.campaignId,
        adGroupId: a.adGroupId,
        status: a.status,
        title: a.title,
        body: a.body,
        targetUrl: a.targetUrl,
        impressions: Number(a.impressions),
        clicks: Number(a.clicks),
        conversions: a.conversions,
        spendMicros: Number(a.spendMicros),
      })),
    },
    now,
  );
  const message = toRunMessage(run, now);
  return { run: message, snapshot: message.snapshot };
}

async function completeRun(
  deps: ReviewHandlerDeps,
  req: Req<'completeRun'>,
  ctx: HandlerContext,
): Res<'completeRun'> {
  const principal = principalOf(ctx);
  const runId = canonicalUuid('run_id', req.runId);
  const token = canonicalUuid('claim_token', req.claimToken);
  const completion = {
    outcome: req.outcome,
    summary: req.summary,
    variants: req.variants.map((v, i) => fromVariant(v, `variants[${i}]`)),
  };
  const now = deps.clock();
  const result = await inTransaction(deps.pool, async (tx) => {
    const current = await readRun(tx, principal.workspaceId, runId, true);
    if (current === undefined) throw runNotFound(runId);
    if (current.status === 'completed' && current.claimToken === token) {
      if (current.completionDigest !== completionDigest(completion)) {
        throw new InvalidArgumentError(
          `run ${current.runId} was already completed with a different outcome, summary or variants; a completion is recorded once (ads_get_optimization_run shows it)`,
        );
      }
      return {
        run: current,
        proposals: await runProposals(tx, principal.workspaceId, current.runId),
        repeated: true,
      };
    }
    requireClaim(current, token, now);
    const optimizer = await loadOptimizer(tx, principal.workspaceId, current.optimizerId);
    const outcome = checkCompletion(completion, current.snapshot, optimizer.config);
    await checkVariantAssets(
      deps.assets,
      principal,
      optimizer.accountId,
      completion.variants.map((v, i) => ({ field: `variants[${i}]`, assetId: v.assetId })),
    );
    const run = await updateRun(tx, completedRun(current, outcome, completion, now));
    const evidence = new Map((current.snapshot?.ads ?? []).map((a) => [a.adId, a]));
    const proposals: Proposal[] = [];
    for (const [i, variant] of completion.variants.entries()) {
      proposals.push(
        await insertProposal(
          tx,
          newProposal(
            {
              proposalId: randomUUID(),
              workspaceId: principal.workspaceId,
              optimizerId: optimizer.optimizerId,
              accountId: optimizer.accountId,
              runId: run.runId,
            },
            i,
            variant,
            evidence.get(variant.baseAdId) ?? null,
            optimizer.config,
            now,
          ),
        ),
      );
    }
    for (const p of proposals) await enqueueProposalAwaiting(tx, p, run.summary ?? '', now);
    return { run, proposals, repeated: false };
  });
  return {
    run: toRunMessage(
      result.run,
      now,
      result.proposals.map((p) => p.proposalId),
    ),
    proposals: result.proposals.map((p) => toProposalMessage(p, now)),
    repeated: result.repeated,
  };
}

async function listProposals(
  deps: ReviewHandlerDeps,
  req: Req<'listProposals'>,
  ctx: HandlerContext,
): Res<'listProposals'> {
  const principal = principalOf(ctx);
  const optional = (field: string, value: string | undefined) =>
    value === undefined ? undefined : canonicalUuid(field, value);
  const optimizerId = optional('optimizer_id', req.optimizerId);
  const accountId = optional('account_id', req.accountId);
  const runId = optional('run_id', req.runId);
  const status = statusFilter(ProposalStatusSchema, req.state);
  for (const [field, value] of [
    ['created_after', req.createdAfter],
    ['created_before', req.createdBefore],
  ] as const) {
    // Not Date.parse, which takes 2024-02-30 as March 1 and hour 24, both of which PostgreSQL refuses.
    const problem = value === undefined ? undefined : dateTimeProblem(value);
    if (problem !== undefined)
      throw new InvalidArgumentError(
        `${field} must be an RFC 3339 date-time, e.g. 2026-01-31T00:00:00Z: ${problem} (got ${JSON.stringify(value)})`,
      );
  }
  const page = pageOf(req);
  const now = deps.clock();
  const filter = {
    workspaceId: principal.workspaceId,
    optimizerId,
    status,
    accountId,
    runId,
    createdAfter: req.createdAfter,
    createdBefore: req.createdBefore,
    now,
  };
  const [proposals, total] = await Promise.all([
    readProposals(deps.pool, { ...filter, ...page }),
    countProposals(deps.pool, filter),
  ]);
  return {
    proposals: proposals.map((p) => toProposalMessage(p, now)),
    total,
    nextOffset: nextOffset(page, proposals.length, total),
  };
}

async function getProposal(
  deps: ReviewHandlerDeps,
  req: Req<'getProposal'>,
  ctx: HandlerContext,
): Res<'getProposal'> {
  const principal = principalOf(ctx);
  const proposalId = canonicalUuid('proposal_id', req.proposalId);
  const p = await readProposal(deps.pool, principal.workspaceId, proposalId);
  if (p === undefined) throw proposalNotFound(proposalId);
  return { proposal: toProposalMessage(p, deps.clock()) };
}

async function editProposal(
  deps: ReviewHandlerDeps,
  req: Req<'editProposal'>,
  ctx: HandlerContext,
): Res<'editProposal'> {
  const principal = principalOf(ctx);
  if (req.variant === undefined) throw new InvalidArgumentError('variant is required');
  const variant = fromVariant(req.variant, 'variant');
  if (variant.assetId !== undefined) {
    // Checked before the proposal is locked; an unknown proposal is refused by changeProposal.
    const id = canonicalUuid('proposal_id', req.proposalId);
    const current = await readProposal(deps.pool, principal.workspaceId, id, false);
    if (current !== undefined)
      await checkVariantAssets(deps.assets, principal, current.accountId, [
        { field: 'variant', assetId: variant.assetId },
      ]);
  }
  return changeProposal(deps, principal, req.proposalId, (p, o, now) =>
    editedProposal(p, req.expectedRevision, variant, o.config, now),
  );
}

async function reviewProposal(
  deps: ReviewHandlerDeps,
  req: Req<'reviewProposal'>,
  ctx: HandlerContext,
): Res<'reviewProposal'> {
  const principal = principalOf(ctx);
  return changeProposal(deps, principal, req.proposalId, (p, _o, now) =>
    reviewedProposal(p, req.expectedRevision, req.decision, req.note, actorName(principal), now),
  );
}

async function cancelProposal(
  deps: ReviewHandlerDeps,
  req: Req<'cancelProposal'>,
  ctx: HandlerContext,
): Res<'cancelProposal'> {
  const principal = principalOf(ctx);
  return changeProposal(deps, principal, req.proposalId, (p, _o, now) =>
    cancelledProposal(p, `cancelled by ${actorName(principal)}`, now),
  );
}

async function approveProposal(
  deps: ReviewHandlerDeps,
  req: Req<'approveProposal'>,
  ctx: HandlerContext,
): Res<'approveProposal'> {
  const principal = principalOf(ctx);
  checkMayApprove(principal);
  const approver = { by: actorName(principal), userId: principal.userId ?? '' };
  return changeProposal(
    deps,
    principal,
    req.proposalId,
    (p, o, now) => approvedProposal(p, req.expectedRevision, o, o.config, approver, now),
    // The approval and the work of publishing it commit together.
    async (tx, p) => {
      const message: PublishMessage = { proposal_id: p.proposalId, workspace_id: p.workspaceId };
      await enqueue(tx, {
        topic: PUBLISH_TOPIC,
        key: p.proposalId,
        payload: message,
        id: deterministicId('publish', p.proposalId),
      });
    },
  );
}
