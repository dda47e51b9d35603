/** Queries on dashboard sessions. */
import type { Queryable } from '@adsmcp/runtime/db';
import type { Role } from '@adsmcp/runtime/principal';

export interface SessionView {
  user_id: string;
  email: string;
  role: Role;
  workspace_id: string;
  workspace_name: string;
  csrf_token: string;
}

export async function insertSession(
  db: Queryable,
  s: { tokenHash: Buffer; userId: string; csrfToken: string; expiresAt: Date },
): Promise<void> {
  await db.query(
    'INSERT INTO sessions (token_hash, user_id, csrf_token, expires_at) VALUES ($1, $2, $3, $4)',
    [s.tokenHash, s.userId, s.csrfToken, s.expiresAt],
  );
}

/** The live session for a token hash, with its user and workspace. */
export async function findSession(db: Queryable, tokenHash: Buffer): Promise<SessionView | undefined> {
  const { rows } = await db.query<SessionView>(
    `SELECT u.id AS user_id, u.email, u.role, w.id AS workspace_id, w.name AS workspace_name, s.csrf_token
       FROM sessions s JOIN users u ON u.id = s.user_id JOIN workspaces w ON w.id = u.workspace_id
      WHERE s.token_hash = $1 AND s.expires_at > now()`,
    [tokenHash],
  );
  return rows[0];
}

export async function deleteSession(db: Queryable, tokenHash: Buffer): Promise<void> {
  await db.query('DELETE FROM sessions WHERE token_hash = $1', [tokenHash]);
}
