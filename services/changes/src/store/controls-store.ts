/**
 * Account controls: each account's spend envelope with its ledger of uses, and the freezes of an
 * account's or the whole workspace's writes.
 */
import { randomUUID } from 'node:crypto';
import type { Queryable } from '@adsmcp/runtime/db';
import { ENVELOPE_WINDOW_HOURS, type Envelope } from '../domain/spend-envelope.ts';

export interface ControlsRow {
  workspace_id: string;
  account_id: string;
  /** bigint as text. */
  envelope_micros: string | null;
  fail_closed: boolean;
  updated_by: string;
  updated_at: Date;
}

export interface FreezeRow {
  freeze_id: string;
  workspace_id: string;
  account_id: string | null;
  reason: string;
  frozen_by: string;
  frozen_at: Date;
  unfrozen_by: string | null;
  unfrozen_at: Date | null;
}

/** The envelope as the rules read it (none set: no envelope, not fail closed). */
export function envelopeOf(row: ControlsRow | undefined): Envelope {
  return {
    envelopeMicros: row === undefined || row.envelope_micros === null ? null : BigInt(row.envelope_micros),
    failClosed: row?.fail_closed ?? false,
  };
}

/** The account's controls row; `lock` holds it until the transaction ends (reservations). */
export async function findControls(
  db: Queryable,
  workspaceId: string,
  accountId: string,
  lock = false,
): Promise<ControlsRow | undefined> {
  const { rows } = await db.query<ControlsRow>(
    `SELECT workspace_id, account_id, envelope_micros::text, fail_closed, updated_by, updated_at
       FROM account_controls WHERE workspace_id = $1 AND account_id = $2${lock ? ' FOR UPDATE' : ''}`,
    [workspaceId, accountId],
  );
  return rows[0];
}

export async function upsertEnvelope(
  db: Queryable,
  s: {
    workspaceId: string;
    accountId: string;
    envelopeMicros: bigint | null;
    failClosed: boolean;
    by: string;
  },
): Promise<ControlsRow> {
  const { rows } = await db.query<ControlsRow>(
    `INSERT INTO account_controls (workspace_id, account_id, envelope_micros, fail_closed, updated_by)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (workspace_id, account_id) DO UPDATE
       SET envelope_micros = EXCLUDED.envelope_micros, fail_closed = EXCLUDED.fail_closed,
           updated_by = EXCLUDED.updated_by, updated_at = now()
     RETURNING workspace_id, account_id, envelope_micros::text, fail_closed, updated_by, updated_at`,
    [s.workspaceId, s.accountId, s.envelopeMicros?.toString() ?? null, s.failClosed, s.by],
  );
  return rows[0] as ControlsRow;
}

/**
 * What the account's envelope has used in the window ending at `now`: the uses reserved or applied
 * since, not counting `exceptChangeId` (a change's own reservation, when it is re-checked).
 */
export async function usedMicros(
  db: Queryable,
  s: { workspaceId: string; accountId: string; now: Date; exceptChangeId?: string },
): Promise<bigint> {
  const { rows } = await db.query<{ used: string }>(
    `SELECT COALESCE(sum(micros), 0)::text AS used FROM envelope_uses
      WHERE workspace_id = $1 AND account_id = $2 AND state <> 'released'
        AND reserved_at > $3::timestamptz - make_interval(hours => $4)
        AND ($5::uuid IS NULL OR change_id <> $5)`,
    [s.workspaceId, s.accountId, s.now, ENVELOPE_WINDOW_HOURS, s.exceptChangeId ?? null],
  );
  return BigInt(rows[0]?.used ?? '0');
}

/** The change's use already in the ledger (reserved or applied), if any. */
export async function findUse(
  db: Queryable,
  workspaceId: string,
  changeId: string,
): Promise<{ micros: string; state: string } | undefined> {
  const { rows } = await db.query<{ micros: string; state: string }>(
    `SELECT micros::text, state FROM envelope_uses WHERE workspace_id = $1 AND change_id = $2`,
    [workspaceId, changeId],
  );
  return rows[0];
}

/** Records the change's use as reserved at `now` (again, when an earlier reservation was released). */
export async function reserveUse(
  db: Queryable,
  u: { workspaceId: string; accountId: string; changeId: string; micros: bigint; now: Date },
): Promise<void> {
  await db.query(
    `INSERT INTO envelope_uses (workspace_id, change_id, account_id, micros, state, reserved_at)
     VALUES ($1, $2, $3, $4, 'reserved', $5)
     ON CONFLICT (workspace_id, change_id) DO UPDATE
       SET micros = EXCLUDED.micros, state = 'reserved', reserved_at = EXCLUDED.reserved_at, settled_at = NULL`,
    [u.workspaceId, u.changeId, u.accountId, u.micros.toString(), u.now],
  );
}

/**
 * Moves a reserved use's start to `now`: an apply tried again, or sent again, may reach the platform
 * now, so its use counts in the window from this attempt, not from its first reservation.
 */
export async function touchUse(
  db: Queryable,
  u: { workspaceId: string; changeId: string; now: Date },
): Promise<void> {
  await db.query(
    `UPDATE envelope_uses SET reserved_at = greatest(reserved_at, $3)
      WHERE workspace_id = $1 AND change_id = $2 AND state = 'reserved'`,
    [u.workspaceId, u.changeId, u.now],
  );
}

/** Settles a reserved use: `applied` keeps it in the window, `released` gives it back. */
export async function settleUse(
  db: Queryable,
  s: { workspaceId: string; changeId: string; state: 'applied' | 'released' },
): Promise<void> {
  await db.query(
    `UPDATE envelope_uses SET state = $3, settled_at = now()
      WHERE workspace_id = $1 AND change_id = $2 AND state = 'reserved'`,
    [s.workspaceId, s.changeId, s.state],
  );
}

/**
 * The statement of the freeze in force for an account, on `freezes` as `f`: its own, else the
 * workspace's. `workspace` and `account` are SQL expressions (an account that is null: only the
 * workspace's), so that a statement reading an account's change can join it (LATERAL).
 */
export const freezeInForceSql = (workspace: string, account: string) =>
  `SELECT f.* FROM freezes f
    WHERE f.workspace_id = ${workspace} AND f.unfrozen_at IS NULL AND (f.account_id IS NULL OR f.account_id = ${account})
    ORDER BY f.account_id NULLS LAST LIMIT 1`;

/** The freeze in force for the account: its own, else the workspace's (`accountId` null: only that). */
export async function freezeInForce(
  db: Queryable,
  workspaceId: string,
  accountId: string | null,
): Promise<FreezeRow | undefined> {
  const { rows } = await db.query<FreezeRow>(freezeInForceSql('$1', '$2::uuid'), [workspaceId, accountId]);
  return rows[0];
}

/** The freezes in force in the workspace, the workspace's first, then by when. */
export async function freezesInForce(db: Queryable, workspaceId: string): Promise<FreezeRow[]> {
  const { rows } = await db.query<FreezeRow>(
    `SELECT * FROM freezes WHERE workspace_id = $1 AND unfrozen_at IS NULL
      ORDER BY account_id NULLS FIRST, frozen_at`,
    [workspaceId],
  );
  return rows;
}

/** Freezes the account (or the workspace, `accountId` null); undefined when it already is. */
export async function insertFreeze(
  db: Queryable,
  f: { workspaceId: string; accountId: string | null; reason: string; by: string },
): Promise<FreezeRow | undefined> {
  const { rows } = await db.query<FreezeRow>(
    `INSERT INTO freezes (freeze_id, workspace_id, account_id, reason, frozen_by)
     VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING *`,
    [randomUUID(), f.workspaceId, f.accountId, f.reason, f.by],
  );
  return rows[0];
}

/** Lifts the freeze of the account (or the workspace's); undefined when there was none. */
export async function liftFreeze(
  db: Queryable,
  f: { workspaceId: string; accountId: string | null; by: string },
): Promise<FreezeRow | undefined> {
  const { rows } = await db.query<FreezeRow>(
    `UPDATE freezes SET unfrozen_by = $3, unfrozen_at = now()
      WHERE workspace_id = $1 AND unfrozen_at IS NULL
        AND account_id IS NOT DISTINCT FROM $2::uuid
      RETURNING *`,
    [f.workspaceId, f.accountId, f.by],
  );
  return rows[0];
}

/**
 * The changes held by a freeze just lifted: `applying`, never sent, of the account (or of every
 * account of the workspace, `accountId` null).
 */
export async function heldChanges(
  db: Queryable,
  workspaceId: string,
  accountId: string | null,
): Promise<{ change_id: string; workspace_id: string; account_id: string }[]> {
  const { rows } = await db.query<{ change_id: string; workspace_id: string; account_id: string }>(
    `SELECT change_id, workspace_id, account_id FROM changes
      WHERE workspace_id = $1 AND status = 'applying' AND sent_at IS NULL
        AND ($2::uuid IS NULL OR account_id = $2::uuid)`,
    [workspaceId, accountId],
  );
  return rows;
}
