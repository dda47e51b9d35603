/** Queries on the links between a change and the changes that revert it (migration 0013). */
import type { Queryable } from '@adsmcp/runtime/db';
import type { ChangeRow } from './change-store.ts';

/** The link columns every change row carries (SELECT * reads them). */
export interface RevertLinks {
  reverts_change_id: string | null;
  reverted_by: string[];
}

/** The links of a row read with SELECT *; a row read before migration 0013 has none. */
export function revertLinksOf(row: ChangeRow): RevertLinks {
  const r = row as ChangeRow & Partial<RevertLinks>;
  return { reverts_change_id: r.reverts_change_id ?? null, reverted_by: r.reverted_by ?? [] };
}

/** The changes recorded as reverts of `changeId`, oldest first. */
export async function revertsOf(db: Queryable, workspaceId: string, changeId: string): Promise<ChangeRow[]> {
  const { rows } = await db.query<ChangeRow>(
    `SELECT * FROM changes WHERE workspace_id = $1 AND reverts_change_id = $2 ORDER BY prepared_at, change_id`,
    [workspaceId, changeId],
  );
  return rows;
}

/**
 * Links the revert `revertId` to the change it reverts, both ways, in the caller's transaction;
 * the revert as it is then.
 */
export async function linkRevert(
  db: Queryable,
  l: { workspaceId: string; revertId: string; revertedId: string },
): Promise<ChangeRow> {
  await db.query(
    `UPDATE changes SET reverted_by = array_append(reverted_by, $3::uuid)
      WHERE workspace_id = $1 AND change_id = $2`,
    [l.workspaceId, l.revertedId, l.revertId],
  );
  const { rows } = await db.query<ChangeRow>(
    `UPDATE changes SET reverts_change_id = $3 WHERE workspace_id = $1 AND change_id = $2 RETURNING *`,
    [l.workspaceId, l.revertId, l.revertedId],
  );
  return rows[0] as ChangeRow;
}
