/**
 * SnapshotService: the snapshot of a claimed run, read from the ad platform by the optimizer itself
 * (as its worker, for the caller's workspace) and recorded on the run.
 */
import type { SnapshotService } from '@adsmcp/proto/optimizer/v1/snapshot_pb';
import { principalOf } from '@adsmcp/runtime/connect-server';
import type { Pool } from '@adsmcp/runtime/db';
import { UnavailableError } from '@adsmcp/runtime/errors';
import { readingFor } from '@adsmcp/runtime/service-client';
import { localDay } from '@adsmcp/runtime/zoned-format';
import type { ServiceImpl } from '@connectrpc/connect';
import { canonicalUuid } from '../domain/optimizer.ts';
import { readSnapshotAds, type Upstream } from '../work/snapshot-read.ts';
import { claimedRun, recordSnapshot, toRunMessage } from './review-handlers.ts';

const HOUR_MS = 3_600_000;

export interface SnapshotHandlerDeps {
  pool: Pool;
  clock: () => Date;
  /** The upstream-proxy, called with the optimizer's own key; none without UPSTREAM_PROXY_URL. */
  upstream?: Upstream;
}

/** The window a snapshot covers: window_hours ending reporting_delay_hours before the claim. */
export function snapshotWindow(claimedAt: Date, windowHours: number, delayHours: number, timeZone: string) {
  const end = new Date(claimedAt.getTime() - delayHours * HOUR_MS);
  const start = new Date(end.getTime() - windowHours * HOUR_MS);
  return { start, end, timeRange: `${localDay(start, timeZone)}..${localDay(end, timeZone)}` };
}

export function createSnapshotHandlers(deps: SnapshotHandlerDeps): ServiceImpl<typeof SnapshotService> {
  return {
    async takeSnapshot(req, ctx) {
      const principal = principalOf(ctx);
      const runId = canonicalUuid('run_id', req.runId);
      const token = canonicalUuid('claim_token', req.claimToken);
      const { upstream } = deps;
      if (upstream === undefined) {
        throw new UnavailableError(
          'the optimizer cannot read the ad platform: it runs without UPSTREAM_PROXY_URL or OPTIMIZER_PRIVATE_KEY',
        );
      }
      const { run, optimizer } = await claimedRun(
        deps.pool,
        principal.workspaceId,
        runId,
        token,
        deps.clock(),
      );
      const as = readingFor(principal, ctx.signal);
      const { account } = await upstream.getAccount({ accountId: run.accountId }, as);
      if (account === undefined)
        throw new UnavailableError('the upstream-proxy answered GetAccount without an account');
      const c = optimizer.config;
      const window = snapshotWindow(
        run.claimedAt ?? deps.clock(),
        c.windowHours,
        c.reportingDelayHours,
        account.timeZone,
      );
      const { ads, daysWithoutRows } = await readSnapshotAds(
        upstream,
        as,
        run.accountId,
        c.campaignIds,
        window.timeRange,
      );
      const now = deps.clock();
      const recorded = await recordSnapshot(
        deps.pool,
        principal.workspaceId,
        runId,
        token,
        {
          timeRange: window.timeRange,
          windowStart: window.start.toISOString(),
          windowEnd: window.end.toISOString(),
          currency: account.currency,
          timeZone: account.timeZone,
          ads,
          daysWithoutRows,
        },
        now,
      );
      const message = toRunMessage(recorded, now);
      return { run: message, snapshot: message.snapshot };
    },
  };
}
