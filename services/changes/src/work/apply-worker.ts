/**
 * The apply worker: for each apply request on the bus it re-reads the target object (a stale
 * plan is refused), then sends exactly the reviewed operation to the ad platform through the
 * upstream-proxy, with an Idempotency-Key derived from the change. A retry after a crash or a
 * lost answer sends the same key, so the platform replays instead of applying twice.
 */

import { setTimeout as sleep } from 'node:timers/promises';
import type { Account, UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import type { Delivery, GiveUpReason, HandlerContext } from '@adsmcp/runtime/bus/bus';
import { deterministicId } from '@adsmcp/runtime/bus/outbox';
import { RETRY_AFTER_METADATA } from '@adsmcp/runtime/connect-errors';
import { isDatabaseUnavailable, type Pool, type PoolClient } from '@adsmcp/runtime/db';
import { DomainError } from '@adsmcp/runtime/errors';
import { isRecord } from '@adsmcp/runtime/json';
import type { Logger } from '@adsmcp/runtime/log';
import { describePlatformRefusal } from '@adsmcp/runtime/platform-error';
import type { Principal } from '@adsmcp/runtime/principal';
import { callerKey, describeCallFailure, readingFor } from '@adsmcp/runtime/service-client';
import { type Client, Code, ConnectError, createContextValues } from '@connectrpc/connect';
import { RESEND_WITHIN_HOURS, resendRefusal, staleTarget } from '../domain/change.ts';
import { appliedDifferences as appliedDifferencesOf } from '../domain/plan.ts';
import { uploadKeyFor, withFileIds } from '../domain/uploads.ts';
import { freezeText, reserveEnvelope, useOf } from '../planning/account-controls.ts';
import { type Marketing, pinnedContent } from '../planning/campaign-assets.ts';
import { standardsRefusalAtApply } from '../planning/standards.ts';
import {
  type ChangeRow,
  changeColumnsOf,
  findChange,
  finishApply,
  markSent,
  noteApplyDelay,
  recordUploadedFile,
  unsettledChangeTo,
} from '../store/change-store.ts';
import { type FreezeRow, freezeInForceSql, settleUse, touchUse } from '../store/controls-store.ts';
import { expiryHours } from '../store/expiry-store.ts';
import { type ApplyMessage, enqueueApply } from './apply-message.ts';

/** The bus consumer that applies changes (its inbox rows and, on Kafka, its consumer group). */
export const APPLY_CONSUMER = 'changes-apply';

/**
 * How many applies one process runs at once. An apply spends most of its time waiting for its
 * account's request budget and for the platform, so one account at 20 requests/s with half a
 * second per apply needs ten at once, and the bus takes turns between accounts (apply-message.ts),
 * so every account with work has its share.
 */
export const APPLY_CONCURRENCY = 32;

/**
 * How long a busy apply consumer gathers free slots before it claims (the bus's claimGatherMs):
 * under load, applies end one after another, and a claim for each (a transaction waiting its turn
 * behind the topic's other claims) cost more than the apply's own statements. A change waits
 * this much more before it starts, behind an account's request budget that spaces its sends by
 * 50 ms at 20 requests a second.
 */
export const APPLY_CLAIM_GATHER_MS = 20;

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

/**
 * The upstream-proxy's refusals of a call it did not send to the platform (its checks of the
 * request, the account's connection, the connection's access; upstream.proto's Call): a change
 * whose first send is refused so was never sent, and fails as that, not with its outcome unknown.
 */
const REFUSED_UNSENT = new Set([Code.InvalidArgument, Code.NotFound, Code.PermissionDenied]);

export interface ApplyWorkerDeps {
  pool: Pool;
  upstream: Client<typeof UpstreamService>;
  /** Where the campaign images a change uploads are read (unset: a change that has one fails unsent). */
  marketing?: Marketing;
  logger: Logger;
  /** The clock (tests pass a fixed one). */
  now?: () => Date;
  /** How long a change whose apply message was given up or lost waits to be tried again (default REQUEUE_DELAY_MS). */
  requeueDelayMs?: number;
  /** How often a change held by a freeze looks again whether it may be sent (default HOLD_DELAY_MS). */
  holdDelayMs?: number;
}

/**
 * How often a change held by a freeze looks again: unfreezing queues the held changes at once, so
 * this only bounds how long one waits should that message be delayed behind the held one.
 */
export const HOLD_DELAY_MS = 15_000;

/** How long a change whose apply message was given up or lost waits before it is tried again. */
export const REQUEUE_DELAY_MS = 30_000;

/**
 * Another change to the same object was sent and its outcome is not known yet (the platform did
 * not answer, or a worker stopped after sending): this one waits for it, unsent, and is delivered
 * again later. Were it sent now, it would pass its re-read (the other change may not have landed
 * yet), and the other change, sent again with its key, would then land on an object its reviewer
 * never saw.
 */
class TargetUnsettledError extends Error {
  constructor(otherChangeId: string, key: string) {
    super(
      `change ${otherChangeId} to ${key} was sent and its outcome is not known yet; this change waits for it and is not sent meanwhile`,
    );
  }
}

/**
 * A call to another process that failed: which process (`part`), and what it threw. Transient
 * failures name the part in the change's error, so a person can tell the ad platform's outage
 * from one of ours.
 */
class PartFailure extends Error {
  constructor(
    readonly part: string,
    override readonly cause: unknown,
  ) {
    super(describeCallFailure(cause, part));
  }
}

/** The longest one apply attempt waits, in all, for its account's request budget. */
export const BUDGET_WAIT_MS = 120_000;

/**
 * The seconds a refusal for the account's request rate asks to wait: a ResourceExhausted with
 * `retry-after` is the upstream-proxy's budget (or the platform's 429s it waited out already),
 * and the platform did not process the request. Undefined for any other failure (a message too
 * large is also ResourceExhausted, without the seconds).
 */
function budgetWaitSeconds(err: unknown): number | undefined {
  if (!(err instanceof ConnectError) || err.code !== Code.ResourceExhausted) return undefined;
  const seconds = Number(err.metadata.get(RETRY_AFTER_METADATA));
  return Number.isFinite(seconds) && seconds > 0 ? seconds : undefined;
}

/**
 * Runs a call to `part`, so that its failure says which process failed. A call refused for the
 * account's request rate is made again after the seconds it names, within this attempt: an apply
 * meeting its account's budget is not an outage, and giving it back to the bus would spend an
 * attempt and wait out the bus's growing backoff (up to a minute), leaving the budget unused
 * meanwhile. Nothing was sent, so sending again is safe (and the idempotency key holds anyway).
 */
async function callOf<T>(part: string, call: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  const waitUntil = Date.now() + BUDGET_WAIT_MS;
  for (;;) {
    try {
      return await call();
    } catch (err) {
      if (err instanceof DomainError) throw err;
      const seconds = budgetWaitSeconds(err);
      if (seconds === undefined || Date.now() + seconds * 1000 > waitUntil) throw new PartFailure(part, err);
      try {
        await sleep(seconds * 1000, undefined, { signal });
      } catch {
        throw new PartFailure(part, err);
      }
    }
  }
}

/** An apply attempt that met an outage: it is tried again. `message` names the part that failed. */
class AttemptFailed extends Error {}

/** What a transient failure of an apply attempt was, naming the part that failed. */
function failureText(err: unknown): string {
  if (err instanceof PartFailure || err instanceof AttemptFailed) return err.message;
  if (isDatabaseUnavailable(err)) return 'the database of the changes service could not be reached';
  return err instanceof Error ? err.message : String(err);
}

/** Whether an apply that failed with `err` cannot succeed by trying again: the change fails. */
function permanentFailure(err: unknown): string | undefined {
  // A rule this service checks itself (an image no longer the one reviewed): nothing was sent.
  if (err instanceof DomainError) return err.message;
  return partRefusal(err, PERMANENT);
}

/** The message of a call to another process that refused with one of `codes`, or undefined. */
function partRefusal(err: unknown, codes: ReadonlySet<Code>): string | undefined {
  if (!(err instanceof PartFailure)) return undefined;
  const e = ConnectError.from(err.cause);
  return codes.has(e.code) ? e.rawMessage : undefined;
}

/**
 * Until when an apply may go on trying: a change not sent yet, while the person's approval is
 * valid; a change already sent (its outcome unknown), while the platform still knows its
 * idempotency key (RESEND_WITHIN_HOURS after its first send), so a send again is replayed, not
 * repeated.
 */
function tryUntil(change: ChangeRow, approvalValidMs: number): Date {
  if (change.sent_at !== null) return new Date(change.sent_at.getTime() + RESEND_WITHIN_HOURS * 3_600_000);
  const approvedAt = change.approved_at ?? change.prepared_at;
  return new Date(approvedAt.getTime() + approvalValidMs);
}

/**
 * How long an approval is valid in the change's workspace (its expiry setting, or the default):
 * an apply that meets an outage, the platform's or one of ours, is tried again until then, and an
 * approval means one thing to the reader and to this worker.
 */
async function approvalValidMsFor(d: ApplyWorkerDeps, workspaceId: string): Promise<number> {
  return (await expiryHours(d.pool, workspaceId)).approvalValidHours * 3_600_000;
}

/** A validity in words: hours, or minutes or seconds when shorter. */
function validity(ms: number): string {
  if (ms >= 3_600_000) return `${Math.round(ms / 3_600_000)} hours`;
  return ms >= 60_000 ? `${Math.round(ms / 60_000)} minutes` : `${Math.round(ms / 1000)} seconds`;
}

/**
 * endApply brings a change whose apply cannot go on (`why`) to an end, in the message's inbox
 * transaction: one that was sent fails with its outcome unknown, and is applied again with the
 * same idempotency key when asked (ads_apply_change); one never sent is tried again later with a
 * new message while its approval is valid (an outage never spends it), and fails, nothing sent,
 * after that.
 */
async function endApply(
  d: ApplyWorkerDeps,
  ctx: Pick<HandlerContext, 'inTx'>,
  change: ChangeRow,
  why: string,
  successorId: string,
): Promise<void> {
  const now = (d.now ?? (() => new Date()))();
  const approvalValidMs = await approvalValidMsFor(d, change.workspace_id);
  const expired = now >= tryUntil(change, approvalValidMs);
  const delayMs = d.requeueDelayMs ?? REQUEUE_DELAY_MS;
  await ctx.inTx(async (tx) => {
    if (change.sent_at === null && !expired) {
      await enqueueApply(tx, change, successorId, delayMs);
      await noteApplyDelay(tx, {
        workspaceId: change.workspace_id,
        changeId: change.change_id,
        error: `${why}; nothing was sent to the ad account, and it is tried again in ${Math.ceil(delayMs / 1000)} s`,
      });
      return;
    }
    // Never sent: what it reserved of the spend envelope is given back. Sent, its outcome unknown,
    // it may have been applied, so its reservation stays.
    if (change.sent_at === null && reservesSpend(change))
      await settleUse(tx, {
        workspaceId: change.workspace_id,
        changeId: change.change_id,
        state: 'released',
      });
    await finishApply(tx, {
      workspaceId: change.workspace_id,
      changeId: change.change_id,
      status: 'failed',
      upstreamStatus: null,
      upstreamResponseJson: null,
      error:
        change.sent_at !== null
          ? `${why}; the change may or may not have been applied: apply it again (ads_apply_change) within ${RESEND_WITHIN_HOURS} hours of its first send to send it with the same idempotency key, which the platform applies at most once`
          : `${why}; nothing was sent to the ad account, and its approval (valid ${validity(approvalValidMs)}) has expired: prepare the change again if it is still wanted`,
    });
  });
}

/** The freeze columns of applyingChange's row, `f_` before each. */
interface FreezeColumns {
  f_freeze_id: string | null;
  f_account_id: string | null;
  f_reason: string;
  f_frozen_by: string;
  f_frozen_at: Date;
}

/** applyingChange's statement: named, so each connection parses and plans it once. */
const APPLYING_CHANGE = `SELECT ${changeColumnsOf('c')}, f.freeze_id AS f_freeze_id, f.account_id AS f_account_id, f.reason AS f_reason,
            f.frozen_by AS f_frozen_by, f.frozen_at AS f_frozen_at
       FROM changes c
       LEFT JOIN LATERAL (${freezeInForceSql('c.workspace_id', 'c.account_id')}) f ON true
      WHERE c.workspace_id = $1 AND c.change_id = $2`;

/**
 * The change an apply message names, with the freeze in force for its account (controls-store's
 * freezeInForceSql: its own, else the workspace's), read in one statement: every apply reads both
 * first, and a statement less per apply is a round trip less for both processes.
 */
async function applyingChange(
  d: ApplyWorkerDeps,
  workspaceId: string,
  changeId: string,
): Promise<{ change: ChangeRow; frozen: FreezeRow | undefined } | undefined> {
  const { rows } = await d.pool.query<ChangeRow & FreezeColumns>({
    name: 'changes-applying-change',
    text: APPLYING_CHANGE,
    values: [workspaceId, changeId],
  });
  const row = rows[0];
  if (row === undefined) return undefined;
  const { f_freeze_id: freezeId, f_account_id, f_reason, f_frozen_by, f_frozen_at, ...change } = row;
  const frozen: FreezeRow | undefined =
    freezeId === null
      ? undefined
      : {
          freeze_id: freezeId,
          workspace_id: change.workspace_id,
          account_id: f_account_id,
          reason: f_reason,
          frozen_by: f_frozen_by,
          frozen_at: f_frozen_at,
          unfrozen_by: null,
          unfrozen_at: null,
        };
  return { change, frozen };
}

/**
 * createApplyHandler returns the bus handler of apply messages. An attempt that meets an outage
 * throws, so the bus tries again with backoff; once the change may no longer be tried (tryUntil),
 * it is brought to an end instead (endApply).
 */
export function createApplyHandler(d: ApplyWorkerDeps) {
  const apply = applyOne(d);
  return async (message: Delivery<ApplyMessage>, ctx: HandlerContext): Promise<void> => {
    const { change_id: changeId, workspace_id: workspaceId } = message.payload;
    const found = await applyingChange(d, workspaceId, changeId);
    if (found === undefined || found.change.status !== 'applying') {
      d.logger.info(
        { change_id: changeId, status: found?.change.status },
        'apply skipped: the change is not applying',
      );
      return;
    }
    const { change, frozen } = found;
    try {
      // The bus runs one apply message of an object at a time (applyKeyOf): an attempt ended
      // after a send whose outcome is not known yet keeps the object until it is settled. A
      // change sent again (its own outcome unknown) waits too, for the changes that will be sent
      // again without a re-read (the bus's next attempts of a sent change): a later due message
      // of the object's key is claimed before an earlier one waiting out its backoff.
      const resend = change.sent_at !== null && change.apply_retried_at !== null;
      if ((change.sent_at === null || resend) && change.target_path !== '') {
        const unsettled = await unsettledChangeTo(d.pool, change, resend);
        if (unsettled !== undefined) throw new TargetUnsettledError(unsettled, change.target_path);
      }
      return await apply(message, ctx, change, frozen);
    } catch (err) {
      const why = failureText(err);
      const latest = (await findChange(d.pool, workspaceId, changeId)) ?? change;
      if (latest.status !== 'applying') throw err;
      const now = (d.now ?? (() => new Date()))();
      if (now >= tryUntil(latest, await approvalValidMsFor(d, workspaceId))) {
        await endApply(
          d,
          ctx,
          latest,
          `the change could not be applied before its time ran out: ${why}`,
          deterministicId('apply', changeId, 'after', message.id),
        );
        return;
      }
      // Shown with the change while it waits, so whoever reads it knows what it waits for.
      await noteApplyDelay(d.pool, {
        workspaceId,
        changeId,
        error: `attempt ${message.attempt} could not finish: ${why}; trying again`,
      }).catch(() => undefined);
      throw new AttemptFailed(why, { cause: err });
    }
  };
}

/**
 * hold leaves a change of a frozen account `applying`, unsent, and looks again later (unfreezing
 * queues it at once): a freeze stops writes, it does not fail them. The change's approval keeps
 * running meanwhile: once it has expired, the change fails with nothing sent, as after an outage.
 */
async function hold(
  d: ApplyWorkerDeps,
  message: Delivery<ApplyMessage>,
  ctx: HandlerContext,
  change: ChangeRow,
  frozen: FreezeRow,
): Promise<void> {
  const now = (d.now ?? (() => new Date()))();
  const until = tryUntil(change, await approvalValidMsFor(d, change.workspace_id));
  const successor = deterministicId('apply', change.change_id, 'after', message.id);
  if (now >= until) {
    await endApply(
      d,
      ctx,
      change,
      `it was held while ${freezeText(frozen)}, until its time ran out`,
      successor,
    );
    return;
  }
  await ctx.inTx(async (tx) => {
    await enqueueApply(tx, change, successor, d.holdDelayMs ?? HOLD_DELAY_MS);
    await noteApplyDelay(tx, {
      workspaceId: change.workspace_id,
      changeId: change.change_id,
      error: `held: ${freezeText(frozen)}; nothing was sent to the ad account, and it is sent once it is unfrozen if that is before ${until.toISOString()}, when its approval expires`,
    });
  });
  d.logger.info({ change_id: change.change_id, freeze_id: frozen.freeze_id }, 'apply held by a freeze');
}

/**
 * createApplyGiveUp returns the give-up path of apply messages, run by the bus once a message is
 * past its last attempt: the change it was applying is brought to an end (endApply), never left
 * `applying`.
 */
export function createApplyGiveUp(d: ApplyWorkerDeps) {
  return async (
    message: Delivery<ApplyMessage>,
    ctx: HandlerContext,
    reason: GiveUpReason,
  ): Promise<void> => {
    const change = await findChange(d.pool, message.payload.workspace_id, message.payload.change_id);
    if (change?.status !== 'applying') return;
    const why =
      reason.kind === 'abandoned'
        ? `its apply stopped before it finished after ${message.attempt - 1} attempts (the worker applying it was stopped or killed)`
        : `its apply failed ${message.attempt} times, the last with: ${failureText(reason.error)}`;
    // The successor is named after this message, so a give-up path run twice queues one.
    await endApply(d, ctx, change, why, deterministicId('apply', change.change_id, 'after', message.id));
  };
}

/**
 * endLostApply brings to an end a change left `applying` whose apply message will reach no
 * handler (lost, or given up without its give-up path), in transaction `tx`; `sweep` names the
 * sweep that found it.
 */
export function endLostApply(
  d: ApplyWorkerDeps,
  tx: PoolClient,
  change: ChangeRow,
  sweep: string,
): Promise<void> {
  return endApply(
    d,
    { inTx: (fn) => fn(tx) },
    change,
    'its apply message was lost before the change reached an end',
    deterministicId('apply', change.change_id, 'swept', sweep),
  );
}

/**
 * uploadImages uploads each campaign image of `change` that has no platform file yet (POST /files,
 * with a key of its own, so a retried upload is replayed) and records its file id in the change,
 * whose `uploads` it updates. It returns why an image could not be uploaded, or undefined.
 */
async function uploadImages(
  d: ApplyWorkerDeps,
  change: ChangeRow,
  options: { contextValues: ReturnType<typeof createContextValues>; signal: AbortSignal },
): Promise<string | undefined> {
  const principal = options.contextValues.get(callerKey);
  if (principal === undefined) throw new Error('apply without a principal');
  for (const upload of change.uploads) {
    if (upload.file_id !== '') continue;
    const what = `campaign asset "${upload.name}" (${upload.asset_id})`;
    const content = await pinnedContent(d.marketing, upload, readingFor(principal, options.signal));
    const res = await callOf(
      'upstream-proxy',
      () =>
        d.upstream.call(
          {
            accountId: change.account_id,
            method: 'POST',
            path: '/files',
            query: [],
            bodyJson: '',
            body: content,
            contentType: upload.mime_type,
            idempotencyKey: uploadKeyFor(change.change_id, upload.asset_id),
          },
          options,
        ),
      options.signal,
    );
    if (res.status < 200 || res.status >= 300)
      return `${what} could not be uploaded: ${describePlatformRefusal(res.status, res.bodyJson)}; the change was not sent`;
    const file = fileOf(res.bodyJson);
    if (file === undefined)
      return `${what} was uploaded, but the platform answered without a file_id; the change was not sent`;
    if (file.sha256 !== undefined && file.sha256 !== upload.sha256)
      return `${what} was uploaded, but the platform holds other bytes (sha256 ${file.sha256}, sent ${upload.sha256}); the change was not sent`;
    await recordUploadedFile(d.pool, {
      workspaceId: change.workspace_id,
      changeId: change.change_id,
      assetId: upload.asset_id,
      fileId: file.fileId,
    });
    upload.file_id = file.fileId;
  }
  return undefined;
}

/** The file id (and sha256, when given) of the platform's answer to an upload. */
function fileOf(json: string): { fileId: string; sha256: string | undefined } | undefined {
  let answer: unknown;
  try {
    answer = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (!isRecord(answer)) return undefined;
  const { file_id: fileId, sha256 } = answer;
  if (typeof fileId !== 'string' || fileId === '') return undefined;
  return { fileId, sha256: typeof sha256 === 'string' ? sha256 : undefined };
}

/** How an apply attempt ends, as finishApply records it. */
interface Outcome {
  status: 'applied' | 'failed';
  upstreamStatus: number | null;
  response: string | null;
  error: string | null;
  appliedDifferences?: string[];
  /** For an applied change: how many times the upstream-proxy sent it. */
  attempts?: number;
  /** A failed first send that never reached the platform: the change is recorded as never sent. */
  unsent?: boolean;
}

/** A change that fails: `error` says why, with the platform's answer when it gave one. */
const failed = (
  error: string,
  upstreamStatus: number | null = null,
  response: string | null = null,
): Outcome => ({
  status: 'failed',
  upstreamStatus,
  response,
  error,
});

type ApplyOptions = { contextValues: ReturnType<typeof createContextValues>; signal: AbortSignal };

/** The change's object as the platform has it now. */
function readTarget(d: ApplyWorkerDeps, change: ChangeRow, options: ApplyOptions) {
  return callOf(
    'upstream-proxy',
    () =>
      d.upstream.call(
        { accountId: change.account_id, method: 'GET', path: change.target_path, query: [] },
        options,
      ),
    options.signal,
  );
}

/** One apply attempt: what its steps read and share. */
interface Attempt {
  d: ApplyWorkerDeps;
  message: Delivery<ApplyMessage>;
  ctx: HandlerContext;
  change: ChangeRow;
  options: ApplyOptions;
  /** The upstream-proxy, as this attempt calls it (attemptUpstream). */
  upstream: Client<typeof UpstreamService>;
  /** The freeze in force for the change's account when this delivery began, if any. */
  frozen: FreezeRow | undefined;
  /** Whether this attempt marked the change sent (its first send, markFirstSend). */
  markedSent?: boolean;
}

/**
 * The upstream-proxy as one attempt calls it: the change's account is read once and shared by the
 * steps that need it (the standards' time zone, the envelope's currency), not once a step; every
 * RPC costs both processes a signed token, a stream and a database read. A read that failed is
 * not kept, so a step that calls again (after the budget's wait) reads again.
 */
function attemptUpstream(
  upstream: Client<typeof UpstreamService>,
  accountId: string,
): Client<typeof UpstreamService> {
  let account: ReturnType<typeof upstream.getAccount> | undefined;
  return {
    ...upstream,
    getAccount: (req, options) => {
      if (req.accountId !== accountId) return upstream.getAccount(req, options);
      account ??= upstream.getAccount(req, options).catch((err: unknown) => {
        account = undefined;
        throw err;
      });
      return account;
    },
  };
}

/**
 * What a step decides: go on to the next step, end the attempt with the change's outcome
 * (recorded by finishAttempt), or end it with the change left `applying` (held by a freeze,
 * recorded by the step itself).
 */
type StepResult = { next: true } | { finish: Outcome } | { held: true };

const NEXT: StepResult = { next: true };
const refuse = (error: string, upstreamStatus: number | null = null, response: string | null = null) => ({
  finish: failed(error, upstreamStatus, response),
});

/** Whether the change was never sent: the checks before a first send apply to it. */
const firstSend = (a: Attempt) => a.change.sent_at === null;

/**
 * A freeze in force holds the change, unsent. Looked at first, before anything is read or sent (it
 * was read with the change, as this delivery began): a freeze set while this apply waited for
 * another change to the same object holds it too.
 */
async function checkFreeze(a: Attempt): Promise<StepResult> {
  if (a.frozen === undefined) return NEXT;
  await hold(a.d, a.message, a.ctx, a.change, a.frozen);
  return { held: true };
}

/**
 * First send: the object must still be as it was reviewed (a stale plan is refused). A change
 * that creates an object has none to re-read.
 */
async function rereadTarget(a: Attempt): Promise<StepResult> {
  if (!firstSend(a) || a.change.target_path === '') return NEXT;
  const live = await readTarget(a.d, a.change, a.options);
  if (live.status !== 200)
    return refuse(
      `the object could not be re-read before applying: ${describePlatformRefusal(live.status, live.bodyJson)}`,
      live.status,
      live.bodyJson,
    );
  const stale = staleTarget(a.change.target_before_json, live.bodyJson);
  return stale === undefined ? NEXT : refuse(stale);
}

/**
 * Sent again after an unknown outcome, asked for by a caller at any later time: other changes to
 * the object were free to be applied meanwhile, so it is re-read first. Still unknown whether the
 * earlier attempt was applied: a refusal records no answer of the platform.
 */
async function rereadBeforeResend(a: Attempt): Promise<StepResult> {
  const { change } = a;
  if (change.sent_at === null || change.apply_retried_at === null || change.target_path === '') return NEXT;
  const live = await readTarget(a.d, change, a.options);
  const refusal =
    live.status === 200
      ? resendRefusal(
          change.target_before_json,
          withFileIds(JSON.parse(change.reviewed_result_json), change.uploads),
          live.bodyJson,
        )
      : `the object could not be re-read before sending the change again: ${describePlatformRefusal(live.status, live.bodyJson)}; nothing was sent again`;
  return refusal === undefined ? NEXT : refuse(refusal);
}

/** First send: the account's standards and spend guard as they are now, before anything is sent. */
async function checkStandards(a: Attempt): Promise<StepResult> {
  if (!firstSend(a)) return NEXT;
  const refusal = await standardsRefusalAtApply(
    a.d.pool,
    async () => (await accountOf(a)).timeZone,
    a.change,
  );
  return refusal === undefined ? NEXT : refuse(refusal);
}

/**
 * The change's account, read through the upstream-proxy as every call of an attempt is (callOf):
 * a refusal (the account no longer connected: NotFound) ends the change, a budget refusal is
 * waited out, and an outage names the upstream-proxy.
 */
async function accountOf(a: Attempt): Promise<Account> {
  const { account } = await callOf(
    'upstream-proxy',
    () => a.upstream.getAccount({ accountId: a.change.account_id }, a.options),
    a.options.signal,
  );
  if (account === undefined)
    throw new PartFailure('upstream-proxy', new Error('it answered without an account'));
  return account;
}

/**
 * First send: what the change raises daily budgets by is reserved in the spend envelope's ledger,
 * one apply at a time per account, or the change is refused before anything (an image too) is
 * sent; a change that fails from here on gives its reservation back (finishAttempt).
 */
async function reserveSpend(a: Attempt): Promise<StepResult> {
  if (!reservesSpend(a.change)) return NEXT;
  const now = (a.d.now ?? (() => new Date()))();
  // Sent again: its use stays reserved (its outcome is unknown), counted from this send.
  if (!firstSend(a)) {
    await touchUse(a.d.pool, { workspaceId: a.change.workspace_id, changeId: a.change.change_id, now });
    return NEXT;
  }
  const account = await accountOf(a);
  const overEnvelope = await reserveEnvelope(a.d.pool, a.change, account.currency, now);
  return overEnvelope === undefined
    ? NEXT
    : refuse(`refused before applying, nothing was sent to the ad account: ${overEnvelope}`);
}

/**
 * First send: the campaign images the change puts on the platform, each uploaded once (its file id
 * is kept with the change), before the change itself is sent.
 */
async function uploadCampaignImages(a: Attempt): Promise<StepResult> {
  if (!firstSend(a)) return NEXT;
  const notUploaded = await uploadImages(a.d, a.change, a.options);
  return notUploaded === undefined ? NEXT : refuse(notUploaded);
}

/** First send, every check passed: the change is marked sent before it goes. */
async function markFirstSend(a: Attempt): Promise<StepResult> {
  if (!firstSend(a)) return NEXT;
  await markSent(a.d.pool, a.change.workspace_id, a.change.change_id);
  a.markedSent = true;
  return NEXT;
}

/** Sends exactly the reviewed operation, each campaign asset as the file it was uploaded as. */
async function sendChange(a: Attempt): Promise<StepResult> {
  const { d, change } = a;
  const uploads = change.uploads;
  const sentBody =
    uploads.length === 0
      ? change.body_json
      : JSON.stringify(withFileIds(JSON.parse(change.body_json), uploads));
  // Sent before (the outcome was lost): the same key makes the platform replay its first
  // answer if it applied the change, so nothing is re-checked or doubled.
  const send = () =>
    d.upstream.call(
      {
        accountId: change.account_id,
        method: change.method,
        path: change.path,
        query: [],
        bodyJson: sentBody,
        idempotencyKey: idempotencyKeyFor(change.change_id),
      },
      a.options,
    );
  let res: Awaited<ReturnType<typeof send>>;
  try {
    res = await callOf('upstream-proxy', send, a.options.signal);
  } catch (err) {
    const refusal = firstSend(a) ? partRefusal(err, REFUSED_UNSENT) : undefined;
    if (refusal === undefined) throw err;
    return {
      finish: {
        ...failed(`the upstream-proxy refused to send it to the ad platform: ${refusal}; nothing was sent`),
        unsent: true,
      },
    };
  }
  if (res.status < 200 || res.status >= 300)
    return refuse(describePlatformRefusal(res.status, res.bodyJson), res.status, res.bodyJson);
  // The platform's answer is held against what was reviewed: a field it did not take as
  // sent is recorded and shown beside the change, never passed over in silence.
  const appliedDifferences = appliedDifferencesOf(
    withFileIds(JSON.parse(change.reviewed_result_json), uploads),
    res.bodyJson,
  );
  return {
    finish: {
      status: 'applied',
      upstreamStatus: res.status,
      response: res.bodyJson,
      error: null,
      appliedDifferences,
      attempts: res.attempts,
    },
  };
}

/**
 * The steps of an apply attempt, in order. Each goes on, or ends the attempt; the last one sends.
 * A step that throws ends the attempt with its error: a permanent one fails the change, any other
 * is tried again by the bus. Its name is in the log line of a step that threw.
 */
const APPLY_STEPS: readonly { name: string; run: (a: Attempt) => Promise<StepResult> }[] = [
  { name: 'freeze', run: checkFreeze },
  { name: 're-read the object', run: rereadTarget },
  { name: 're-read before sending again', run: rereadBeforeResend },
  { name: 'standards', run: checkStandards },
  { name: 'spend envelope', run: reserveSpend },
  { name: 'upload campaign images', run: uploadCampaignImages },
  { name: 'mark sent', run: markFirstSend },
  { name: 'send', run: sendChange },
];

/**
 * Whether the change raises a daily budget, so that its apply reserves its use of the spend
 * envelope (reserveEnvelope reserves nothing otherwise, and the use is the change's own reviewed
 * operation, the same at every attempt): a change that does not has no use to settle either.
 */
function reservesSpend(change: ChangeRow): boolean {
  return useOf(change).micros > 0n;
}

/**
 * Whether a failed attempt leaves the change's outcome unknown: it was sent (before, or by this
 * attempt) and no answer of the platform says what became of it. It may have been applied.
 */
function outcomeLeftUnknown(a: Attempt, o: Outcome): boolean {
  const sent = (a.change.sent_at !== null || a.markedSent === true) && o.unsent !== true;
  return o.status === 'failed' && o.upstreamStatus === null && sent;
}

/** Records how the attempt ended, with the change's use of the spend envelope, in its inbox transaction. */
function finishAttempt(a: Attempt, o: Outcome): Promise<void> {
  const { workspace_id: workspaceId, change_id: changeId } = a.change;
  return a.ctx.inTx(async (tx) => {
    // Applied, its use of the spend envelope counts for 24 hours; refused, it is given back; its
    // outcome unknown (a send again refused), it may have been applied, so it stays reserved.
    if (reservesSpend(a.change) && !outcomeLeftUnknown(a, o))
      await settleUse(tx, { workspaceId, changeId, state: o.status === 'applied' ? 'applied' : 'released' });
    await finishApply(tx, {
      workspaceId,
      changeId,
      status: o.status,
      upstreamStatus: o.upstreamStatus,
      upstreamResponseJson: o.response,
      error: o.error,
      appliedDifferences: o.appliedDifferences ?? [],
      unsent: o.unsent === true,
    });
  });
}

/** Runs the steps until one ends the attempt; undefined when a freeze holds the change. */
async function runSteps(a: Attempt): Promise<Outcome | undefined> {
  for (const step of APPLY_STEPS) {
    let result: StepResult;
    try {
      result = await step.run(a);
    } catch (err) {
      a.d.logger.info({ change_id: a.change.change_id, step: step.name, err }, 'apply step threw');
      throw err;
    }
    if ('held' in result) return undefined;
    if ('finish' in result) return result.finish;
  }
  throw new Error('the apply steps ended without sending');
}

/** The principal an apply acts as: the change's approver, through this worker. */
function principalOf(change: ChangeRow): Principal {
  return {
    workspaceId: change.workspace_id,
    credentialId: `change:${change.change_id}`,
    userId: change.approver_user_id,
    role: 'editor',
    scopes: ['read', 'write'],
    via: 'worker',
  };
}

/** Applies one change that is `applying` (the bus runs no other apply of its object meanwhile). */
function applyOne(d: ApplyWorkerDeps) {
  return async (
    message: Delivery<ApplyMessage>,
    ctx: HandlerContext,
    change: ChangeRow,
    frozen: FreezeRow | undefined,
  ): Promise<void> => {
    const options = {
      contextValues: createContextValues().set(callerKey, principalOf(change)),
      signal: ctx.signal,
    };
    const a: Attempt = {
      d,
      message,
      ctx,
      change,
      options,
      upstream: attemptUpstream(d.upstream, change.account_id),
      frozen,
    };
    try {
      const outcome = await runSteps(a);
      if (outcome === undefined) return;
      await finishAttempt(a, outcome);
      if (outcome.status !== 'applied') return;
      const differences = outcome.appliedDifferences ?? [];
      if (differences.length > 0) {
        d.logger.warn(
          { change_id: change.change_id, applied_differences: differences },
          'change applied, but the platform answered with another result than the one reviewed',
        );
      }
      d.logger.info({ change_id: change.change_id, attempts: outcome.attempts }, 'change applied');
    } catch (err) {
      const refusal = permanentFailure(err);
      if (refusal === undefined) throw err;
      await finishAttempt(a, failed(refusal));
    }
  };
}

export type { ChangeRow };
