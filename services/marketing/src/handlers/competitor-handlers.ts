/** CompetitorService: proto <-> domain for the workspace's competitor sources and observations. */

import { randomUUID } from 'node:crypto';
import type {
  CompetitorObservationSchema,
  CompetitorService,
  CompetitorSourceSchema,
} from '@adsmcp/proto/marketing/v1/competitors_pb';
import { principalOf } from '@adsmcp/runtime/connect-server';
import { inTransaction, type Pool } from '@adsmcp/runtime/db';
import { NotFoundError, StaleRevisionError } from '@adsmcp/runtime/errors';
import type { Logger } from '@adsmcp/runtime/log';
import { nextOffset, pageOf } from '@adsmcp/runtime/paging';
import { actorName } from '@adsmcp/runtime/principal';
import { createSafeFetcher } from '@adsmcp/runtime/safe-fetch';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import type { Observation } from '../domain/competitor-observation.ts';
import {
  type CompetitorSource,
  newSource,
  pausedSource,
  requirePauser,
  requireUpdater,
  requireUuid,
  updatedSource,
  validateSave,
} from '../domain/competitor-source.ts';
import {
  countObservations,
  countSources,
  getSource,
  insertSource,
  listObservations,
  listSources,
  lockSource,
  updateSource,
} from '../store/competitor-store.ts';
import { type CompetitorChecker, createCompetitorChecker } from '../work/competitor-checks.ts';

export interface CompetitorHandlerDeps {
  pool: Pool;
  logger?: Logger;
  /**
   * The checks by hand; by default with the product's safe fetcher. Tests hand in one whose
   * fetcher reaches their local HTTPS site.
   */
  checker?: CompetitorChecker;
  clock?: () => Date;
  random?: () => number;
}

const notFound = (sourceId: string) =>
  new NotFoundError(
    `no competitor source ${sourceId} in this workspace; ads_list_competitor_sources lists them`,
  );

function toSourceMessage(s: CompetitorSource): MessageInitShape<typeof CompetitorSourceSchema> {
  return {
    sourceId: s.sourceId,
    accountId: s.accountId,
    name: s.name,
    url: s.url,
    literals: s.literals,
    intervalHours: s.intervalHours,
    enabled: s.enabled,
    scheduleState: s.enabled ? 'scheduled' : 'paused',
    nextCheckAt: s.nextCheckAt?.toISOString(),
    pausedAt: s.pausedAt?.toISOString(),
    createdBy: s.createdBy,
    revision: s.revision,
    createdAt: s.createdAt.toISOString(),
    updatedAt: s.updatedAt.toISOString(),
    baselineAt: s.baselineAt?.toISOString(),
    ...(s.lastCheck === null
      ? {}
      : {
          lastCheck: {
            observationId: s.lastCheck.observationId,
            checkedAt: s.lastCheck.checkedAt.toISOString(),
            outcome: s.lastCheck.outcome,
            httpStatus: s.lastCheck.httpStatus ?? undefined,
            summary: s.lastCheck.summary,
          },
        }),
  };
}

function toObservationMessage(o: Observation): MessageInitShape<typeof CompetitorObservationSchema> {
  const e = o.evidence;
  return {
    observationId: o.observationId,
    sourceId: o.sourceId,
    checkedAt: o.checkedAt.toISOString(),
    trigger: o.trigger,
    outcome: o.outcome,
    summary: o.summary,
    url: o.url,
    finalUrl: o.finalUrl ?? undefined,
    httpStatus: o.httpStatus ?? undefined,
    reason: o.reason ?? undefined,
    reasonMessage: o.reasonMessage ?? undefined,
    title: o.title ?? undefined,
    baselineTitle: e.baselineTitle,
    titleChanged: e.titleChanged,
    bodyChanged: e.bodyChanged,
    bodyChanges: e.bodyChanges,
    bodyChangeCount: e.bodyChangeCount,
    literals: e.literals,
  };
}

// Each RPC's function takes its request and answer types from the generated service, so a moved
// function is checked exactly as its table entry was.
type Impl = ServiceImpl<typeof CompetitorService>;
type Req<K extends keyof Impl> = Parameters<Impl[K]>[0];
type Res<K extends keyof Impl> = Promise<Awaited<ReturnType<Impl[K]>>>;

/** The factory's dependencies with its defaults filled in, handed whole to each RPC's function. */
interface Deps {
  pool: Pool;
  clock: () => Date;
  random: () => number;
  checker: CompetitorChecker;
}

/** createCompetitorHandlers builds the CompetitorService implementation from its dependencies. */
export function createCompetitorHandlers(deps: CompetitorHandlerDeps): ServiceImpl<typeof CompetitorService> {
  const clock = deps.clock ?? (() => new Date());
  const random = deps.random ?? Math.random;
  // The product path: the safe fetcher with its defaults, which nothing can loosen.
  const checker =
    deps.checker ??
    createCompetitorChecker({
      pool: deps.pool,
      fetchPage: createSafeFetcher(),
      clock,
      ...(deps.logger ? { logger: deps.logger } : {}),
    });
  const d: Deps = { pool: deps.pool, clock, random, checker };
  return {
    listCompetitorSources: (req, ctx) => listCompetitorSources(d, req, ctx),
    saveCompetitorSource: (req, ctx) => saveCompetitorSource(d, req, ctx),
    pauseCompetitorSource: (req, ctx) => pauseCompetitorSource(d, req, ctx),
    checkCompetitorSource: (req, ctx) => checkCompetitorSource(d, req, ctx),
    getCompetitorObservations: (req, ctx) => getCompetitorObservations(d, req, ctx),
  };
}

async function listCompetitorSources(
  deps: Deps,
  req: Req<'listCompetitorSources'>,
  ctx: HandlerContext,
): Res<'listCompetitorSources'> {
  const principal = principalOf(ctx);
  if (req.accountId !== undefined) requireUuid('account_id', req.accountId);
  const page = pageOf(req);
  const workspaceId = principal.workspaceId;
  const [sources, total] = await Promise.all([
    listSources(deps.pool, { workspaceId, accountId: req.accountId, ...page }),
    countSources(deps.pool, workspaceId, req.accountId),
  ]);
  return {
    sources: sources.map(toSourceMessage),
    total,
    nextOffset: nextOffset(page, sources.length, total),
  };
}

async function saveCompetitorSource(
  deps: Deps,
  req: Req<'saveCompetitorSource'>,
  ctx: HandlerContext,
): Res<'saveCompetitorSource'> {
  const principal = principalOf(ctx);
  const save = validateSave({
    accountId: req.accountId,
    name: req.name,
    url: req.url,
    intervalHours: req.intervalHours,
    enabled: req.enabled,
    literals: [...req.literals],
    sourceId: req.sourceId,
    expectedRevision: req.expectedRevision,
  });
  const workspaceId = principal.workspaceId;
  const now = deps.clock();
  const { update } = save;
  if (update === undefined) {
    const ids = { sourceId: randomUUID(), workspaceId, createdBy: actorName(principal, 'member') };
    const created = await insertSource(deps.pool, newSource(save, ids, now, deps.random));
    return { source: toSourceMessage(created), created: true };
  }
  const saved = await inTransaction(deps.pool, async (tx) => {
    const current = await lockSource(tx, workspaceId, update.sourceId);
    if (current === undefined) throw notFound(update.sourceId);
    requireUpdater(principal, current);
    const written = await updateSource(tx, updatedSource(current, save, now, deps.random), current.revision);
    // The row is locked, so its revision cannot have moved since it was read.
    if (written === undefined) throw new StaleRevisionError(current.revision, 'source');
    return written;
  });
  return { source: toSourceMessage(saved), created: false };
}

async function pauseCompetitorSource(
  deps: Deps,
  req: Req<'pauseCompetitorSource'>,
  ctx: HandlerContext,
): Res<'pauseCompetitorSource'> {
  const principal = principalOf(ctx);
  requireUuid('source_id', req.sourceId);
  const now = deps.clock();
  const result = await inTransaction(deps.pool, async (tx) => {
    const current = await lockSource(tx, principal.workspaceId, req.sourceId);
    if (current === undefined) throw notFound(req.sourceId);
    requirePauser(principal, current);
    const paused = pausedSource(current, now);
    if (paused === undefined) return current;
    const written = await updateSource(tx, paused, current.revision);
    if (written === undefined) throw new Error('a locked competitor source changed its revision');
    return written;
  });
  return { source: toSourceMessage(result) };
}

async function checkCompetitorSource(
  deps: Deps,
  req: Req<'checkCompetitorSource'>,
  ctx: HandlerContext,
): Res<'checkCompetitorSource'> {
  const principal = principalOf(ctx);
  requireUuid('source_id', req.sourceId);
  const { observation, source } = await deps.checker.checkNow(
    principal.workspaceId,
    req.sourceId,
    actorName(principal, 'member'),
  );
  return { observation: toObservationMessage(observation), source: toSourceMessage(source) };
}

async function getCompetitorObservations(
  deps: Deps,
  req: Req<'getCompetitorObservations'>,
  ctx: HandlerContext,
): Res<'getCompetitorObservations'> {
  const principal = principalOf(ctx);
  requireUuid('source_id', req.sourceId);
  const workspaceId = principal.workspaceId;
  if ((await getSource(deps.pool, workspaceId, req.sourceId)) === undefined) throw notFound(req.sourceId);
  const page = pageOf(req);
  const [observations, total] = await Promise.all([
    listObservations(deps.pool, { workspaceId, sourceId: req.sourceId, ...page }),
    countObservations(deps.pool, workspaceId, req.sourceId),
  ]);
  return {
    observations: observations.map(toObservationMessage),
    total,
    nextOffset: nextOffset(page, observations.length, total),
  };
}
