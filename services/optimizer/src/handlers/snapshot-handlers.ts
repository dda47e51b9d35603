/**
 * SnapshotService: the snapshot of a claimed run, read from the ad platform by the optimizer itself
 * (as its worker, for the caller's workspace) and recorded on the run; and the claim and its
 * snapshot in one call.
 */
import type { ReviewRunSchema } from '@adsmcp/proto/optimizer/v1/reviews_pb';
import type { SnapshotService } from '@adsmcp/proto/optimizer/v1/snapshot_pb';
import { toConnectError } from '@adsmcp/runtime/connect-errors';
import { principalOf } from '@adsmcp/runtime/connect-server';
import type { Pool } from '@adsmcp/runtime/db';
import { UnavailableError } from '@adsmcp/runtime/errors';
import type { Logger } from '@adsmcp/runtime/log';
import { codedRefusal } from '@adsmcp/runtime/platform-read/refusal';
import { readingFor } from '@adsmcp/runtime/service-client';
import { localDay } from '@adsmcp/runtime/zoned-format';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from '@connectrpc/connect';
import { canonicalUuid } from '../domain/optimizer.ts';
import { readSnapshotAds, type Upstream } from '../work/snapshot-read.ts';
import { claimedRun, claimRun, recordSnapshot, toRunMessage } from './review-handlers.ts';

const HOUR_MS = 3_600_000;

export interface SnapshotHandlerDeps {
  pool: Pool;
  clock: () => Date;
  /** Where a snapshot read that failed unexpectedly is logged, since its refusal names only that it failed. */
  logger: Logger;
  /** The upstream-proxy, called with the optimizer's own key; none without UPSTREAM_PROXY_URL. */
  upstream?: Upstream;
}

/** The window a snapshot covers: window_hours ending reporting_delay_hours before the claim. */
export function snapshotWindow(claimedAt: Date, windowHours: number, delayHours: number, timeZone: string) {
  const end = new Date(claimedAt.getTime() - delayHours * HOUR_MS);
  const start = new Date(end.getTime() - windowHours * HOUR_MS);
  return { start, end, timeRange: `${localDay(start, timeZone)}..${localDay(end, timeZone)}` };
}

// Each RPC's function takes its request and answer types from the generated service, so a moved
// function is checked exactly as its table entry was.
type Impl = ServiceImpl<typeof SnapshotService>;
type Req<K extends keyof Impl> = Parameters<Impl[K]>[0];
type Res<K extends keyof Impl> = Promise<Awaited<ReturnType<Impl[K]>>>;

/** createSnapshotHandlers builds the SnapshotService implementation from its dependencies. */
export function createSnapshotHandlers(deps: SnapshotHandlerDeps): Impl {
  return {
    takeSnapshot: (req, ctx) => takeSnapshot(deps, req, ctx),
    claimRunWithSnapshot: (req, ctx) => claimRunWithSnapshot(deps, req, ctx),
  };
}

async function takeSnapshot(
  deps: SnapshotHandlerDeps,
  req: Pick<Req<'takeSnapshot'>, 'runId' | 'claimToken'>,
  ctx: HandlerContext,
): Res<'takeSnapshot'> {
  const principal = principalOf(ctx);
  const runId = canonicalUuid('run_id', req.runId);
  const token = canonicalUuid('claim_token', req.claimToken);
  const { upstream } = deps;
  if (upstream === undefined) {
    throw new UnavailableError(
      'the optimizer cannot read the ad platform: it runs without UPSTREAM_PROXY_URL or OPTIMIZER_PRIVATE_KEY',
    );
  }
  const { run, optimizer } = await claimedRun(deps.pool, principal.workspaceId, runId, token, deps.clock());
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
}

/**
 * Claims the run, then reads and records its snapshot. The claim stands when the read fails, so
 * the refusal says with which token to claim again.
 */
async function claimRunWithSnapshot(
  deps: SnapshotHandlerDeps,
  req: Req<'claimRunWithSnapshot'>,
  ctx: HandlerContext,
): Res<'claimRunWithSnapshot'> {
  const claim = await claimRun(deps, req, ctx);
  const run = claim.run ?? {};
  const token = claim.claimToken ?? '';
  try {
    const taken = await takeSnapshot(deps, { runId: run.runId ?? '', claimToken: token }, ctx);
    return { run: taken.run, claimToken: token, snapshot: taken.snapshot };
  } catch (err) {
    throw claimedWithoutSnapshot(deps.logger, err, run, token);
  }
}

/** The words a snapshot read's failure is reported with, by its Connect code; any other is unavailable. */
const CODE_WORDS: Partial<Record<Code, string>> = {
  [Code.NotFound]: 'not_found',
  [Code.PermissionDenied]: 'permission_denied',
  [Code.InvalidArgument]: 'invalid_argument',
  [Code.FailedPrecondition]: 'failed_precondition',
  [Code.ResourceExhausted]: 'rate_limited',
};

/**
 * The refusal of a claim whose snapshot could not be read: the run stays claimed by the caller,
 * so it names the claim (run_id, claim_token) in its details and says until when it holds.
 */
function claimedWithoutSnapshot(
  logger: Logger,
  err: unknown,
  run: MessageInitShape<typeof ReviewRunSchema>,
  token: string,
): ConnectError {
  let failure = toConnectError(err, 'the optimizer service');
  if (failure === undefined) {
    logger.error({ err, runId: run.runId }, 'snapshot read failed');
    failure = new ConnectError('internal error', Code.Internal);
  }
  const word = CODE_WORDS[failure.code];
  const retry = `the run stays claimed by you until ${run.claimExpiresAt ?? 'its claim runs out'}: call ads_claim_optimization_run again with claim_token ${token} to read the snapshot again`;
  return codedRefusal(
    word ?? 'unavailable',
    word === undefined ? Code.Unavailable : failure.code,
    `the performance snapshot could not be read (${failure.rawMessage}); ${retry}`,
    { run_id: run.runId ?? '', claim_token: token },
  );
}
