/**
 * Queries behind the dashboard's workspace pages: connections filtered and paged, members and
 * their roles, the gateway's own audit rows. Every query is scoped to one workspace.
 */
import type { Queryable } from '@adsmcp/runtime/db';
import type { Role, Scope } from '@adsmcp/runtime/principal';

/** One MCP connection as the connections page lists it (never its token or hash). */
export interface ConnectionRow {
  id: string;
  name: string;
  kind: 'token' | 'oauth';
  scopes: Scope[];
  user_id: string;
  user_email: string;
  created_at: Date;
  last_used_at: Date | null;
  expires_at: Date | null;
  revoked_at: Date | null;
  /** The tool groups it was issued with; null for every group. */
  tool_groups: string[] | null;
}

export interface ConnectionFilter {
  /** Part of the connection's name or its user's email, case-insensitive; empty for any. */
  search: string;
  state: 'any' | 'active' | 'revoked' | 'expired';
  limit: number;
  offset: number;
}

/** `%`, `_` and `\` taken literally in an ILIKE pattern. */
const likeText = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

const STATE_SQL = `
  ($3 = 'any'
   OR ($3 = 'revoked' AND c.revoked_at IS NOT NULL)
   OR ($3 = 'expired' AND c.revoked_at IS NULL AND c.expires_at <= now())
   OR ($3 = 'active' AND c.revoked_at IS NULL AND (c.expires_at IS NULL OR c.expires_at > now())))`;

/** The workspace's connections matching `f`, newest first, with how many match in all. */
export async function listConnectionsPage(
  db: Queryable,
  workspaceId: string,
  f: ConnectionFilter,
): Promise<{ rows: ConnectionRow[]; total: number }> {
  const { rows } = await db.query<ConnectionRow & { total: string }>(
    `SELECT c.id, c.name, c.kind, c.scopes, c.user_id, u.email AS user_email, c.created_at,
            c.last_used_at, c.expires_at, c.revoked_at, c.tool_groups, count(*) OVER () AS total
       FROM credentials c JOIN users u ON u.id = c.user_id
      WHERE c.workspace_id = $1
        AND ($2 = '' OR c.name ILIKE $4 OR u.email ILIKE $4)
        AND ${STATE_SQL}
      ORDER BY c.created_at DESC, c.id
      LIMIT $5 OFFSET $6`,
    [workspaceId, f.search, f.state, likeText(f.search), f.limit, f.offset],
  );
  const total = rows.length > 0 ? Number(rows[0]?.total) : await countConnections(db, workspaceId, f);
  return { rows: rows.map(({ total: _t, ...r }) => r), total };
}

/** How many connections match `f` (asked only when a page past the end came back empty). */
async function countConnections(db: Queryable, workspaceId: string, f: ConnectionFilter): Promise<number> {
  const { rows } = await db.query<{ n: string }>(
    `SELECT count(*) AS n FROM credentials c JOIN users u ON u.id = c.user_id
      WHERE c.workspace_id = $1 AND ($2 = '' OR c.name ILIKE $4 OR u.email ILIKE $4) AND ${STATE_SQL}`,
    [workspaceId, f.search, f.state, likeText(f.search)],
  );
  return Number(rows[0]?.n ?? 0);
}

/** One connection of the workspace, whatever its state. */
export async function findConnection(
  db: Queryable,
  workspaceId: string,
  credentialId: string,
): Promise<ConnectionRow | undefined> {
  const { rows } = await db.query<ConnectionRow>(
    `SELECT c.id, c.name, c.kind, c.scopes, c.user_id, u.email AS user_email, c.created_at,
            c.last_used_at, c.expires_at, c.revoked_at, c.tool_groups
       FROM credentials c JOIN users u ON u.id = c.user_id
      WHERE c.workspace_id = $1 AND c.id = $2`,
    [workspaceId, credentialId],
  );
  return rows[0];
}

/** The workspace's connections by id (lower case), with their names and owners. */
export async function connectionsById(
  db: Queryable,
  workspaceId: string,
): Promise<Map<string, { name: string; userId: string }>> {
  const { rows } = await db.query<{ id: string; name: string; user_id: string }>(
    'SELECT id, name, user_id FROM credentials WHERE workspace_id = $1',
    [workspaceId],
  );
  return new Map(rows.map((r) => [r.id.toLowerCase(), { name: r.name, userId: r.user_id }]));
}

export interface MemberRow {
  id: string;
  email: string;
  role: Role;
  created_at: Date;
}

/** The workspace's members, in the order they joined. */
export async function listMembers(db: Queryable, workspaceId: string): Promise<MemberRow[]> {
  const { rows } = await db.query<MemberRow>(
    'SELECT id, email, role, created_at FROM users WHERE workspace_id = $1 ORDER BY created_at, id',
    [workspaceId],
  );
  return rows;
}

/**
 * Sets a member's role, unless that would leave the workspace without an admin. The check and
 * the update are one statement, with the workspace's admins locked, so two admins demoting each
 * other at once cannot both succeed. Returns the member's previous role, 'last-admin' when the
 * change was refused for that, or undefined when there is no such member.
 */
export async function setMemberRole(
  db: Queryable,
  workspaceId: string,
  userId: string,
  role: Role,
): Promise<{ previous: Role } | 'last-admin' | undefined> {
  const { rows } = await db.query<{ previous: Role | null; updated: boolean }>(
    `WITH admins AS (
       SELECT id FROM users WHERE workspace_id = $1 AND role = 'admin' FOR UPDATE
     ), target AS (
       SELECT id, role FROM users WHERE workspace_id = $1 AND id = $2 FOR UPDATE
     ), changed AS (
       UPDATE users u SET role = $3
         FROM target t
        WHERE u.id = t.id
          AND (t.role <> 'admin' OR $3 = 'admin' OR (SELECT count(*) FROM admins) > 1)
        RETURNING u.id
     )
     SELECT (SELECT role FROM target) AS previous, EXISTS (SELECT 1 FROM changed) AS updated`,
    [workspaceId, userId, role],
  );
  const r = rows[0];
  if (!r?.previous) return undefined;
  return r.updated ? { previous: r.previous } : 'last-admin';
}

/** The workspace's features. */
export async function workspaceFeatures(db: Queryable, workspaceId: string): Promise<string[]> {
  const { rows } = await db.query<{ features: string[] }>('SELECT features FROM workspaces WHERE id = $1', [
    workspaceId,
  ]);
  return rows[0]?.features ?? [];
}
