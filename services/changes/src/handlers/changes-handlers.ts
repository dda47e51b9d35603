/** The ChangesService RPCs: proto <-> domain, and the transaction that commits an apply request with its work. */

import { randomUUID } from 'node:crypto';
import type { ChangeSchema, ChangesService, PrepareChangeRequest } from '@adsmcp/proto/changes/v1/changes_pb';
import { deterministicId, enqueue } from '@adsmcp/runtime/bus/outbox';
import { principalOf } from '@adsmcp/runtime/connect-server';
import { inTransaction, type Pool } from '@adsmcp/runtime/db';
import {
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  PermissionDeniedError,
} from '@adsmcp/runtime/errors';
import { isUuid } from '@adsmcp/runtime/ids';
import { actorName, type Principal } from '@adsmcp/runtime/principal';
import { textLength } from '@adsmcp/runtime/text';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { ServiceImpl } from '@connectrpc/connect';
import {
  applyRefusal,
  bodyOf,
  checkMayApply,
  checkMayDecide,
  checkMayPrepare,
  checkMaySettle,
  checkPrepare,
  decisionRefusal,
  digestOf,
  outcomeUnknown,
  prepareRefusal,
  refuse,
  rejectionRefusal,
  unknownOutcomeResend,
} from '../domain/change.ts';
import { needsTarget, type PlatformObject, planChange, reviewedResult, rulesFor } from '../domain/plan.ts';
import {
  approveChange,
  type ChangeRow,
  findChange,
  insertChange,
  listChangeEvents,
  listChanges,
  markApplying,
  markRetrying,
  rejectChange,
} from '../store/change-store.ts';
import { type Marketing, pinUploads } from './asset-reads.ts';
import { checkLive, requireFresh, type Upstream } from './live-check.ts';
import { planningHandlers } from './planning-handlers.ts';
import {
  type AccessCheck,
  accountRefusal,
  accountToPlan,
  liveObject,
  requireFiles,
  requireMergeSources,
  requirePixels,
  requireSquareCrops,
} from './platform-reads.ts';
import { liveOutcome, resolveChange } from './resolve-handlers.ts';
import { enforceStandards } from './standards-enforcement.ts';

export const APPLY_TOPIC = 'changes.apply';
const TERMINAL = new Set(['applied', 'failed']);

export interface ApplyMessage {
  [key: string]: string;
  change_id: string;
  workspace_id: string;
}

/** The change as the API shows it. */
/** An RFC 3339 instant in UTC, as ListChangeEvents gives them. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;

export function toProto(r: ChangeRow): MessageInitShape<typeof ChangeSchema> {
  const iso = (d: Date | null) => d?.toISOString() ?? '';
  return {
    changeId: r.change_id,
    accountId: r.account_id,
    tool: r.tool,
    status: r.status,
    summary: r.summary,
    operation: { method: r.method, path: r.path, bodyJson: r.body_json },
    digest: r.digest,
    targetPath: r.target_path,
    targetBeforeJson: r.target_before_json,
    preparedBy: r.prepared_by,
    preparedAt: iso(r.prepared_at),
    approvedBy: r.approved_by ?? '',
    approvedAt: iso(r.approved_at),
    rejectedBy: r.rejected_by ?? '',
    rejectedAt: iso(r.rejected_at),
    rejectReason: r.reject_reason ?? '',
    applyRequestedBy: r.apply_requested_by ?? '',
    applyRequestedAt: iso(r.apply_requested_at),
    applyRetriedBy: r.apply_retried_by ?? '',
    applyRetriedAt: iso(r.apply_retried_at),
    outcomeUnknown: outcomeUnknown(r),
    resolution: r.resolution ?? '',
    resolvedBy: r.resolved_by ?? '',
    resolvedAt: iso(r.resolved_at),
    resolutionNote: r.resolution_note ?? '',
    appliedAt: iso(r.applied_at),
    upstreamStatus: r.upstream_status ?? 0,
    upstreamResponseJson: r.upstream_response_json ?? '',
    error: r.error ?? '',
    standardsChecked: r.standards_checked.map((c) => ({
      standardId: c.standard_id,
      name: c.name,
      revision: c.revision,
      guidance: c.guidance,
    })),
    appliedDifferences: r.applied_differences,
    uploads: r.uploads.map((u) => ({
      assetId: u.asset_id,
      name: u.name,
      mimeType: u.mime_type,
      byteSize: u.byte_size,
      width: u.width,
      height: u.height,
      sha256: u.sha256,
      fileId: u.file_id,
    })),
  };
}

async function load(pool: Pool, p: Principal, changeId: string): Promise<ChangeRow> {
  if (!isUuid(changeId)) throw new InvalidArgumentError('change_id must be a UUID');
  const row = await findChange(pool, p.workspaceId, changeId);
  if (row === undefined) throw new NotFoundError(`no change ${changeId} in this workspace`);
  return row;
}

/** The services planning reads from. */
export interface Peers {
  /** The upstream-proxy: planning reads the account and the live object, approval re-reads it. */
  upstream: Upstream;
  /** The marketing service's assets: the images a change's creatives name (unset: none can be used). */
  marketing?: Marketing;
}

export interface HandlerDeps extends Peers {
  pool: Pool;
  /** Waits between reads while ApplyChange waits for an outcome. */
  sleep?: (ms: number) => Promise<void>;
}

/** Asks for the target as the caller believes it is, planned against instead of the live one. */
type Current = { json: string } | undefined;

function parseCurrent(current: Current): PlatformObject | undefined {
  if (current === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(current.json);
  } catch {
    throw new InvalidArgumentError('current_json must be a JSON object');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new InvalidArgumentError('current_json must be a JSON object');
  return value as PlatformObject;
}

/**
 * planPrepared plans the change PrepareChange records, and PlanChange reports without recording:
 * the request checked, the account and the target read (or `current` taken instead), the object
 * the operation would produce checked, the summary written.
 */
export async function planPrepared(
  pool: Pool,
  { upstream, marketing }: Peers,
  p: Principal,
  req: PrepareChangeRequest,
  current?: Current,
  access: AccessCheck = 'enforce',
) {
  if (access === 'enforce') checkMayPrepare(p);
  const op = {
    method: req.operation?.method ?? '',
    path: req.operation?.path ?? '',
    bodyJson: req.operation?.bodyJson ?? '',
  };
  checkPrepare({ accountId: req.accountId, tool: req.tool, operation: op, targetPath: req.targetPath });
  const rules = rulesFor(req.objectType, req.effect);
  if (needsTarget(rules.effect) !== (req.targetPath !== '')) {
    throw new InvalidArgumentError(
      needsTarget(rules.effect)
        ? `target_path is required to ${rules.effect} a ${rules.label}`
        : `target_path must be empty: a ${rules.effect} makes a new ${rules.label}`,
    );
  }
  const account = await accountToPlan(upstream, p, req.accountId, access);
  const what = `${rules.label} ${req.targetPath.split('/').pop() ?? ''}`;
  const given = parseCurrent(current);
  const live =
    req.targetPath === ''
      ? undefined
      : (given ?? (await liveObject(upstream, p, account, req.targetPath, what)));
  const body = bodyOf(op);
  const plan = planChange({
    objectType: req.objectType,
    effect: req.effect,
    body,
    live,
    accountName: account.name,
  });
  // The platform's image files the creatives name must be the account's.
  const files = await requireFiles(upstream, p, account, body, live);
  // The audiences a merge names, and the pixels a conversion event setting counts, likewise.
  if (req.objectType === 'custom_audience' && rules.effect === 'merge')
    await requireMergeSources(upstream, p, account, body);
  if (req.objectType === 'conversion_event_setting') await requirePixels(upstream, p, account, body);
  // The campaign images the creatives name, pinned for review and uploaded only on apply.
  const uploads = await pinUploads(marketing, p, req.accountId, body);
  // A crop is square in pixels of the image it crops, whose size is known only now.
  const result = reviewedResult(req.objectType, req.effect, live, body);
  await requireSquareCrops(upstream, p, account, result, body, uploads, files);
  // The account's standards and spend guard, checked again by the apply worker.
  const standardsChecked = await enforceStandards(pool, p.workspaceId, account, op, result, live);
  // Empty when access is enforced: a caller who may not prepare was refused above.
  const accessRefusal = prepareRefusal(p) ?? accountRefusal(account) ?? '';
  return { op, live, plan, standardsChecked, accessRefusal, uploads, digest: digestOf(op, uploads) };
}

/** prepareAndRecord plans a change and records it, prepared: PrepareChange, and the ad batches. */
export async function prepareAndRecord(pool: Pool, peers: Peers, p: Principal, req: PrepareChangeRequest) {
  // A worker records only changes a person already approved (recordApprovedChange).
  if (p.via === 'worker') throw new PermissionDeniedError('a worker cannot prepare a change');
  const { op, live, plan, standardsChecked, uploads, digest } = await planPrepared(pool, peers, p, req);
  const reviewed = reviewedResult(req.objectType, req.effect, live, bodyOf(op));
  const row = await insertChange(pool, {
    change_id: randomUUID(),
    workspace_id: p.workspaceId,
    account_id: req.accountId,
    tool: req.tool,
    summary: plan.summary,
    method: op.method,
    path: op.path,
    body_json: op.bodyJson,
    digest,
    target_path: req.targetPath,
    target_before_json: JSON.stringify(live ?? {}),
    prepared_by: actorName(p),
    standards_checked: standardsChecked,
    reviewed_result_json: JSON.stringify(reviewed),
    uploads,
  });
  return toProto(row);
}

export function changesHandlers({
  pool,
  upstream,
  marketing,
  sleep = (ms) => new Promise((r) => setTimeout(r, ms)),
}: HandlerDeps): ServiceImpl<typeof ChangesService> {
  return {
    ...planningHandlers(upstream),

    async prepareChange(req, ctx) {
      return { change: await prepareAndRecord(pool, { upstream, marketing }, principalOf(ctx), req) };
    },

    async planChange(req, ctx) {
      if (req.change === undefined) throw new InvalidArgumentError('change is required');
      const current = req.currentJson === undefined ? undefined : { json: req.currentJson };
      const p = principalOf(ctx);
      const { op, plan, accessRefusal, digest } = await planPrepared(
        pool,
        { upstream, marketing },
        p,
        req.change,
        current,
        'report',
      );
      return {
        summary: plan.summary,
        operation: op,
        digest,
        targetPath: req.change.targetPath,
        verified: current === undefined,
        accessRefusal,
      };
    },

    async getChange(req, ctx) {
      const row = await load(pool, principalOf(ctx), req.changeId);
      // A person settling an unknown outcome looks at the object as the platform shows it now.
      const live = !req.checkLive
        ? undefined
        : row.status === 'prepared'
          ? await checkLive(pool, upstream, row, ctx.signal)
          : outcomeUnknown(row)
            ? await liveOutcome(upstream, row, ctx.signal)
            : undefined;
      return { change: toProto(row), live };
    },

    async listChanges(req, ctx) {
      const p = principalOf(ctx);
      // The status enum and the page bounds are the tool's schema, checked at the gateway.
      if (req.accountId !== '' && !isUuid(req.accountId))
        throw new InvalidArgumentError('account_id must be a UUID');
      const limit = req.limit === 0 ? 20 : req.limit;
      const { rows, total } = await listChanges(pool, {
        workspaceId: p.workspaceId,
        status: req.status || undefined,
        accountId: req.accountId || undefined,
        outcomeUnknown: req.outcomeUnknown,
        limit,
        offset: req.offset,
      });
      const next = req.offset + rows.length;
      return { changes: rows.map(toProto), total, nextOffset: next < total ? next : undefined };
    },

    async listChangeEvents(req, ctx) {
      const p = principalOf(ctx);
      if (req.accountId !== '' && !isUuid(req.accountId))
        throw new InvalidArgumentError('account_id must be a UUID');
      if (req.userId !== '' && !isUuid(req.userId)) throw new InvalidArgumentError('user_id must be a UUID');
      if (req.limit < 0 || req.limit > 500) throw new InvalidArgumentError('limit must be between 0 and 500');
      const cursorGiven = req.beforeAt !== '' || req.beforeKey !== '';
      // The cursor may be another source's event (the gateway merges its audit rows, keyed `g:…`):
      // its key is only compared, byte-wise, with ours.
      if (cursorGiven && (!RFC3339.test(req.beforeAt) || !/^[a-z]:[0-9a-z_:-]{1,80}$/.test(req.beforeKey))) {
        throw new InvalidArgumentError(
          'before_at must be an RFC 3339 time and before_key an event key (a letter, a colon, then at most 80 of a-z, 0-9, _, : and -), both or neither',
        );
      }
      const rows = await listChangeEvents(pool, {
        workspaceId: p.workspaceId,
        accountId: req.accountId || undefined,
        userId: req.userId.toLowerCase() || undefined,
        beforeAt: cursorGiven ? req.beforeAt : undefined,
        beforeKey: cursorGiven ? req.beforeKey : undefined,
        limit: req.limit === 0 ? 100 : req.limit,
      });
      return {
        events: rows.map((r) => ({ kind: r.kind, at: r.event_at, key: r.event_key, change: toProto(r) })),
      };
    },

    async approveChange(req, ctx) {
      const p = principalOf(ctx);
      checkMayDecide(p);
      const row = await load(pool, p, req.changeId);
      refuse(decisionRefusal(row.status));
      if (req.digest !== row.digest) {
        throw new FailedPreconditionError(
          'the change is not the one that was reviewed (its digest differs); review it again',
        );
      }
      await requireFresh(pool, upstream, row, ctx.signal);
      const approved = await approveChange(pool, {
        workspaceId: p.workspaceId,
        changeId: row.change_id,
        digest: req.digest,
        by: actorName(p),
        userId: p.userId,
      });
      if (approved === undefined)
        throw new FailedPreconditionError('the change was decided by someone else meanwhile; reload it');
      return { change: toProto(approved) };
    },

    async rejectChange(req, ctx) {
      const p = principalOf(ctx);
      checkMayDecide(p);
      const reason = req.reason.trim();
      if (reason === '' || textLength(reason) > 2000)
        throw new InvalidArgumentError('reason must be 1 to 2000 characters');
      const row = await load(pool, p, req.changeId);
      refuse(rejectionRefusal(row.status));
      const rejected = await rejectChange(pool, {
        workspaceId: p.workspaceId,
        changeId: row.change_id,
        by: actorName(p),
        reason,
      });
      if (rejected === undefined)
        throw new FailedPreconditionError(
          'the change was decided or asked to be applied meanwhile; reload it',
        );
      return { change: toProto(rejected) };
    },

    async resolveChange(req, ctx) {
      const p = principalOf(ctx);
      checkMaySettle(p);
      const row = await load(pool, p, req.changeId);
      const settled = await resolveChange({ pool, applyTopic: APPLY_TOPIC }, p, actorName(p), row, req);
      return { change: toProto(settled) };
    },

    async recordApprovedChange(req, ctx) {
      const p = principalOf(ctx);
      // Worker tokens addressed to this service come only from the optimizer's key (OPTIMIZER_PUBLIC_KEY).
      if (p.via !== 'worker') {
        throw new PermissionDeniedError('only the optimizer records changes approved on its proposals');
      }
      if (!isUuid(req.changeId)) throw new InvalidArgumentError('change_id must be a UUID');
      if (req.change === undefined) throw new InvalidArgumentError('change is required');
      if (req.approvedBy.trim() === '') throw new InvalidArgumentError('approved_by is required');
      const known = await findChange(pool, p.workspaceId, req.changeId);
      if (known !== undefined) return { change: toProto(known) };
      const { op, live, plan, standardsChecked, uploads, digest } = await planPrepared(
        pool,
        { upstream, marketing },
        p,
        req.change,
      );
      const reviewed = reviewedResult(req.change.objectType, req.change.effect, live, bodyOf(op));
      const recorded = await inTransaction(pool, async (tx) => {
        await insertChange(tx, {
          change_id: req.changeId,
          workspace_id: p.workspaceId,
          account_id: req.change?.accountId ?? '',
          tool: req.change?.tool ?? '',
          summary: plan.summary,
          method: op.method,
          path: op.path,
          body_json: op.bodyJson,
          digest,
          target_path: req.change?.targetPath ?? '',
          target_before_json: JSON.stringify(live ?? {}),
          prepared_by: actorName(p),
          standards_checked: standardsChecked,
          reviewed_result_json: JSON.stringify(reviewed),
          uploads,
        });
        await approveChange(tx, {
          workspaceId: p.workspaceId,
          changeId: req.changeId,
          digest,
          by: req.approvedBy,
          userId: isUuid(req.approverUserId) ? req.approverUserId : null,
        });
        const applying = await markApplying(tx, {
          workspaceId: p.workspaceId,
          changeId: req.changeId,
          by: actorName(p),
        });
        const message: ApplyMessage = { change_id: req.changeId, workspace_id: p.workspaceId };
        await enqueue(tx, {
          topic: APPLY_TOPIC,
          key: req.changeId,
          payload: message,
          id: deterministicId('apply', req.changeId),
        });
        return applying;
      });
      if (recorded === undefined) throw new Error('a change recorded in this transaction was not approved');
      return { change: toProto(recorded) };
    },

    async applyChange(req, ctx) {
      const p = principalOf(ctx);
      checkMayApply(p);
      if (req.waitMs < 0 || req.waitMs > 30_000)
        throw new InvalidArgumentError('wait_ms must be from 0 to 30000');
      let row = await load(pool, p, req.changeId);
      if (req.digest !== '' && req.digest !== row.digest) {
        throw new FailedPreconditionError(
          "the digest given is not this change's; the change is not the one you reviewed",
        );
      }
      const resend = unknownOutcomeResend(row, new Date());
      refuse(applyRefusal(row.status, row.applied_at?.toISOString() ?? null, resend));
      // An approved change is sent; one whose outcome was unknown is sent again, with the same key.
      const retry = resend === 'resend';
      if (row.status === 'approved' || retry) {
        // The state change and the work it causes commit together.
        const moved = await inTransaction(pool, async (tx) => {
          const move = retry ? markRetrying : markApplying;
          const m = await move(tx, { workspaceId: p.workspaceId, changeId: row.change_id, by: actorName(p) });
          if (m === undefined) return undefined;
          const message: ApplyMessage = { change_id: m.change_id, workspace_id: m.workspace_id };
          await enqueue(tx, {
            topic: APPLY_TOPIC,
            key: m.change_id,
            payload: message,
            id: retry
              ? deterministicId('apply', m.change_id, m.apply_retried_at?.toISOString() ?? '')
              : deterministicId('apply', m.change_id),
          });
          return m;
        });
        row = moved ?? (await load(pool, p, req.changeId));
        refuse(
          row.status === 'approved'
            ? undefined
            : applyRefusal(
                row.status,
                row.applied_at?.toISOString() ?? null,
                unknownOutcomeResend(row, new Date()),
              ),
        );
      }
      const deadline = Date.now() + req.waitMs;
      while (!TERMINAL.has(row.status) && Date.now() < deadline && !ctx.signal.aborted) {
        await sleep(100);
        row = await load(pool, p, req.changeId);
      }
      return { change: toProto(row) };
    },
  };
}
