/** StandardsService: a workspace's account standards and templates, and its spend guards. */

import { randomUUID } from 'node:crypto';
import {
  type AccountStandardSchema,
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
  PermissionDeniedError,
  StaleRevisionError,
} from '@adsmcp/runtime/errors';
import { isUuid } from '@adsmcp/runtime/ids';
import { LIST_OFFSET_MAX, nextOffset, pageOf } from '@adsmcp/runtime/paging';
import { actorName, type Principal } from '@adsmcp/runtime/principal';
import { fromJson, type JsonValue, type MessageInitShape, toJson } from '@bufbuild/protobuf';
import type { ServiceImpl } from '@connectrpc/connect';
import { checkStandard } from '../domain/standard-data.ts';
import { type Standard, standardContradictions } from '../domain/standards-rules.ts';
import { readableAccount, type Upstream } from '../planning/platform-reads.ts';
import { auditStandard } from '../store/audit-store.ts';
import {
  activeStandards,
  archiveStandard,
  countStandards,
  findSpendGuard,
  insertStandard,
  listStandards,
  lockAccountStandards,
  lockStandard,
  type SpendGuardRow,
  type StandardRow,
  updateStandard,
  upsertSpendGuard,
} from '../store/standards-store.ts';

const describe = (p: Principal) => `role ${p.role} and scopes [${p.scopes.join(', ')}]`;

function requireReader(p: Principal, what: string): void {
  if (!p.scopes.includes('read'))
    throw new PermissionDeniedError(`${what} needs the read scope; this caller has ${describe(p)}`);
}

function requireWriter(p: Principal, what: string): void {
  if (!p.scopes.includes('write') || (p.role !== 'admin' && p.role !== 'editor')) {
    throw new PermissionDeniedError(
      `${what} needs the admin or editor role and the write scope; this caller has ${describe(p)}`,
    );
  }
}

/**
 * A spend guard is set by a workspace admin in the dashboard (or by the operator), never over MCP:
 * the agent a cap guards must not be able to raise it, whatever its credential's role.
 */
function requireGuardSetter(p: Principal): void {
  if (p.role !== 'admin' || !p.scopes.includes('write') || (p.via !== 'dashboard' && p.via !== 'operator')) {
    throw new PermissionDeniedError(
      `setting a spend guard needs a workspace admin signed in to the dashboard; this caller has ${describe(p)} via ${p.via}`,
    );
  }
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
  requireWriter(p, 'saving an account standard');
  const accountId = requireUuid('account_id', req.accountId);
  const data = (
    req.data === undefined ? {} : toJson(StandardDataSchema, req.data, { useProtoFieldName: true })
  ) as Record<string, unknown>;
  const kind = checkStandard({ name: req.name, kind: req.kind, data });
  // The account must be one of the workspace's (the upstream-proxy answers NotFound otherwise).
  await readableAccount(upstream, p, accountId);
  if (req.standardId === undefined) {
    if (req.expectedRevision !== undefined)
      throw new InvalidArgumentError('`expected_revision` is only for an update: give `standard_id` too');
    const created = await inTransaction(pool, async (tx) => {
      await lockAccountStandards(tx, p.workspaceId, accountId);
      if (kind === 'standard') await refuseContradictions(tx, p.workspaceId, accountId, data);
      const row = await insertStandard(tx, {
        standard_id: randomUUID(),
        workspace_id: p.workspaceId,
        account_id: accountId,
        name: req.name,
        kind,
        data,
      });
      return auditStandard(tx, 'created', actorName(p), row);
    });
    return { standard: toStandardMessage(created), created: true };
  }
  const standardId = requireUuid('standard_id', req.standardId);
  const expected = req.expectedRevision;
  if (expected === undefined)
    throw new InvalidArgumentError(
      '`expected_revision` is required with `standard_id`: the revision you last read',
    );
  const saved = await inTransaction(pool, async (tx) => {
    await lockAccountStandards(tx, p.workspaceId, accountId);
    const current = await lockStandard(tx, p.workspaceId, standardId);
    if (current === undefined) throw notFound(standardId);
    if (current.archived_at !== null)
      throw new FailedPreconditionError(`account standard ${standardId} is archived and cannot be updated`);
    if (current.account_id !== accountId)
      throw new InvalidArgumentError(
        `account standard ${standardId} belongs to account ${current.account_id}; a standard cannot move to another account`,
      );
    if (current.kind !== kind)
      throw new InvalidArgumentError(
        `the kind of account standard ${standardId} is ${current.kind}; it cannot change`,
      );
    if (current.revision !== expected) throw new StaleRevisionError(current.revision, 'account standard');
    if (kind === 'standard') await refuseContradictions(tx, p.workspaceId, accountId, data, standardId);
    const next = await updateStandard(tx, {
      workspaceId: p.workspaceId,
      standardId,
      revision: expected,
      name: req.name,
      data,
    });
    if (next === undefined) throw new Error('a locked account standard changed meanwhile');
    return auditStandard(tx, 'updated', actorName(p), next);
  });
  return { standard: toStandardMessage(saved), created: false };
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
      requireReader(p, 'listing account standards');
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
      requireWriter(p, 'archiving an account standard');
      requireUuid('standard_id', req.standardId);
      const archived = await inTransaction(pool, async (tx) => {
        const current = await lockStandard(tx, p.workspaceId, req.standardId);
        if (current === undefined) throw notFound(req.standardId);
        if (current.archived_at !== null)
          throw new FailedPreconditionError(`account standard ${req.standardId} is already archived`);
        if (current.revision !== req.expectedRevision)
          throw new StaleRevisionError(current.revision, 'account standard');
        const next = await archiveStandard(tx, {
          workspaceId: p.workspaceId,
          standardId: req.standardId,
          revision: current.revision,
        });
        if (next === undefined) throw new Error('a locked account standard changed meanwhile');
        return auditStandard(tx, 'archived', actorName(p), next);
      });
      return { standard: toStandardMessage(archived) };
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
      requireReader(p, 'reading a spend guard');
      requireUuid('account_id', req.accountId);
      return {
        guard: toGuardMessage(req.accountId, await findSpendGuard(pool, p.workspaceId, req.accountId)),
      };
    },

    async setSpendGuard(req, ctx) {
      const p = principalOf(ctx);
      requireGuardSetter(p);
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

export function standardsHandlers(pool: Pool, upstream: Upstream): ServiceImpl<typeof StandardsService> {
  return { ...standardRpcs(pool, upstream), ...spendGuardRpcs(pool, upstream) };
}
