/**
 * A planned change: everything a prepare, a preflight and an optimizer's publishing need to know
 * about one requested change, computed once per request. The object's rules are resolved once;
 * the account, the live object and the references the body makes are read once; the summary and
 * the reviewed result are computed once; the standards are checked once. Then the change is
 * recorded from that one value (recordPlannedChange), or reported (PlanChange).
 */
import { randomUUID } from 'node:crypto';
import type { Account } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { deterministicId } from '@adsmcp/runtime/bus/outbox';
import { inTransaction, type Pool, type Queryable } from '@adsmcp/runtime/db';
import { PermissionDeniedError } from '@adsmcp/runtime/errors';
import { isUuid } from '@adsmcp/runtime/ids';
import { actorName, type Principal } from '@adsmcp/runtime/principal';
import {
  bodyOf,
  checkMayPrepare,
  checkPrepare,
  digestOf,
  type Operation,
  prepareRefusal,
} from '../domain/change.ts';
import { checkTargetPath, type PlatformObject, planObject, type Rules, rulesFor } from '../domain/plan.ts';
import type { CheckedStandard } from '../domain/standards-rules.ts';
import type { Upload } from '../domain/uploads.ts';
import { approveChange, type ChangeRow, insertChange, markApplying } from '../store/change-store.ts';
import { enqueueApply } from '../work/apply-message.ts';
import { enforceControls } from './account-controls.ts';
import type { Marketing } from './campaign-assets.ts';
import { checkPlatformBody } from './platform-body.ts';
import {
  type AccessCheck,
  accountRefusal,
  accountToPlan,
  liveObject,
  type Upstream,
} from './platform-reads.ts';
import { resolveReferences } from './references.ts';
import { enforceStandards } from './standards.ts';

/** A change as it is asked for (PrepareChange's request). */
export interface ChangeRequest {
  accountId: string;
  /** The prepare tool that asks for it. */
  tool: string;
  objectType: string;
  effect: string;
  /** The platform path of the object the change is about; empty for a change that creates one. */
  targetPath: string;
  operation: Operation;
}

/** What planning reads and checks with: the database (standards) and the services it reads. */
export interface PlanningDeps {
  db: Queryable;
  /** The upstream-proxy: the account, the live object, the references. */
  upstream: Upstream;
  /** The marketing service's assets: the images a change's creatives name (unset: none can be used). */
  marketing?: Marketing;
}

export interface PlanOptions {
  /** The target as the caller believes it is, planned against instead of the live one (not read then). */
  current?: PlatformObject;
  /** A prepare enforces the caller's right to change the account; a preflight reports it. */
  access?: AccessCheck;
  /** The account, when this request read it already (as `access` asks). */
  account?: Account;
  /**
   * Whether the body is held to the body its tool publishes (the default). Only a body this
   * service builds from the platform's own before-state (a revert) is not: it may put back a value
   * the platform holds but no tool takes, such as a removed bid cap (null).
   */
  declaredBody?: boolean;
}

/** One planned change, as recorded by a prepare and reported by a preflight. */
export interface PlannedChange {
  request: ChangeRequest;
  /** The object as the platform has it now (or as the caller gave it); none for a create. */
  live: PlatformObject | undefined;
  /** What a person reads. */
  summary: string;
  /** The fields the applied object should have, held against the platform's answer on apply. */
  reviewed: PlatformObject;
  standardsChecked: CheckedStandard[];
  /** The campaign assets the change uploads when applied, pinned now. */
  uploads: Upload[];
  /** The digest of exactly what will be sent (the operation and the pinned images). */
  digest: string;
  /** Why this caller could not prepare it, or empty; always empty when access is enforced. */
  accessRefusal: string;
  /** Planned against the live object, not against a `current` the caller gave. */
  verified: boolean;
}

/** The object the change is about: given by the caller, read live, or none for a create. */
async function targetOf(
  { upstream }: PlanningDeps,
  p: Principal,
  account: Account,
  rules: Rules,
  request: ChangeRequest,
  current: PlatformObject | undefined,
): Promise<PlatformObject | undefined> {
  if (request.targetPath === '') return undefined;
  if (current !== undefined) return current;
  const what = `${rules.label} ${request.targetPath.split('/').pop() ?? ''}`;
  return liveObject(upstream, p, account, request.targetPath, what);
}

/**
 * planChange plans `request` for `p`: the request checked (its body against the body its tool
 * publishes, `checkPlatformBody`), the account and the target read (or `current` taken instead),
 * the object the operation would produce checked by the object's rules,
 * the references its body makes resolved, the summary written and the account's standards and
 * spend guard enforced. It throws what a prepare would refuse; nothing is recorded.
 */
export async function planChange(
  d: PlanningDeps,
  p: Principal,
  request: ChangeRequest,
  { current, access = 'enforce', account: read, declaredBody = true }: PlanOptions = {},
): Promise<PlannedChange> {
  if (access === 'enforce') checkMayPrepare(p);
  checkPrepare(request);
  const rules = rulesFor(request.objectType, request.effect);
  checkTargetPath(rules, request.targetPath);
  const body = bodyOf(request.operation);
  // Before anything is read. The gateway checked an agent's body already; not every caller is the gateway.
  if (declaredBody) checkPlatformBody(request.objectType, request.effect, body);
  const account = read ?? (await accountToPlan(d.upstream, p, request.accountId, access));
  const live = await targetOf(d, p, account, rules, request, current);
  const { summary, reviewed } = planObject(rules, { body, live, accountName: account.name });
  const reads = { upstream: d.upstream, marketing: d.marketing, p, account };
  const uploads = await resolveReferences(reads, rules, { body, live, reviewed });
  // The account's standards and spend guard, checked again by the apply worker.
  const standardsChecked = await enforceStandards(
    d.db,
    p.workspaceId,
    account,
    request.operation,
    reviewed,
    live,
  );
  // A freeze and the spend envelope, held again at approval and at apply.
  await enforceControls(d.db, p, account, body, live);
  return {
    request,
    live,
    summary,
    reviewed,
    standardsChecked,
    uploads,
    digest: digestOf(request.operation, uploads),
    // Empty when access is enforced: a caller who may not prepare was refused above.
    accessRefusal: prepareRefusal(p) ?? accountRefusal(account) ?? '',
    verified: current === undefined,
  };
}

/** recordPlannedChange records `planned`, prepared by `who`, as change `changeId`. */
export function recordPlannedChange(
  db: Queryable,
  planned: PlannedChange,
  who: Principal,
  changeId: string = randomUUID(),
): Promise<ChangeRow> {
  const { request, live } = planned;
  return insertChange(db, {
    change_id: changeId,
    workspace_id: who.workspaceId,
    account_id: request.accountId,
    tool: request.tool,
    summary: planned.summary,
    method: request.operation.method,
    path: request.operation.path,
    body_json: request.operation.bodyJson,
    digest: planned.digest,
    target_path: request.targetPath,
    target_before_json: JSON.stringify(live ?? {}),
    prepared_by: actorName(who),
    standards_checked: planned.standardsChecked,
    reviewed_result_json: JSON.stringify(planned.reviewed),
    uploads: planned.uploads,
  });
}

/**
 * prepareChange plans a change and records it, prepared, for a person to review: PrepareChange,
 * and the ad batches.
 */
export async function prepareChange(
  d: PlanningDeps,
  p: Principal,
  request: ChangeRequest,
  options?: Pick<PlanOptions, 'account'>,
): Promise<ChangeRow> {
  // A worker records only changes a person already approved (recordApprovedChange).
  if (p.via === 'worker') throw new PermissionDeniedError('a worker cannot prepare a change');
  return recordPlannedChange(d.db, await planChange(d, p, request, options), p);
}

/** Who approved a change outside this service (an optimizer's proposal), as its caller recorded it. */
export interface Approval {
  /** A UUID the caller derives from what it publishes. */
  changeId: string;
  approvedBy: string;
  /** The approver's user id; anything but a UUID is recorded as none. */
  approverUserId: string;
}

/**
 * recordApprovedChange records a change a person approved elsewhere, planned as any prepare is,
 * approved as they did and queued to be applied, all in one transaction; undefined when another
 * transaction moved it meanwhile.
 */
export function recordApprovedChange(
  pool: Pool,
  planned: PlannedChange,
  who: Principal,
  approval: Approval,
): Promise<ChangeRow | undefined> {
  const { changeId } = approval;
  return inTransaction(pool, async (tx) => {
    await recordPlannedChange(tx, planned, who, changeId);
    await approveChange(tx, {
      workspaceId: who.workspaceId,
      changeId,
      digest: planned.digest,
      by: approval.approvedBy,
      userId: isUuid(approval.approverUserId) ? approval.approverUserId : null,
    });
    const applying = await markApplying(tx, { workspaceId: who.workspaceId, changeId, by: actorName(who) });
    await enqueueApply(
      tx,
      { change_id: changeId, workspace_id: who.workspaceId },
      deterministicId('apply', changeId),
    );
    return applying;
  });
}
