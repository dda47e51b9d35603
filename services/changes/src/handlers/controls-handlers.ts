/** ControlsService: each account's spend envelope, and freezes of an account's or the workspace's writes. */
import type {
  AccountControlsSchema,
  ControlsService,
  FreezeSchema,
  SpendEnvelopeSchema,
} from '@adsmcp/proto/changes/v1/controls_pb';
import { deterministicId } from '@adsmcp/runtime/bus/outbox';
import { principalOf } from '@adsmcp/runtime/connect-server';
import { inTransaction, type Pool, type Queryable } from '@adsmcp/runtime/db';
import { FailedPreconditionError, InvalidArgumentError, NotFoundError } from '@adsmcp/runtime/errors';
import { isUuid } from '@adsmcp/runtime/ids';
import { actorName, type Principal } from '@adsmcp/runtime/principal';
import { blankRefusal, hiddenCharacter, textLength } from '@adsmcp/runtime/text';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { envelopeLeft, envelopeRefusal } from '../domain/spend-envelope.ts';
import { freezeText, useOf } from '../planning/account-controls.ts';
import { readableAccount, type Upstream } from '../planning/platform-reads.ts';
import { appendAuditEvent } from '../store/audit-store.ts';
import { findChange } from '../store/change-store.ts';
import {
  type ControlsRow,
  envelopeOf,
  type FreezeRow,
  findControls,
  freezeInForce,
  freezesInForce,
  heldChanges,
  insertFreeze,
  liftFreeze,
  upsertEnvelope,
  usedMicros,
} from '../store/controls-store.ts';
import { enqueueApply } from '../work/apply-message.ts';

/** The longest freeze reason, in characters. */
const REASON_MAX = 500;

/** `value` as PostgreSQL's uuid gives it back (lower case), or refused naming `field`. */
function requireUuid(field: string, value: string): string {
  if (!isUuid(value))
    throw new InvalidArgumentError(`\`${field}\` must be a UUID (got ${JSON.stringify(value)})`);
  return value.toLowerCase();
}

/** The account a freeze request names (a UUID), or null for the workspace (empty). */
function scopeOf(accountId: string): string | null {
  return accountId === '' ? null : requireUuid('account_id', accountId);
}

function checkReason(reason: string): string {
  const text = reason.trim();
  const blank = blankRefusal('`reason`', text);
  if (blank !== undefined) throw new InvalidArgumentError(`${blank} (1 to ${REASON_MAX} characters)`);
  if (textLength(text) > REASON_MAX)
    throw new InvalidArgumentError(
      `\`reason\` must be 1 to ${REASON_MAX} characters (got ${textLength(text)})`,
    );
  const hidden = hiddenCharacter(text);
  if (hidden !== undefined)
    throw new InvalidArgumentError(
      `\`reason\` must not contain hidden or control characters (${hidden}), so what people read is what was written`,
    );
  return text;
}

export function freezeMessage(f: FreezeRow): MessageInitShape<typeof FreezeSchema> {
  return {
    freezeId: f.freeze_id,
    accountId: f.account_id ?? '',
    reason: f.reason,
    frozenBy: f.frozen_by,
    frozenAt: f.frozen_at.toISOString(),
    unfrozenBy: f.unfrozen_by ?? '',
    unfrozenAt: f.unfrozen_at?.toISOString() ?? '',
  };
}

async function envelopeMessage(
  db: Queryable,
  workspaceId: string,
  accountId: string,
  row: ControlsRow | undefined,
  now: Date,
): Promise<MessageInitShape<typeof SpendEnvelopeSchema>> {
  const envelope = envelopeOf(row);
  const used = await usedMicros(db, { workspaceId, accountId, now });
  return {
    accountId,
    envelopeMicros: envelope.envelopeMicros ?? undefined,
    failClosed: envelope.failClosed,
    updatedBy: row?.updated_by ?? '',
    updatedAt: row?.updated_at.toISOString() ?? '',
    usedMicros: used,
    leftMicros: envelopeLeft(envelope, used) ?? undefined,
  };
}

async function controlsMessage(
  db: Queryable,
  workspaceId: string,
  accountId: string,
  now: Date,
): Promise<MessageInitShape<typeof AccountControlsSchema>> {
  const [row, frozen] = await Promise.all([
    findControls(db, workspaceId, accountId),
    freezeInForce(db, workspaceId, accountId),
  ]);
  return {
    accountId,
    envelope: await envelopeMessage(db, workspaceId, accountId, row, now),
    freeze: frozen === undefined ? undefined : freezeMessage(frozen),
  };
}

/** A freeze or its lift in the workspace's audit log (subject: the account, or empty for the workspace). */
function auditFreeze(tx: Queryable, p: Principal, kind: string, f: FreezeRow) {
  return appendAuditEvent(tx, {
    workspaceId: p.workspaceId,
    actor: actorName(p),
    kind,
    subject: f.account_id ?? '',
    details: {
      freeze_id: f.freeze_id,
      account_id: f.account_id,
      scope: f.account_id === null ? 'workspace' : 'account',
      reason: f.reason,
      frozen_by: f.frozen_by,
      frozen_at: f.frozen_at.toISOString(),
    },
  });
}

// Each RPC's function takes its request and answer types from the generated service, so a moved
// function is checked exactly as its table entry was.
type Impl = ServiceImpl<typeof ControlsService>;
type Req<K extends keyof Impl> = Parameters<Impl[K]>[0];
type Res<K extends keyof Impl> = Promise<Awaited<ReturnType<Impl[K]>>>;

/** The factory's dependencies, handed whole to each RPC's function. */
interface ControlsDeps {
  pool: Pool;
  upstream: Upstream;
  now: () => Date;
}

export function controlsHandlers(
  pool: Pool,
  upstream: Upstream,
  now: () => Date = () => new Date(),
): ServiceImpl<typeof ControlsService> {
  const d: ControlsDeps = { pool, upstream, now };
  return {
    getAccountControls: (req, ctx) => getAccountControls(d, req, ctx),
    setSpendEnvelope: (req, ctx) => setSpendEnvelope(d, req, ctx),
    freeze: (req, ctx) => freeze(d, req, ctx),
    unfreeze: (req, ctx) => unfreeze(d, req, ctx),
    listFreezes: (req, ctx) => listFreezes(d, req, ctx),
    getEnvelopeUse: (req, ctx) => getEnvelopeUse(d, req, ctx),
  };
}

async function getAccountControls(
  deps: ControlsDeps,
  req: Req<'getAccountControls'>,
  ctx: HandlerContext,
): Res<'getAccountControls'> {
  const p = principalOf(ctx);
  const accountId = requireUuid('account_id', req.accountId);
  return { controls: await controlsMessage(deps.pool, p.workspaceId, accountId, deps.now()) };
}

async function setSpendEnvelope(
  deps: ControlsDeps,
  req: Req<'setSpendEnvelope'>,
  ctx: HandlerContext,
): Res<'setSpendEnvelope'> {
  const p = principalOf(ctx);
  const accountId = requireUuid('account_id', req.accountId);
  const envelope = req.envelopeMicros ?? null;
  if (envelope !== null && envelope < 0n)
    throw new InvalidArgumentError(
      `\`envelope_micros\` must be 0 or more micros of the account currency when set (got ${envelope})`,
    );
  // The account must be one of the workspace's (the upstream-proxy answers NotFound otherwise).
  await readableAccount(deps.upstream, p, accountId);
  // The setting and its audit event commit together.
  await inTransaction(deps.pool, async (tx) => {
    const before = await findControls(tx, p.workspaceId, accountId, true);
    await upsertEnvelope(tx, {
      workspaceId: p.workspaceId,
      accountId,
      envelopeMicros: envelope,
      failClosed: req.failClosed,
      by: actorName(p, 'channel'),
    });
    await appendAuditEvent(tx, {
      workspaceId: p.workspaceId,
      actor: actorName(p),
      kind: 'account.spend_envelope_set',
      subject: accountId,
      details: {
        account_id: accountId,
        envelope_micros: envelope?.toString() ?? null,
        fail_closed: req.failClosed,
        previous_envelope_micros: before?.envelope_micros ?? null,
        previous_fail_closed: before?.fail_closed ?? false,
      },
    });
  });
  return { controls: await controlsMessage(deps.pool, p.workspaceId, accountId, deps.now()) };
}

async function freeze(deps: ControlsDeps, req: Req<'freeze'>, ctx: HandlerContext): Res<'freeze'> {
  const p = principalOf(ctx);
  const accountId = scopeOf(req.accountId);
  const reason = checkReason(req.reason);
  if (accountId !== null) await readableAccount(deps.upstream, p, accountId);
  const row = await inTransaction(deps.pool, async (tx) => {
    const made = await insertFreeze(tx, {
      workspaceId: p.workspaceId,
      accountId,
      reason,
      by: actorName(p, 'channel'),
    });
    if (made !== undefined) await auditFreeze(tx, p, 'account.frozen', made);
    return made;
  });
  if (row === undefined) {
    const current = await freezeInForce(deps.pool, p.workspaceId, accountId);
    throw new FailedPreconditionError(
      current === undefined
        ? 'it was frozen and unfrozen meanwhile; try again'
        : `${freezeText(current)} already`,
    );
  }
  return { freeze: freezeMessage(row) };
}

async function unfreeze(deps: ControlsDeps, req: Req<'unfreeze'>, ctx: HandlerContext): Res<'unfreeze'> {
  const p = principalOf(ctx);
  const accountId = scopeOf(req.accountId);
  // The lift and the held applies queued again commit together: none is left waiting.
  const { lifted, resumed } = await inTransaction(deps.pool, async (tx) => {
    const lifted = await liftFreeze(tx, {
      workspaceId: p.workspaceId,
      accountId,
      by: actorName(p, 'channel'),
    });
    if (lifted === undefined) return { lifted, resumed: 0 };
    await auditFreeze(tx, p, 'account.unfrozen', lifted);
    // A change whose account is still frozen (by the workspace, or by its own freeze) waits on.
    const held = [];
    for (const c of await heldChanges(tx, p.workspaceId, accountId)) {
      if ((await freezeInForce(tx, p.workspaceId, c.account_id)) !== undefined) continue;
      await enqueueApply(tx, c, deterministicId('apply', c.change_id, 'unfrozen', lifted.freeze_id));
      held.push(c);
    }
    return { lifted, resumed: held.length };
  });
  if (lifted === undefined)
    throw new NotFoundError(
      accountId === null
        ? 'the workspace is not frozen'
        : `ad account ${accountId} has no freeze of its own (a workspace freeze is lifted with an empty account_id)`,
    );
  return { freeze: freezeMessage(lifted), resumed };
}

async function listFreezes(
  deps: ControlsDeps,
  _req: Req<'listFreezes'>,
  ctx: HandlerContext,
): Res<'listFreezes'> {
  const p = principalOf(ctx);
  return { freezes: (await freezesInForce(deps.pool, p.workspaceId)).map(freezeMessage) };
}

async function getEnvelopeUse(
  deps: ControlsDeps,
  req: Req<'getEnvelopeUse'>,
  ctx: HandlerContext,
): Res<'getEnvelopeUse'> {
  const p = principalOf(ctx);
  const changeId = requireUuid('change_id', req.changeId);
  const change = await findChange(deps.pool, p.workspaceId, changeId);
  if (change === undefined) throw new NotFoundError(`no change ${changeId} in this workspace`);
  const at = deps.now();
  const row = await findControls(deps.pool, p.workspaceId, change.account_id);
  const envelope = await envelopeMessage(deps.pool, p.workspaceId, change.account_id, row, at);
  const use = useOf(change);
  // A change already reserved counts in `used`: it is judged without its own reservation.
  const others = await usedMicros(deps.pool, {
    workspaceId: p.workspaceId,
    accountId: change.account_id,
    now: at,
    exceptChangeId: change.change_id,
  });
  return {
    envelope,
    useMicros: use.micros,
    parts: use.parts,
    refusal: envelopeRefusal(change.account_id, envelopeOf(row), use, others) ?? '',
  };
}
