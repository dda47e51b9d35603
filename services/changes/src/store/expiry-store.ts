/** The workspaces' expiry settings: each setting a person made, the newest in force. */
import type { Queryable } from '@adsmcp/runtime/db';
import { DEFAULT_EXPIRY, type ExpiryHours } from '../domain/change.ts';
import { appendAuditEvent, atomically } from './audit-store.ts';

export interface ExpirySettingRow {
  workspace_id: string;
  set_at: Date;
  set_by: string;
  prepared_valid_hours: number;
  approval_valid_hours: number;
}

/** The settings in force: the newest set, or undefined while the defaults are. */
export async function currentExpirySetting(
  db: Queryable,
  workspaceId: string,
): Promise<ExpirySettingRow | undefined> {
  const { rows } = await db.query<ExpirySettingRow>(
    'SELECT * FROM change_expiry_settings WHERE workspace_id = $1 ORDER BY set_at DESC LIMIT 1',
    [workspaceId],
  );
  return rows[0];
}

/** The hours in force in a workspace (its setting, or DEFAULT_EXPIRY). */
export async function expiryHours(db: Queryable, workspaceId: string): Promise<ExpiryHours> {
  const row = await currentExpirySetting(db, workspaceId);
  return row === undefined ? DEFAULT_EXPIRY : hoursOf(row);
}

export function hoursOf(row: ExpirySettingRow): ExpiryHours {
  return { preparedValidHours: row.prepared_valid_hours, approvalValidHours: row.approval_valid_hours };
}

export async function insertExpirySetting(
  db: Queryable,
  s: { workspaceId: string; by: string; hours: ExpiryHours },
): Promise<ExpirySettingRow> {
  return atomically(db, async (tx) => {
    const { rows } = await tx.query<ExpirySettingRow>(
      `INSERT INTO change_expiry_settings (workspace_id, set_by, prepared_valid_hours, approval_valid_hours)
       VALUES ($1, $2, $3, $4) RETURNING *`,
      [s.workspaceId, s.by, s.hours.preparedValidHours, s.hours.approvalValidHours],
    );
    await appendAuditEvent(tx, {
      workspaceId: s.workspaceId,
      actor: s.by,
      kind: 'expiry.set',
      subject: '',
      details: {
        prepared_valid_hours: s.hours.preparedValidHours,
        approval_valid_hours: s.hours.approvalValidHours,
      },
    });
    return rows[0] as ExpirySettingRow;
  });
}

export interface ExpirySettingEventRow extends ExpirySettingRow {
  /** RFC 3339 in UTC with microseconds, as ListChangeEvents gives them. */
  event_at: string;
  event_key: string;
}

/**
 * The workspace's settings changes as audit events, newest first, before the cursor (at, key),
 * keyed `s:<UTC time, microseconds>` to order with the changes' events (listChangeEvents).
 */
export async function listExpirySettingEvents(
  db: Queryable,
  f: { workspaceId: string; userId?: string; beforeAt?: string; beforeKey?: string; limit: number },
): Promise<ExpirySettingEventRow[]> {
  const { rows } = await db.query<ExpirySettingEventRow>(
    `SELECT * FROM (
       SELECT s.*, to_char(s.set_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS event_at,
              ('s:' || to_char(s.set_at AT TIME ZONE 'UTC', 'YYYYMMDDHH24MISSUS')) COLLATE "C" AS event_key
         FROM change_expiry_settings s
        WHERE s.workspace_id = $1 AND ($2::text IS NULL OR s.set_by LIKE 'user:' || $2 || ' via %')
     ) ev
     WHERE $3::timestamptz IS NULL OR (set_at, event_key) < ($3::timestamptz, $4::text COLLATE "C")
     ORDER BY set_at DESC, event_key DESC
     LIMIT $5`,
    [f.workspaceId, f.userId ?? null, f.beforeAt ?? null, f.beforeKey ?? '', f.limit],
  );
  return rows;
}
