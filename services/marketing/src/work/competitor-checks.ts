/**
 * Checking a competitor source: take the host's politeness slot, read the page through the safe
 * fetcher, judge it against the baseline and record the observation. A check by hand and a
 * scheduled check (a competitor-check message) differ only in how they wait for the host.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { HandlerContext } from '@adsmcp/runtime/bus/bus';
import { inTransaction, type Pool, type PoolClient } from '@adsmcp/runtime/db';
import { NotFoundError, ResourceExhaustedError } from '@adsmcp/runtime/errors';
import type { Logger } from '@adsmcp/runtime/log';
import { type SafeFetch, SafeFetchError } from '@adsmcp/runtime/safe-fetch';
import {
  type Fetched,
  judge,
  OBSERVATIONS_KEPT,
  type Observation,
  PAGE_MAX_BYTES,
  type Trigger,
} from '../domain/competitor-observation.ts';
import type { CompetitorSource } from '../domain/competitor-source.ts';
import {
  claimHostSlot,
  getSource,
  insertObservation,
  lockSource,
  pruneObservations,
  recordLastCheck,
  reserveHostSlot,
} from '../store/competitor-store.ts';

/** At most one fetch per host in this many milliseconds, across all sources and workspaces. */
export const HOST_SPACING_MS = 10_000;

export interface CheckerDeps {
  pool: Pool;
  /** The product passes createSafeFetcher(); tests pass one that reaches their local site. */
  fetchPage: SafeFetch;
  clock?: () => Date;
  hostSpacingMs?: number;
  logger?: Logger;
}

export interface CheckResult {
  observation: Observation;
  source: CompetitorSource;
}

/** The payload of a competitor-check message. */
export interface CheckMessage {
  workspace_id: string;
  source_id: string;
  /** When the check was due (the source's next_check_at when it was enqueued). */
  due_at: string;
}

export interface CompetitorChecker {
  /** Checks a source now, by hand (paused or not); refused while its host's slot is taken. */
  checkNow(workspaceId: string, sourceId: string, requestedBy: string): Promise<CheckResult>;
  /** Runs a scheduled check; skips a source that was paused or removed since it was enqueued. */
  checkScheduled(message: CheckMessage, ctx: HandlerContext): Promise<void>;
}

const notFound = (sourceId: string) =>
  new NotFoundError(
    `no competitor source ${sourceId} in this workspace; ads_list_competitor_sources lists them`,
  );

async function fetchOnce(fetchPage: SafeFetch, url: string): Promise<Fetched> {
  try {
    const res = await fetchPage(url, {
      maxBytes: PAGE_MAX_BYTES,
      accept: 'text/html,application/xhtml+xml,text/plain;q=0.8',
    });
    return {
      kind: 'response',
      url,
      finalUrl: res.url,
      status: res.status,
      contentType: res.contentType,
      body: res.body,
    };
  } catch (err) {
    if (err instanceof SafeFetchError)
      return { kind: 'error', url, reason: err.reason, message: err.message };
    throw err;
  }
}

/** createCompetitorChecker builds the checks from their dependencies. */
export function createCompetitorChecker(deps: CheckerDeps): CompetitorChecker {
  const clock = deps.clock ?? (() => new Date());
  const spacingMs = deps.hostSpacingMs ?? HOST_SPACING_MS;

  /** Judges what was fetched against the source as it is now, and records it. */
  async function record(
    tx: PoolClient,
    workspaceId: string,
    sourceId: string,
    fetched: Fetched,
    meta: { checkedAt: Date; trigger: Trigger; requestedBy: string | null },
  ): Promise<CheckResult | undefined> {
    const source = await lockSource(tx, workspaceId, sourceId);
    if (source === undefined) return undefined;
    // A scheduled check of a source paused or pointed elsewhere while its page was fetched records
    // nothing: the pause withdrew the reads, and the page is no longer the source's.
    if (meta.trigger === 'scheduled' && (!source.enabled || source.url !== fetched.url)) return undefined;
    const { observation, baseline } = judge(source, fetched, { ...meta, observationId: randomUUID() });
    const stored = await insertObservation(tx, observation);
    await recordLastCheck(tx, stored, baseline);
    await pruneObservations(tx, workspaceId, sourceId, OBSERVATIONS_KEPT);
    const updated = await lockSource(tx, workspaceId, sourceId);
    return updated === undefined ? undefined : { observation: stored, source: updated };
  }

  return {
    async checkNow(workspaceId, sourceId, requestedBy) {
      const source = await getSource(deps.pool, workspaceId, sourceId);
      if (source === undefined) throw notFound(sourceId);
      const checkedAt = clock();
      const freeAt = await claimHostSlot(deps.pool, source.host, checkedAt, spacingMs);
      if (freeAt !== undefined) {
        const seconds = Math.max(1, Math.ceil((freeAt.getTime() - checkedAt.getTime()) / 1000));
        throw new ResourceExhaustedError(
          `${source.host} was fetched less than ${spacingMs / 1000} s ago: checks of one host are spaced at least that far apart, across all sources; try again in ${seconds} s`,
          seconds,
        );
      }
      const fetched = await fetchOnce(deps.fetchPage, source.url);
      const result = await inTransaction(deps.pool, (tx) =>
        record(tx, workspaceId, sourceId, fetched, { checkedAt, trigger: 'manual', requestedBy }),
      );
      if (result === undefined) throw notFound(sourceId);
      return result;
    },

    async checkScheduled(message, ctx) {
      const source = await getSource(deps.pool, message.workspace_id, message.source_id);
      if (source === undefined || !source.enabled) {
        deps.logger?.info(
          { source_id: message.source_id },
          'competitor check skipped: the source is paused or gone',
        );
        return;
      }
      const startAt = await reserveHostSlot(deps.pool, source.host, clock(), spacingMs);
      const waitMs = startAt.getTime() - clock().getTime();
      if (waitMs > 0) {
        await sleep(waitMs, undefined, { signal: ctx.signal });
        // Paused, removed or pointed elsewhere during the wait for the host's slot: no read.
        const now = await getSource(deps.pool, message.workspace_id, message.source_id);
        if (now === undefined || !now.enabled || now.url !== source.url) {
          deps.logger?.info(
            { source_id: message.source_id },
            'competitor check skipped: the source was paused, changed or removed while it waited',
          );
          return;
        }
      }
      const checkedAt = clock();
      const fetched = await fetchOnce(deps.fetchPage, source.url);
      const result = await ctx.inTx((tx) =>
        record(tx, message.workspace_id, message.source_id, fetched, {
          checkedAt,
          trigger: 'scheduled',
          requestedBy: null,
        }),
      );
      // With the scheduler's 'competitor checks enqueued' line, a schedule that stalls shows where.
      deps.logger?.info(
        {
          source_id: message.source_id,
          due_at: message.due_at,
          outcome: result?.observation.outcome ?? null,
        },
        'scheduled competitor check recorded',
      );
    },
  };
}
