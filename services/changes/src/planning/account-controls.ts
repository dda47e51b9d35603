/**
 * The account controls held against a change: a freeze refuses it at prepare and at the request to
 * apply it (and holds an apply already queued: apply-worker.ts); the spend envelope refuses at
 * prepare, at approval and at apply, where the change's use is reserved in the ledger under the
 * account's controls row, so two applies at once cannot together pass what is left.
 */
import { inTransaction, type Pool, type Queryable } from '@adsmcp/runtime/db';
import { FailedPreconditionError } from '@adsmcp/runtime/errors';
import { isRecord } from '@adsmcp/runtime/json';
import type { Principal } from '@adsmcp/runtime/principal';
import { type EnvelopeUse, envelopeRefusal, envelopeUse } from '../domain/spend-envelope.ts';
import {
  envelopeOf,
  type FreezeRow,
  findControls,
  findUse,
  freezeInForce,
  reserveUse,
  touchUse,
  usedMicros,
} from '../store/controls-store.ts';

/** A freeze in words: what is frozen, since when, by whom, and why. */
export function freezeText(f: FreezeRow): string {
  const what = f.account_id === null ? 'the workspace is frozen' : `ad account ${f.account_id} is frozen`;
  return `${what} since ${f.frozen_at.toISOString()} by ${f.frozen_by}: ${f.reason}`;
}

/** Refuses (failed_precondition) any write to the account while it or its workspace is frozen. */
export async function refuseFrozen(db: Queryable, workspaceId: string, accountId: string): Promise<void> {
  const frozen = await freezeInForce(db, workspaceId, accountId);
  if (frozen !== undefined)
    throw new FailedPreconditionError(
      `${freezeText(frozen)}; nothing may be prepared or applied until an admin unfreezes it`,
    );
}

function parsed(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    return undefined;
  }
}

/** What a recorded change uses of its account's envelope. */
export function useOf(change: { body_json: string; target_before_json: string }): EnvelopeUse {
  const before = parsed(change.target_before_json);
  return envelopeUse(parsed(change.body_json), isRecord(before) ? before : undefined);
}

/**
 * Why the account's envelope refuses `use` now (what the last 24 hours used, `exceptChangeId`'s
 * own reservation left out), or undefined when it fits.
 */
export async function envelopeRefusalNow(
  db: Queryable,
  s: { workspaceId: string; accountId: string; currency: string; exceptChangeId?: string },
  use: EnvelopeUse,
  now: Date = new Date(),
): Promise<string | undefined> {
  if (use.micros <= 0n) return undefined;
  const controls = await findControls(db, s.workspaceId, s.accountId);
  const used = await usedMicros(db, { ...s, now });
  return envelopeRefusal(s.accountId, envelopeOf(controls), use, used, s.currency);
}

/**
 * enforceControls refuses a change being planned: while its account or workspace is frozen (but
 * for the optimizer's worker recording a proposal a person approved, which the apply worker holds
 * like any queued apply), and when what it raises daily budgets by does not fit the envelope.
 */
export async function enforceControls(
  db: Queryable,
  p: Principal,
  account: { accountId: string; currency: string },
  body: unknown,
  live: unknown,
): Promise<void> {
  if (p.via !== 'worker') await refuseFrozen(db, p.workspaceId, account.accountId);
  const use = envelopeUse(body, isRecord(live) ? live : undefined);
  const refusal = await envelopeRefusalNow(
    db,
    { workspaceId: p.workspaceId, accountId: account.accountId, currency: account.currency },
    use,
  );
  if (refusal !== undefined) throw new FailedPreconditionError(refusal);
}

/**
 * reserveEnvelope records what `change` uses of its account's envelope, in one transaction that
 * holds the account's controls row while it reads what is left, so concurrent applies reserve one
 * after the other and cannot together exceed it. It returns why the envelope refuses the change
 * (nothing reserved), or undefined. A change whose use is already reserved (an apply tried again)
 * keeps it, counted from this attempt (touchUse).
 */
export function reserveEnvelope(
  pool: Pool,
  change: {
    workspace_id: string;
    account_id: string;
    change_id: string;
    body_json: string;
    target_before_json: string;
  },
  currency: string,
  now: Date,
): Promise<string | undefined> {
  const use = useOf(change);
  if (use.micros <= 0n) return Promise.resolve(undefined);
  return inTransaction(pool, async (tx) => {
    const s = { workspaceId: change.workspace_id, accountId: change.account_id };
    const controls = await findControls(tx, s.workspaceId, s.accountId, true);
    const known = await findUse(tx, s.workspaceId, change.change_id);
    if (known?.state === 'reserved') {
      await touchUse(tx, { workspaceId: s.workspaceId, changeId: change.change_id, now });
      return undefined;
    }
    if (known !== undefined && known.state !== 'released') return undefined;
    const used = await usedMicros(tx, { ...s, now });
    const refusal = envelopeRefusal(s.accountId, envelopeOf(controls), use, used, currency);
    if (refusal !== undefined) return refusal;
    await reserveUse(tx, { ...s, changeId: change.change_id, micros: use.micros, now });
    return undefined;
  });
}
