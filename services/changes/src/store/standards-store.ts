/** Queries on account standards and spend guards. Every query names the workspace. */
import type { Queryable } from '@adsmcp/runtime/db';
import { appendAuditEvent, atomically } from './audit-store.ts';

/** A standard's data as stored: the proto JSON form of StandardData (snake_case names). */
export type StandardDataJson = Record<string, unknown>;

export interface StandardRow {
  standard_id: string;
  workspace_id: string;
  account_id: string;
  name: string;
  kind: 'standard' | 'template';
  data: StandardDataJson;
  revision: number;
  created_at: Date;
  updated_at: Date;
  archived_at: Date | null;
}

export async function insertStandard(
  db: Queryable,
  s: Pick<StandardRow, 'standard_id' | 'workspace_id' | 'account_id' | 'name' | 'kind' | 'data'>,
): Promise<StandardRow> {
  const { rows } = await db.query<StandardRow>(
    `INSERT INTO account_standards (standard_id, workspace_id, account_id, name, kind, data)
     VALUES ($1, $2, $3, $4, $5, $6) RETURNING *`,
    [s.standard_id, s.workspace_id, s.account_id, s.name, s.kind, JSON.stringify(s.data)],
  );
  return rows[0] as StandardRow;
}

/**
 * Serializes the saves of an account's standards until the transaction ends, so a save judged
 * against the account's other standards cannot race another save it would contradict. The key is
 * the values as a JSON array, so no account can be spelt to look like another; a hash collision only
 * makes two saves wait.
 */
export async function lockAccountStandards(
  db: Queryable,
  workspaceId: string,
  accountId: string,
): Promise<void> {
  await db.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
    JSON.stringify(['account_standards', workspaceId, accountId]),
  ]);
}

/** The standard, locked for the rest of the transaction. */
export async function lockStandard(
  db: Queryable,
  workspaceId: string,
  standardId: string,
): Promise<StandardRow | undefined> {
  const { rows } = await db.query<StandardRow>(
    'SELECT * FROM account_standards WHERE workspace_id = $1 AND standard_id = $2 FOR UPDATE',
    [workspaceId, standardId],
  );
  return rows[0];
}

/** Replaces a standard's name and data at `revision`; undefined when it moved meanwhile. */
export async function updateStandard(
  db: Queryable,
  u: { workspaceId: string; standardId: string; revision: number; name: string; data: StandardDataJson },
): Promise<StandardRow | undefined> {
  const { rows } = await db.query<StandardRow>(
    `UPDATE account_standards SET name = $4, data = $5, revision = revision + 1, updated_at = now()
      WHERE workspace_id = $1 AND standard_id = $2 AND revision = $3 AND archived_at IS NULL RETURNING *`,
    [u.workspaceId, u.standardId, u.revision, u.name, JSON.stringify(u.data)],
  );
  return rows[0];
}

/** Archives a standard at `revision`; undefined when it moved meanwhile. */
export async function archiveStandard(
  db: Queryable,
  a: { workspaceId: string; standardId: string; revision: number },
): Promise<StandardRow | undefined> {
  const { rows } = await db.query<StandardRow>(
    `UPDATE account_standards SET archived_at = now(), revision = revision + 1, updated_at = now()
      WHERE workspace_id = $1 AND standard_id = $2 AND revision = $3 AND archived_at IS NULL RETURNING *`,
    [a.workspaceId, a.standardId, a.revision],
  );
  return rows[0];
}

/** A page of the account's standards and templates that are not archived, most recently updated first. */
export async function listStandards(
  db: Queryable,
  f: { workspaceId: string; accountId: string; limit: number; offset: number },
): Promise<StandardRow[]> {
  const { rows } = await db.query<StandardRow>(
    `SELECT * FROM account_standards WHERE workspace_id = $1 AND account_id = $2 AND archived_at IS NULL
      ORDER BY updated_at DESC, standard_id LIMIT $3 OFFSET $4`,
    [f.workspaceId, f.accountId, f.limit, f.offset],
  );
  return rows;
}

export async function countStandards(db: Queryable, workspaceId: string, accountId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM account_standards
      WHERE workspace_id = $1 AND account_id = $2 AND archived_at IS NULL`,
    [workspaceId, accountId],
  );
  return rows[0]?.n ?? 0;
}

/** The active standards of account $2 of workspace $1 (account_standards as `s`). */
const ACTIVE_STANDARDS_OF = `s.workspace_id = $1 AND s.account_id = $2 AND s.kind = 'standard' AND s.archived_at IS NULL`;

/** The columns of a spend guard as SpendGuardRow reads them (account_spend_guards as `g`). */
const SPEND_GUARD_COLUMNS =
  'g.account_id, g.max_daily_budget_micros::text, g.max_bid_micros::text, g.updated_by, g.updated_at';

/** Every active standard (not a template, not archived) of the account, oldest first: what a change is checked against. */
export async function activeStandards(
  db: Queryable,
  workspaceId: string,
  accountId: string,
): Promise<StandardRow[]> {
  const { rows } = await db.query<StandardRow>(
    `SELECT * FROM account_standards s WHERE ${ACTIVE_STANDARDS_OF} ORDER BY created_at, standard_id`,
    [workspaceId, accountId],
  );
  return rows;
}

/** What an operation is checked against: the account's active standards, oldest first, and its spend guard. */
export interface AccountRules {
  standards: Pick<StandardRow, 'standard_id' | 'name' | 'revision' | 'data'>[];
  guard: SpendGuardRow | undefined;
}

/**
 * The account's active standards (as activeStandards) and its spend guard (as findSpendGuard) in
 * one statement: every check of an operation reads both, a prepare and each apply.
 */
export async function accountRules(
  db: Queryable,
  workspaceId: string,
  accountId: string,
): Promise<AccountRules> {
  const { rows } = await db.query<
    { standards: AccountRules['standards'] } & { [K in keyof SpendGuardRow]: SpendGuardRow[K] | null }
  >({
    // Named: read once per apply, so each connection parses and plans it once.
    name: 'changes-account-rules',
    text: `SELECT (SELECT coalesce(json_agg(json_build_object('standard_id', s.standard_id, 'name', s.name,
                        'revision', s.revision, 'data', s.data) ORDER BY s.created_at, s.standard_id), '[]'::json)
               FROM account_standards s WHERE ${ACTIVE_STANDARDS_OF}) AS standards,
            ${SPEND_GUARD_COLUMNS}
       FROM (SELECT) one LEFT JOIN account_spend_guards g ON g.workspace_id = $1 AND g.account_id = $2`,
    values: [workspaceId, accountId],
  });
  const row = rows[0];
  if (row === undefined) return { standards: [], guard: undefined };
  const { standards, account_id, updated_by, updated_at, max_daily_budget_micros, max_bid_micros } = row;
  const guard =
    account_id === null || updated_by === null || updated_at === null
      ? undefined
      : { account_id, updated_by, updated_at, max_daily_budget_micros, max_bid_micros };
  return { standards, guard };
}

export interface SpendGuardRow {
  account_id: string;
  /** Micros as decimal text (bigint), or null for no cap. */
  max_daily_budget_micros: string | null;
  max_bid_micros: string | null;
  updated_by: string;
  updated_at: Date;
}

export async function findSpendGuard(
  db: Queryable,
  workspaceId: string,
  accountId: string,
): Promise<SpendGuardRow | undefined> {
  const { rows } = await db.query<SpendGuardRow>(
    `SELECT ${SPEND_GUARD_COLUMNS} FROM account_spend_guards g WHERE g.workspace_id = $1 AND g.account_id = $2`,
    [workspaceId, accountId],
  );
  return rows[0];
}

export async function upsertSpendGuard(
  db: Queryable,
  g: {
    workspaceId: string;
    accountId: string;
    maxDailyBudgetMicros: bigint | null;
    maxBidMicros: bigint | null;
    by: string;
  },
): Promise<SpendGuardRow> {
  return atomically(db, async (tx) => {
    const { rows } = await tx.query<SpendGuardRow>(
      `INSERT INTO account_spend_guards (workspace_id, account_id, max_daily_budget_micros, max_bid_micros, updated_by)
       VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (workspace_id, account_id) DO UPDATE
         SET max_daily_budget_micros = $3, max_bid_micros = $4, updated_by = $5, updated_at = now()
       RETURNING account_id, max_daily_budget_micros::text, max_bid_micros::text, updated_by, updated_at`,
      [
        g.workspaceId,
        g.accountId,
        g.maxDailyBudgetMicros?.toString() ?? null,
        g.maxBidMicros?.toString() ?? null,
        g.by,
      ],
    );
    const row = rows[0] as SpendGuardRow;
    await appendAuditEvent(tx, {
      workspaceId: g.workspaceId,
      actor: g.by,
      kind: 'spend_guard.set',
      subject: g.accountId,
      details: {
        account_id: g.accountId,
        max_daily_budget_micros: row.max_daily_budget_micros,
        max_bid_micros: row.max_bid_micros,
      },
    });
    return row;
  });
}

export interface PendingStandardChangeRow {
  pending_id: string;
  workspace_id: string;
  account_id: string;
  standard_id: string;
  action: 'save' | 'archive';
  base_revision: number;
  proposed_name: string | null;
  proposed_data: StandardDataJson | null;
  loosenings: string[];
  requested_by: string;
  requested_at: Date;
  status: 'pending' | 'confirmed' | 'rejected';
  decided_by: string | null;
  decided_at: Date | null;
  /** The standard's name as it is in force (joined). */
  standard_name: string;
}

const PENDING_SELECT = `SELECT p.*, s.name AS standard_name FROM pending_standard_changes p
  JOIN account_standards s ON s.standard_id = p.standard_id AND s.workspace_id = p.workspace_id`;

export async function insertPendingStandardChange(
  db: Queryable,
  p: Pick<
    PendingStandardChangeRow,
    | 'pending_id'
    | 'workspace_id'
    | 'account_id'
    | 'standard_id'
    | 'action'
    | 'base_revision'
    | 'proposed_name'
    | 'proposed_data'
    | 'loosenings'
    | 'requested_by'
  >,
): Promise<PendingStandardChangeRow> {
  await db.query(
    `INSERT INTO pending_standard_changes (pending_id, workspace_id, account_id, standard_id, action,
       base_revision, proposed_name, proposed_data, loosenings, requested_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    [
      p.pending_id,
      p.workspace_id,
      p.account_id,
      p.standard_id,
      p.action,
      p.base_revision,
      p.proposed_name,
      p.proposed_data === null ? null : JSON.stringify(p.proposed_data),
      JSON.stringify(p.loosenings),
      p.requested_by,
    ],
  );
  const row = await findPendingStandardChange(db, p.workspace_id, p.pending_id);
  if (row === undefined) throw new Error('a pending standard change just stored is missing');
  return row;
}

/** The pending standard change, locked for the rest of the transaction when `lock`. */
export async function findPendingStandardChange(
  db: Queryable,
  workspaceId: string,
  pendingId: string,
  lock = false,
): Promise<PendingStandardChangeRow | undefined> {
  const { rows } = await db.query<PendingStandardChangeRow>(
    `${PENDING_SELECT} WHERE p.workspace_id = $1 AND p.pending_id = $2${lock ? ' FOR UPDATE OF p' : ''}`,
    [workspaceId, pendingId],
  );
  return rows[0];
}

/** The pending standard changes waiting for a person, of one account or (no account) all, oldest first. */
export async function listPendingStandardChanges(
  db: Queryable,
  workspaceId: string,
  accountId?: string,
): Promise<PendingStandardChangeRow[]> {
  const { rows } = await db.query<PendingStandardChangeRow>(
    `${PENDING_SELECT} WHERE p.workspace_id = $1 AND p.status = 'pending' AND ($2::uuid IS NULL OR p.account_id = $2)
      ORDER BY p.requested_at, p.pending_id LIMIT 200`,
    [workspaceId, accountId ?? null],
  );
  return rows;
}

/** Records a person's decision on a pending standard change that is still pending. */
export async function decidePendingStandardChange(
  db: Queryable,
  d: { workspaceId: string; pendingId: string; status: 'confirmed' | 'rejected'; by: string },
): Promise<void> {
  const { rowCount } = await db.query(
    `UPDATE pending_standard_changes SET status = $3, decided_by = $4, decided_at = now()
      WHERE workspace_id = $1 AND pending_id = $2 AND status = 'pending'`,
    [d.workspaceId, d.pendingId, d.status, d.by],
  );
  if (rowCount !== 1) throw new Error('a locked pending standard change was decided meanwhile');
}

/** The standards (any kind, archived too) of the workspace with these ids. */
export async function standardsByIds(
  db: Queryable,
  workspaceId: string,
  ids: readonly string[],
): Promise<StandardRow[]> {
  const { rows } = await db.query<StandardRow>(
    'SELECT * FROM account_standards WHERE workspace_id = $1 AND standard_id = ANY($2::uuid[])',
    [workspaceId, ids],
  );
  return rows;
}

/** The account's active standards (kind standard) created after `since`, oldest first. */
export async function standardsCreatedSince(
  db: Queryable,
  workspaceId: string,
  accountId: string,
  since: Date,
): Promise<StandardRow[]> {
  const { rows } = await db.query<StandardRow>(
    `SELECT * FROM account_standards WHERE workspace_id = $1 AND account_id = $2 AND kind = 'standard'
       AND archived_at IS NULL AND created_at > $3 ORDER BY created_at, standard_id`,
    [workspaceId, accountId, since],
  );
  return rows;
}

/** What a change recorded of the standards it was checked against, and when it was prepared. */
export async function changeStandardsChecked(
  db: Queryable,
  workspaceId: string,
  changeId: string,
): Promise<
  | {
      account_id: string;
      prepared_at: Date;
      standards_checked: { standard_id: string; name: string; revision: number }[];
    }
  | undefined
> {
  const { rows } = await db.query<{
    account_id: string;
    prepared_at: Date;
    standards_checked: { standard_id: string; name: string; revision: number }[];
  }>(
    'SELECT account_id, prepared_at, standards_checked FROM changes WHERE workspace_id = $1 AND change_id = $2',
    [workspaceId, changeId],
  );
  return rows[0];
}
