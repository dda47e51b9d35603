/** StandardsService: a workspace's account standards and templates, and its spend guards. */

import { randomUUID } from 'node:crypto';
import {
  type AccountStandardSchema,
  type PendingStandardChangeSchema,
  type SaveAccountStandardRequest,
  type SpendGuardSchema,
  StandardDataSchema,
  type StandardsService,
} from '@adsmcp/proto/changes/v1/standards_pb';
import { principalOf } from '@adsmcp/runtime/connect-server';
import { inTransaction, type Pool, type Queryable } from '@adsmcp/runtime/db';
import {
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  StaleRevisionError,
} from '@adsmcp/runtime/errors';
import { isUuid } from '@adsmcp/runtime/ids';
import { LIST_OFFSET_MAX, nextOffset, pageOf } from '@adsmcp/runtime/paging';
import { actorName, type Principal } from '@adsmcp/runtime/principal';
import { fromJson, type JsonValue, type MessageInitShape, toJson } from '@bufbuild/protobuf';
import type { ServiceImpl } from '@connectrpc/connect';
import { checkStandard } from '../domain/standard-data.ts';
import { archiveLoosenings, standardLoosenings } from '../domain/standard-loosening.ts';
import { type Standard, standardContradictions } from '../domain/standards-rules.ts';
import { readableAccount, type Upstream } from '../planning/platform-reads.ts';
import { appendAuditEvent, auditStandard } from '../store/audit-store.ts';
import {
  activeStandards,
  archiveStandard,
  changeStandardsChecked,
  countStandards,
  decidePendingStandardChange,
  findPendingStandardChange,
  findSpendGuard,
  insertPendingStandardChange,
  insertStandard,
  listPendingStandardChanges,
  listStandards,
  lockAccountStandards,
  lockStandard,
  type PendingStandardChangeRow,
  type SpendGuardRow,
  type StandardRow,
  standardsByIds,
  standardsCreatedSince,
  updateStandard,
  upsertSpendGuard,
} from '../store/standards-store.ts';

/**
 * Who may loosen an account standard: a workspace admin signed in to the dashboard (or the
 * operator), never an MCP client whatever its role. An agent's credential is often an editor's or
 * an admin's, so the role alone would let the agent loosen the guardrails it works within; and
 * editors do not confirm, since loosening a standard is a workspace decision like a spend cap.
 */
function mayLoosen(p: Principal): boolean {
  return p.role === 'admin' && p.scopes.includes('write') && (p.via === 'dashboard' || p.via === 'operator');
}

/**
 * `value` in the form PostgreSQL's uuid type gives back (lower case), or refused naming `field`.
 * UUIDs are case-insensitive: an id sent in upper case must compare equal to the stored one.
 */
function requireUuid(field: string, value: string): string {
  if (!isUuid(value))
    throw new InvalidArgumentError(`\`${field}\` must be a UUID (got ${JSON.stringify(value)})`);
  return value.toLowerCase();
}

const notFound = (id: string) =>
  new NotFoundError(`no account standard ${id} in this workspace; ads_list_account_standards lists them`);

function toStandardMessage(r: StandardRow): MessageInitShape<typeof AccountStandardSchema> {
  return {
    standardId: r.standard_id,
    accountId: r.account_id,
    name: r.name,
    kind: r.kind,
    data: fromJson(StandardDataSchema, r.data as JsonValue),
    revision: r.revision,
    archived: r.archived_at !== null,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
    archivedAt: r.archived_at?.toISOString(),
  };
}

function toPendingMessage(r: PendingStandardChangeRow): MessageInitShape<typeof PendingStandardChangeSchema> {
  return {
    pendingId: r.pending_id,
    accountId: r.account_id,
    standardId: r.standard_id,
    standardName: r.standard_name,
    action: r.action,
    baseRevision: r.base_revision,
    proposedName: r.proposed_name ?? undefined,
    proposedData:
      r.proposed_data === null ? undefined : fromJson(StandardDataSchema, r.proposed_data as JsonValue),
    loosenings: r.loosenings,
    requestedBy: r.requested_by,
    requestedAt: r.requested_at.toISOString(),
    status: r.status,
    decidedBy: r.decided_by ?? '',
    decidedAt: r.decided_at?.toISOString() ?? '',
  };
}

/** Appends a pending standard change's event (`standard.change_<kind>`) to the audit log. */
async function auditPending(
  tx: Queryable,
  kind: 'pending' | 'confirmed' | 'rejected',
  actor: string,
  r: PendingStandardChangeRow,
): Promise<void> {
  await appendAuditEvent(tx, {
    workspaceId: r.workspace_id,
    actor,
    kind: `standard.change_${kind}`,
    subject: r.standard_id,
    details: {
      pending_id: r.pending_id,
      standard_id: r.standard_id,
      account_id: r.account_id,
      name: r.standard_name,
      action: r.action,
      base_revision: r.base_revision,
      loosenings: r.loosenings,
      requested_by: r.requested_by,
    },
  });
}

function toGuardMessage(
  accountId: string,
  g: SpendGuardRow | undefined,
): MessageInitShape<typeof SpendGuardSchema> {
  const big = (v: string | null | undefined) => (v === null || v === undefined ? undefined : BigInt(v));
  return {
    accountId,
    maxDailyBudgetMicros: big(g?.max_daily_budget_micros),
    maxBidMicros: big(g?.max_bid_micros),
    updatedBy: g?.updated_by ?? '',
    updatedAt: g?.updated_at.toISOString() ?? '',
  };
}

/** The cap as set: at least 1 micro when given. */
function cap(value: bigint | undefined, field: string): bigint | null {
  if (value === undefined) return null;
  if (value < 1n)
    throw new InvalidArgumentError(`\`${field}\` must be at least 1 micro when set (got ${value})`);
  return value;
}

/**
 * Refuses a standard's `data` that contradicts another active standard of the account (every one
 * applies to every change, so no change setting that field could be prepared). `self` is the
 * standard being updated, which is not judged against its own saved version. Run it holding
 * lockAccountStandards, so that two saves cannot each pass before the other is stored.
 */
async function refuseContradictions(
  tx: Queryable,
  workspaceId: string,
  accountId: string,
  data: Record<string, unknown>,
  self?: string,
): Promise<void> {
  const others: Standard[] = (await activeStandards(tx, workspaceId, accountId))
    .filter((r) => r.standard_id !== self)
    .map((r) => ({ standardId: r.standard_id, name: r.name, revision: r.revision, data: r.data }));
  const found = standardContradictions(data, others);
  if (found.length > 0) throw new InvalidArgumentError(found.join('; '));
}

/**
 * saveStandard creates an account standard (no `standard_id`) or updates one at the revision the
 * caller last read, holding the account's standards so that no two saves contradict each other.
 */
async function saveStandard(pool: Pool, upstream: Upstream, p: Principal, req: SaveAccountStandardRequest) {
  const accountId = requireUuid('account_id', req.accountId);
  const data = (
    req.data === undefined ? {} : toJson(StandardDataSchema, req.data, { useProtoFieldName: true })
  ) as Record<string, unknown>;
  const kind = checkStandard({ name: req.name, kind: req.kind, data });
  // The account must be one of the workspace's (the upstream-proxy answers NotFound otherwise).
  await readableAccount(upstream, p, accountId);
  const save: StandardSave = { p, accountId, name: req.name, kind, data };
  if (req.standardId === undefined) {
    if (req.expectedRevision !== undefined)
      throw new InvalidArgumentError('`expected_revision` is only for an update: give `standard_id` too');
    return { standard: toStandardMessage(await createStandard(pool, save)), created: true };
  }
  const standardId = requireUuid('standard_id', req.standardId);
  const expected = req.expectedRevision;
  if (expected === undefined)
    throw new InvalidArgumentError(
      '`expected_revision` is required with `standard_id`: the revision you last read',
    );
  const saved = await inTransaction(pool, (tx) => updateOrHoldStandard(tx, save, standardId, expected));
  return {
    standard: toStandardMessage(saved.row),
    created: false,
    pending: saved.pending && toPendingMessage(saved.pending),
  };
}

/** A save's checked request. */
interface StandardSave {
  p: Principal;
  accountId: string;
  name: string;
  kind: StandardRow['kind'];
  data: Record<string, unknown>;
}

async function createStandard(pool: Pool, s: StandardSave): Promise<StandardRow> {
  const { p, accountId, kind, data } = s;
  return inTransaction(pool, async (tx) => {
    await lockAccountStandards(tx, p.workspaceId, accountId);
    if (kind === 'standard') await refuseContradictions(tx, p.workspaceId, accountId, data);
    const row = await insertStandard(tx, {
      standard_id: randomUUID(),
      workspace_id: p.workspaceId,
      account_id: accountId,
      name: s.name,
      kind,
      data,
    });
    return auditStandard(tx, 'created', actorName(p), row);
  });
}

/**
 * Updates a standard in `tx`, or, when the save loosens it and the caller may not loosen, records
 * the save as pending a person's confirmation and leaves the standard as it is.
 */
async function updateOrHoldStandard(
  tx: Queryable,
  s: StandardSave,
  standardId: string,
  expected: number,
): Promise<{ row: StandardRow; pending: PendingStandardChangeRow | undefined }> {
  const { p, accountId, kind, data } = s;
  await lockAccountStandards(tx, p.workspaceId, accountId);
  const current = await lockStandard(tx, p.workspaceId, standardId);
  refuseUpdate(current, s, standardId, expected);
  if (kind === 'standard') await refuseContradictions(tx, p.workspaceId, accountId, data, standardId);
  const loosenings = standardLoosenings(kind, current.data, data);
  if (loosenings.length > 0 && !mayLoosen(p)) {
    const pending = await insertPendingStandardChange(tx, {
      pending_id: randomUUID(),
      workspace_id: p.workspaceId,
      account_id: accountId,
      standard_id: standardId,
      action: 'save',
      base_revision: current.revision,
      proposed_name: s.name,
      proposed_data: data,
      loosenings,
      requested_by: actorName(p),
    });
    await auditPending(tx, 'pending', actorName(p), pending);
    return { row: current, pending };
  }
  const next = await updateStandard(tx, {
    workspaceId: p.workspaceId,
    standardId,
    revision: expected,
    name: s.name,
    data,
  });
  if (next === undefined) throw new Error('a locked account standard changed meanwhile');
  return { row: await auditStandard(tx, 'updated', actorName(p), next), pending: undefined };
}

/** Refuses an update of a standard that is gone, archived, another account's, of another kind or moved on. */
function refuseUpdate(
  current: StandardRow | undefined,
  s: StandardSave,
  standardId: string,
  expected: number,
): asserts current is StandardRow {
  if (current === undefined) throw notFound(standardId);
  if (current.archived_at !== null)
    throw new FailedPreconditionError(`account standard ${standardId} is archived and cannot be updated`);
  if (current.account_id !== s.accountId)
    throw new InvalidArgumentError(
      `account standard ${standardId} belongs to account ${current.account_id}; a standard cannot move to another account`,
    );
  if (current.kind !== s.kind)
    throw new InvalidArgumentError(
      `the kind of account standard ${standardId} is ${current.kind}; it cannot change`,
    );
  if (current.revision !== expected) throw new StaleRevisionError(current.revision, 'account standard');
}

/**
 * Applies a confirmed pending change to the standard it was computed against, in `tx`: refused
 * when the standard moved since (saved again or archived), since the loosenings the person read
 * were computed against the revision it had then.
 */
async function applyPending(tx: Queryable, r: PendingStandardChangeRow, by: string): Promise<StandardRow> {
  await lockAccountStandards(tx, r.workspace_id, r.account_id);
  const current = await lockStandard(tx, r.workspace_id, r.standard_id);
  if (current === undefined) throw notFound(r.standard_id);
  if (current.archived_at !== null || current.revision !== r.base_revision) {
    const now =
      current.archived_at !== null
        ? `was archived at revision ${current.revision}`
        : `is at revision ${current.revision}`;
    throw new FailedPreconditionError(
      `account standard "${current.name}" (${r.standard_id}) ${now} since this change was asked for at revision ${r.base_revision}; what it would loosen was judged against that revision, so it cannot be confirmed: reject it, and ask for the change again if it is still wanted`,
    );
  }
  if (r.action === 'archive') {
    const archived = await archiveStandard(tx, {
      workspaceId: r.workspace_id,
      standardId: r.standard_id,
      revision: current.revision,
    });
    if (archived === undefined) throw new Error('a locked account standard changed meanwhile');
    return auditStandard(tx, 'archived', by, archived);
  }
  const data = r.proposed_data ?? {};
  if (current.kind === 'standard')
    await refuseContradictions(tx, r.workspace_id, r.account_id, data, r.standard_id);
  const next = await updateStandard(tx, {
    workspaceId: r.workspace_id,
    standardId: r.standard_id,
    revision: current.revision,
    name: r.proposed_name ?? current.name,
    data,
  });
  if (next === undefined) throw new Error('a locked account standard changed meanwhile');
  return auditStandard(tx, 'updated', by, next);
}

/** Confirms (applies) or rejects a pending standard change, as a workspace admin in the dashboard. */
async function decidePending(
  pool: Pool,
  p: Principal,
  pendingIdText: string,
  decision: 'confirmed' | 'rejected',
) {
  const pendingId = requireUuid('pending_id', pendingIdText);
  const by = actorName(p);
  return inTransaction(pool, async (tx) => {
    const found = await findPendingStandardChange(tx, p.workspaceId, pendingId, true);
    if (found === undefined)
      throw new NotFoundError(`no pending standard change ${pendingId} in this workspace`);
    if (found.status !== 'pending')
      throw new FailedPreconditionError(
        `standard change ${pendingId} was already ${found.status} by ${found.decided_by} at ${found.decided_at?.toISOString()}`,
      );
    const standard =
      decision === 'confirmed'
        ? await applyPending(tx, found, by)
        : await lockStandard(tx, p.workspaceId, found.standard_id);
    await decidePendingStandardChange(tx, { workspaceId: p.workspaceId, pendingId, status: decision, by });
    const decided = await findPendingStandardChange(tx, p.workspaceId, pendingId);
    if (decided === undefined) throw new Error('a decided pending standard change is missing');
    await auditPending(tx, decision, by, decided);
    return { change: toPendingMessage(decided), standard: standard && toStandardMessage(standard) };
  });
}

/** The account standards: list, save, archive. */
function standardRpcs(
  pool: Pool,
  upstream: Upstream,
): Pick<
  ServiceImpl<typeof StandardsService>,
  'listAccountStandards' | 'saveAccountStandard' | 'archiveAccountStandard'
> {
  return {
    async listAccountStandards(req, ctx) {
      const p = principalOf(ctx);
      requireUuid('account_id', req.accountId);
      const page = pageOf(req);
      if (page.limit < 1 || page.limit > 100)
        throw new InvalidArgumentError('`limit` must be an integer from 1 to 100');
      if (page.offset < 0 || page.offset > LIST_OFFSET_MAX)
        throw new InvalidArgumentError(`\`offset\` must be an integer from 0 to ${LIST_OFFSET_MAX}`);
      const [rows, total] = await Promise.all([
        listStandards(pool, { workspaceId: p.workspaceId, accountId: req.accountId, ...page }),
        countStandards(pool, p.workspaceId, req.accountId),
      ]);
      return {
        standards: rows.map(toStandardMessage),
        total,
        nextOffset: nextOffset(page, rows.length, total),
      };
    },

    async saveAccountStandard(req, ctx) {
      return saveStandard(pool, upstream, principalOf(ctx), req);
    },

    async archiveAccountStandard(req, ctx) {
      const p = principalOf(ctx);
      requireUuid('standard_id', req.standardId);
      const archived = await inTransaction(pool, async (tx) => {
        const current = await lockStandard(tx, p.workspaceId, req.standardId);
        if (current === undefined) throw notFound(req.standardId);
        if (current.archived_at !== null)
          throw new FailedPreconditionError(`account standard ${req.standardId} is already archived`);
        if (current.revision !== req.expectedRevision)
          throw new StaleRevisionError(current.revision, 'account standard');
        const loosenings = archiveLoosenings(current.kind, current.name, current.data);
        if (loosenings.length > 0 && !mayLoosen(p)) {
          const pending = await insertPendingStandardChange(tx, {
            pending_id: randomUUID(),
            workspace_id: p.workspaceId,
            account_id: current.account_id,
            standard_id: current.standard_id,
            action: 'archive',
            base_revision: current.revision,
            proposed_name: null,
            proposed_data: null,
            loosenings,
            requested_by: actorName(p),
          });
          await auditPending(tx, 'pending', actorName(p), pending);
          return { row: current, pending };
        }
        const next = await archiveStandard(tx, {
          workspaceId: p.workspaceId,
          standardId: req.standardId,
          revision: current.revision,
        });
        if (next === undefined) throw new Error('a locked account standard changed meanwhile');
        return { row: await auditStandard(tx, 'archived', actorName(p), next), pending: undefined };
      });
      return {
        standard: toStandardMessage(archived.row),
        pending: archived.pending && toPendingMessage(archived.pending),
      };
    },
  };
}

/** The spend guards: read by anyone who reads, set only by a workspace admin in the dashboard. */
function spendGuardRpcs(
  pool: Pool,
  upstream: Upstream,
): Pick<ServiceImpl<typeof StandardsService>, 'getSpendGuard' | 'setSpendGuard'> {
  return {
    async getSpendGuard(req, ctx) {
      const p = principalOf(ctx);
      requireUuid('account_id', req.accountId);
      return {
        guard: toGuardMessage(req.accountId, await findSpendGuard(pool, p.workspaceId, req.accountId)),
      };
    },

    async setSpendGuard(req, ctx) {
      const p = principalOf(ctx);
      requireUuid('account_id', req.accountId);
      const maxDailyBudgetMicros = cap(req.maxDailyBudgetMicros, 'max_daily_budget_micros');
      const maxBidMicros = cap(req.maxBidMicros, 'max_bid_micros');
      await readableAccount(upstream, p, req.accountId);
      const row = await upsertSpendGuard(pool, {
        workspaceId: p.workspaceId,
        accountId: req.accountId,
        maxDailyBudgetMicros,
        maxBidMicros,
        by: actorName(p, 'channel'),
      });
      return { guard: toGuardMessage(req.accountId, row) };
    },
  };
}

/** Loosening saves and archives waiting for a person, and what a change's standards are now. */
function pendingRpcs(
  pool: Pool,
): Pick<
  ServiceImpl<typeof StandardsService>,
  | 'listPendingStandardChanges'
  | 'confirmPendingStandardChange'
  | 'rejectPendingStandardChange'
  | 'getCheckedStandardsNow'
> {
  return {
    async listPendingStandardChanges(req, ctx) {
      const p = principalOf(ctx);
      const accountId = req.accountId === '' ? undefined : requireUuid('account_id', req.accountId);
      const rows = await listPendingStandardChanges(pool, p.workspaceId, accountId);
      return { changes: rows.map(toPendingMessage) };
    },

    async confirmPendingStandardChange(req, ctx) {
      return decidePending(pool, principalOf(ctx), req.pendingId, 'confirmed');
    },

    async rejectPendingStandardChange(req, ctx) {
      return decidePending(pool, principalOf(ctx), req.pendingId, 'rejected');
    },

    async getCheckedStandardsNow(req, ctx) {
      const p = principalOf(ctx);
      const changeId = requireUuid('change_id', req.changeId);
      const change = await changeStandardsChecked(pool, p.workspaceId, changeId);
      if (change === undefined) throw new NotFoundError(`no change ${changeId} in this workspace`);
      const ids = change.standards_checked.map((s) => s.standard_id);
      const [now, added, pending] = await Promise.all([
        standardsByIds(pool, p.workspaceId, ids),
        standardsCreatedSince(pool, p.workspaceId, change.account_id, change.prepared_at),
        listPendingStandardChanges(pool, p.workspaceId, change.account_id),
      ]);
      const byId = new Map(now.map((r) => [r.standard_id, r]));
      return {
        checked: change.standards_checked.map((s) => {
          const r = byId.get(s.standard_id);
          return {
            standardId: s.standard_id,
            name: r?.name ?? s.name,
            checkedRevision: s.revision,
            revision: r?.revision ?? s.revision,
            savedAt: r?.updated_at.toISOString() ?? '',
            archivedAt: r?.archived_at?.toISOString(),
          };
        }),
        added: added.map(toStandardMessage),
        pending: pending.map(toPendingMessage),
      };
    },
  };
}

export function standardsHandlers(pool: Pool, upstream: Upstream): ServiceImpl<typeof StandardsService> {
  return { ...standardRpcs(pool, upstream), ...spendGuardRpcs(pool, upstream), ...pendingRpcs(pool) };
}
