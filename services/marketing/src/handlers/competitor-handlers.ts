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
import type { ServiceImpl } from '@connectrpc/connect';
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

  return {
    async listCompetitorSources(req, ctx) {
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
    },

    async saveCompetitorSource(req, ctx) {
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
      const now = clock();
      const { update } = save;
      if (update === undefined) {
        const ids = { sourceId: randomUUID(), workspaceId, createdBy: actorName(principal, 'member') };
        const created = await insertSource(deps.pool, newSource(save, ids, now, random));
        return { source: toSourceMessage(created), created: true };
      }
      const saved = await inTransaction(deps.pool, async (tx) => {
        const current = await lockSource(tx, workspaceId, update.sourceId);
        if (current === undefined) throw notFound(update.sourceId);
        requireUpdater(principal, current);
        const written = await updateSource(tx, updatedSource(current, save, now, random), current.revision);
        // The row is locked, so its revision cannot have moved since it was read.
        if (written === undefined) throw new StaleRevisionError(current.revision, 'source');
        return written;
      });
      return { source: toSourceMessage(saved), created: false };
    },

    async pauseCompetitorSource(req, ctx) {
      const principal = principalOf(ctx);
      requireUuid('source_id', req.sourceId);
      const now = clock();
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
    },

    async checkCompetitorSource(req, ctx) {
      const principal = principalOf(ctx);
      requireUuid('source_id', req.sourceId);
      const { observation, source } = await checker.checkNow(
        principal.workspaceId,
        req.sourceId,
        actorName(principal, 'member'),
      );
      return { observation: toObservationMessage(observation), source: toSourceMessage(source) };
    },

    async getCompetitorObservations(req, ctx) {
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
    },
  };
}
