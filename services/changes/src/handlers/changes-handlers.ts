/**
 * The ChangesService RPCs: proto <-> domain (planning/ plans and records a change), and the
 * transaction that commits an apply request with its work.
 */
import {
  ChangeEventKind,
  ChangeEventKindSchema,
  ChangeStatusSchema,
  type ChangesService,
  type ListChangeEventsRequest,
  type PlanChangeResponseSchema,
  type PrepareChangeRequest,
} from '@adsmcp/proto/changes/v1/changes_pb';
import { principalOf } from '@adsmcp/runtime/connect-server';
import type { Pool, Queryable } from '@adsmcp/runtime/db';
import { enumValue, enumWord, enumWords } from '@adsmcp/runtime/enum-words';
import { FailedPreconditionError, InvalidArgumentError } from '@adsmcp/runtime/errors';
import { isUuid } from '@adsmcp/runtime/ids';
import { nextOffset, pageOf } from '@adsmcp/runtime/paging';
import { actorName } from '@adsmcp/runtime/principal';
import { textLength } from '@adsmcp/runtime/text';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { ServiceImpl } from '@connectrpc/connect';
import {
  checkExpiryHours,
  checkMayDecide,
  checkMaySetExpiry,
  checkMaySettle,
  decisionRefusal,
  type ExpiryHours,
  expiresAt,
  expiryRefusal,
  outcomeUnknown,
  refuse,
  rejectionRefusal,
  shownStatus,
} from '../domain/change.ts';
import type { PlatformObject } from '../domain/plan.ts';
import type { Marketing } from '../planning/campaign-assets.ts';
import { checkLive, requireFresh } from '../planning/live-check.ts';
import {
  type ChangeRequest,
  type PlannedChange,
  planChange,
  prepareChange,
  recordApprovedChange,
} from '../planning/planned-change.ts';
import type { Upstream } from '../planning/platform-reads.ts';
import {
  approveChange,
  findChange,
  listChangeEvents,
  listChanges,
  rejectChange,
} from '../store/change-store.ts';
import {
  currentExpirySetting,
  type ExpirySettingRow,
  expiryHours,
  hoursOf,
  insertExpirySetting,
  listExpirySettingEvents,
} from '../store/expiry-store.ts';
import { applyingRpcs } from './apply-handlers.ts';
import { load, type ReadAt, toProto } from './change-proto.ts';
import { planningHandlers } from './planning-handlers.ts';
import { liveOutcome, resolveChange } from './resolve-handlers.ts';

/** An RFC 3339 instant in UTC, as ListChangeEvents gives them. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;

/** The services planning reads from. */
export interface Peers {
  /** The upstream-proxy: planning reads the account and the live object, approval re-reads it. */
  upstream: Upstream;
  /** The marketing service's assets: the images a change's creatives name (unset: none can be used). */
  marketing?: Marketing;
}

export interface HandlerDeps extends Peers {
  pool: Pool;
  /**
   * Connections that plan a statement once (createPool's `genericPlans`), for the expired
   * changes' deep pages (listChanges); unset, those are planned on `pool` each time.
   */
  genericPlans?: Queryable;
  /** Waits between reads while ApplyChange waits for an outcome. */
  sleep?: (ms: number) => Promise<void>;
  /** The clock expiry is read by (tests pass a fixed one). */
  now?: () => Date;
}

export type Deps = Required<Pick<HandlerDeps, 'pool' | 'upstream' | 'sleep' | 'now'>> &
  Pick<HandlerDeps, 'marketing' | 'genericPlans'>;

/** The workspace's settings as the API shows them (the defaults while none was set). */
function settingsProto(row: ExpirySettingRow | undefined, hours: ExpiryHours) {
  return {
    preparedValidHours: hours.preparedValidHours,
    approvalValidHours: hours.approvalValidHours,
    setBy: row?.set_by ?? '',
    setAt: row?.set_at.toISOString() ?? '',
  };
}
export type Rpcs<K extends keyof ServiceImpl<typeof ChangesService>> = Pick<
  ServiceImpl<typeof ChangesService>,
  K
>;

/** A PrepareChange request as planning takes it. */
export function changeRequestOf(req: PrepareChangeRequest): ChangeRequest {
  return {
    accountId: req.accountId,
    tool: req.tool,
    objectType: req.objectType,
    effect: req.effect,
    targetPath: req.targetPath,
    operation: {
      method: req.operation?.method ?? '',
      path: req.operation?.path ?? '',
      bodyJson: req.operation?.bodyJson ?? '',
    },
  };
}

/** The target as the caller believes it is (`current_json`), planned against instead of the live one. */
function parseCurrent(json: string | undefined): PlatformObject | undefined {
  if (json === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw new InvalidArgumentError('current_json must be a JSON object');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new InvalidArgumentError('current_json must be a JSON object');
  return value as PlatformObject;
}

/** A planned change as the preflight (PlanChange) reports it. */
export function planReport(planned: PlannedChange): MessageInitShape<typeof PlanChangeResponseSchema> {
  return {
    summary: planned.summary,
    operation: planned.request.operation,
    digest: planned.digest,
    targetPath: planned.request.targetPath,
    verified: planned.verified,
    accessRefusal: planned.accessRefusal,
  };
}

/** Planning a change: recorded for review, reported by the preflight, or recorded approved. */
function planningRpcs({
  pool,
  upstream,
  marketing,
  now,
}: Deps): Rpcs<'prepareChange' | 'planChange' | 'recordApprovedChange'> {
  const planning = { db: pool, upstream, marketing };
  const readAt = async (workspaceId: string): Promise<ReadAt> => ({
    expiry: await expiryHours(pool, workspaceId),
    now: now(),
  });
  return {
    async prepareChange(req, ctx) {
      const p = principalOf(ctx);
      const row = await prepareChange(planning, p, changeRequestOf(req));
      return { change: toProto(row, await readAt(p.workspaceId)) };
    },

    async planChange(req, ctx) {
      if (req.change === undefined) throw new InvalidArgumentError('change is required');
      const p = principalOf(ctx);
      const current = parseCurrent(req.currentJson);
      return planReport(
        await planChange(planning, p, changeRequestOf(req.change), { current, access: 'report' }),
      );
    },

    async recordApprovedChange(req, ctx) {
      // Its access is the worker's alone (the proto), and worker tokens addressed to this service
      // come only from the optimizer's key (OPTIMIZER_PUBLIC_KEY).
      const p = principalOf(ctx);
      if (!isUuid(req.changeId)) throw new InvalidArgumentError('change_id must be a UUID');
      if (req.change === undefined) throw new InvalidArgumentError('change is required');
      if (req.approvedBy.trim() === '') throw new InvalidArgumentError('approved_by is required');
      const known = await findChange(pool, p.workspaceId, req.changeId);
      if (known !== undefined) return { change: toProto(known, await readAt(p.workspaceId)) };
      const planned = await planChange(planning, p, changeRequestOf(req.change));
      const recorded = await recordApprovedChange(pool, planned, p, req);
      if (recorded === undefined) throw new Error('a change recorded in this transaction was not approved');
      return { change: toProto(recorded, await readAt(p.workspaceId)) };
    },
  };
}

/** Reading changes: one (and its object re-read, when asked), a page, the audit events. */
function readingRpcs({
  pool,
  genericPlans,
  upstream,
  now,
}: Deps): Rpcs<'getChange' | 'listChanges' | 'listChangeEvents'> {
  return {
    async getChange(req, ctx) {
      const p = principalOf(ctx);
      const row = await load(pool, p, req.changeId);
      const at = { expiry: await expiryHours(pool, p.workspaceId), now: now() };
      // A person settling an unknown outcome looks at the object as the platform shows it now.
      const live = !req.checkLive
        ? undefined
        : shownStatus(row, at.expiry, at.now) === 'prepared'
          ? await checkLive(pool, upstream, row, ctx.signal)
          : outcomeUnknown(row)
            ? await liveOutcome(upstream, row, ctx.signal)
            : undefined;
      return { change: toProto(row, at), live };
    },

    async listChanges(req, ctx) {
      const p = principalOf(ctx);
      // The page bounds are the proto's rules, checked before any handler runs.
      if (req.accountId !== '' && !isUuid(req.accountId))
        throw new InvalidArgumentError('account_id must be a UUID');
      const status = statusFilter(req.state);
      // Plain proto3 fields: 0 is "unset", and no valid limit.
      const page = pageOf({ offset: req.offset, limit: req.limit || undefined });
      const at = { expiry: await expiryHours(pool, p.workspaceId), now: now() };
      const { rows, total } = await listChanges(pool, {
        workspaceId: p.workspaceId,
        status,
        accountId: req.accountId || undefined,
        outcomeUnknown: req.outcomeUnknown,
        ...at,
        ...page,
        genericPlans,
      });
      return {
        changes: rows.map((r) => toProto(r, at)),
        total,
        nextOffset: nextOffset(page, rows.length, total),
      };
    },

    async listChangeEvents(req, ctx) {
      const p = principalOf(ctx);
      const filter = eventFilter(req, p.workspaceId);
      const at = { expiry: await expiryHours(pool, p.workspaceId), now: now() };
      const [rows, settings] = await Promise.all([
        listChangeEvents(pool, filter),
        // Settings are the workspace's, no account's.
        filter.accountId === undefined ? listExpirySettingEvents(pool, filter) : Promise.resolve([]),
      ]);
      return { events: mergedEvents(rows, settings, at, filter.limit) };
    },
  };
}

/**
 * The status word a list is filtered by (the store's rows name statuses by their words), or none
 * for CHANGE_STATUS_UNSPECIFIED. A number the enum lacks (a newer caller's value) would match
 * nothing and read as "no such changes": refused, naming the words.
 */
function statusFilter(value: number): string | undefined {
  if (!ChangeStatusSchema.values.some((v) => v.number === value)) {
    throw new InvalidArgumentError(
      `state must be one of ${enumWords(ChangeStatusSchema).join(', ')} (got ${value})`,
    );
  }
  return enumWord(ChangeStatusSchema, value) ?? undefined;
}

/** The events filter a ListChangeEvents request asks for, its ids and cursor checked. */
function eventFilter(req: ListChangeEventsRequest, workspaceId: string) {
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
  return {
    workspaceId,
    accountId: req.accountId || undefined,
    userId: req.userId.toLowerCase() || undefined,
    beforeAt: cursorGiven ? req.beforeAt : undefined,
    beforeKey: cursorGiven ? req.beforeKey : undefined,
    limit: req.limit === 0 ? 100 : req.limit,
  };
}

/** The change events and the settings events as one page, newest first, at most `limit`. */
function mergedEvents(
  rows: Awaited<ReturnType<typeof listChangeEvents>>,
  settings: Awaited<ReturnType<typeof listExpirySettingEvents>>,
  at: ReadAt,
  limit: number,
) {
  const events = [
    ...rows.map((r) => ({
      // The store names each kind by its word (it is part of the event's key too).
      eventKind: enumValue(ChangeEventKindSchema, r.kind),
      at: r.event_at,
      key: r.event_key,
      change: toProto(r, at),
    })),
    ...settings.map((s) => ({
      eventKind: ChangeEventKind.EXPIRY_SETTINGS_CHANGED,
      at: s.event_at,
      key: s.event_key,
      settings: settingsProto(s, hoursOf(s)),
    })),
  ];
  // Both lists are newest first in the same order (time, then key byte-wise): merged, the page
  // is the first `limit`.
  events.sort((a, b) =>
    a.at !== b.at ? (a.at < b.at ? 1 : -1) : a.key < b.key ? 1 : a.key > b.key ? -1 : 0,
  );
  return events.slice(0, limit);
}

/** A person's decisions: approve, reject, settle an unknown outcome. */
function decidingRpcs({
  pool,
  upstream,
  now,
}: Deps): Rpcs<'approveChange' | 'rejectChange' | 'resolveChange'> {
  return {
    async approveChange(req, ctx) {
      const p = principalOf(ctx);
      checkMayDecide(p);
      const row = await load(pool, p, req.changeId);
      const at = { expiry: await expiryHours(pool, p.workspaceId), now: now() };
      refuse(expiryRefusal(row, at.expiry, at.now));
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
        expiresAt: expiresAt(row, at.expiry),
      });
      if (approved === undefined) {
        // Checked again as it is now: the re-read of the object may have taken it past its expiry.
        const latest = await load(pool, p, req.changeId);
        refuse(expiryRefusal(latest, at.expiry, now()));
        throw new FailedPreconditionError('the change was decided by someone else meanwhile; reload it');
      }
      return { change: toProto(approved, { expiry: at.expiry, now: now() }) };
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
      return { change: toProto(rejected, { expiry: await expiryHours(pool, p.workspaceId), now: now() }) };
    },

    async resolveChange(req, ctx) {
      const p = principalOf(ctx);
      checkMaySettle(p);
      const row = await load(pool, p, req.changeId);
      const settled = await resolveChange({ pool }, p, actorName(p), row, req);
      return { change: toProto(settled, { expiry: await expiryHours(pool, p.workspaceId), now: now() }) };
    },
  };
}

/** How long changes stay usable in the workspace: read by anyone, set by an admin in person. */
function settingsRpcs({ pool }: Deps): Rpcs<'getExpirySettings' | 'setExpirySettings'> {
  return {
    async getExpirySettings(_req, ctx) {
      const p = principalOf(ctx);
      const row = await currentExpirySetting(pool, p.workspaceId);
      return { settings: settingsProto(row, await expiryHours(pool, p.workspaceId)) };
    },

    async setExpirySettings(req, ctx) {
      const p = principalOf(ctx);
      checkMaySetExpiry(p);
      const hours = {
        preparedValidHours: req.preparedValidHours,
        approvalValidHours: req.approvalValidHours,
      };
      checkExpiryHours(hours);
      const row = await insertExpirySetting(pool, { workspaceId: p.workspaceId, by: actorName(p), hours });
      return { settings: settingsProto(row, hoursOf(row)) };
    },
  };
}

export function changesHandlers({
  pool,
  genericPlans,
  upstream,
  marketing,
  sleep = (ms) => new Promise((r) => setTimeout(r, ms)),
  now = () => new Date(),
}: HandlerDeps): ServiceImpl<typeof ChangesService> {
  const deps = { pool, genericPlans, upstream, marketing, sleep, now };
  return {
    ...planningHandlers(upstream),
    ...planningRpcs(deps),
    ...readingRpcs(deps),
    ...decidingRpcs(deps),
    ...applyingRpcs(deps),
    ...settingsRpcs(deps),
  };
}
