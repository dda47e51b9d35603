/** Queries on workspaces, users and MCP credentials. Every function takes what it runs on. */

import type { Queryable } from '@adsmcp/runtime/db';
import { isUuid } from '@adsmcp/runtime/ids';
import type { Role, Scope } from '@adsmcp/runtime/principal';

export interface WorkspaceRow {
  id: string;
  name: string;
  features: string[];
}

export interface UserRow {
  id: string;
  workspace_id: string;
  email: string;
  password_hash: string;
  role: Role;
}

/** What a bearer token resolves to: the credential, its user's current role and its workspace. */
export interface CredentialIdentity {
  credential_id: string;
  credential_name: string;
  kind: 'token' | 'oauth';
  scopes: Scope[];
  expires_at: Date | null;
  revoked_at: Date | null;
  created_at: Date;
  last_used_at: Date | null;
  user_id: string;
  user_email: string;
  role: Role;
  workspace_id: string;
  workspace_name: string;
  features: string[];
  /** The tool groups the credential was issued with; null for every group. */
  tool_groups: string[] | null;
}

export async function insertWorkspace(
  db: Queryable,
  w: { id: string; name: string; features: string[] },
): Promise<void> {
  await db.query('INSERT INTO workspaces (id, name, features) VALUES ($1, $2, $3)', [
    w.id,
    w.name,
    w.features,
  ]);
}

export async function findWorkspace(db: Queryable, idOrName: string): Promise<WorkspaceRow | undefined> {
  const byId = isUuid(idOrName);
  const { rows } = await db.query<WorkspaceRow>(
    `SELECT id, name, features FROM workspaces WHERE ${byId ? 'id = $1::uuid' : 'name = $1'} ORDER BY created_at LIMIT 1`,
    [idOrName],
  );
  return rows[0];
}

export async function setWorkspaceFeatures(
  db: Queryable,
  workspaceId: string,
  features: string[],
): Promise<void> {
  await db.query('UPDATE workspaces SET features = $2 WHERE id = $1', [workspaceId, features]);
}

export async function insertUser(
  db: Queryable,
  u: { id: string; workspaceId: string; email: string; passwordHash: string; role: Role },
): Promise<void> {
  await db.query(
    'INSERT INTO users (id, workspace_id, email, password_hash, role) VALUES ($1, $2, $3, $4, $5)',
    [u.id, u.workspaceId, u.email, u.passwordHash, u.role],
  );
}

export async function findUserByEmail(db: Queryable, email: string): Promise<UserRow | undefined> {
  const { rows } = await db.query<UserRow>(
    'SELECT id, workspace_id, email, password_hash, role FROM users WHERE email = $1',
    [email.toLowerCase()],
  );
  return rows[0];
}

/** The workspace's users among `ids`, by id and email (ids from other workspaces are left out). */
export async function listUsersByIds(
  db: Queryable,
  workspaceId: string,
  ids: readonly string[],
): Promise<Pick<UserRow, 'id' | 'email'>[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<Pick<UserRow, 'id' | 'email'>>(
    'SELECT id, email FROM users WHERE workspace_id = $1 AND id = ANY($2::uuid[])',
    [workspaceId, ids],
  );
  return rows;
}

/** The workspace's first admin, who owns operator-issued credentials by default. */
export async function findFirstAdmin(db: Queryable, workspaceId: string): Promise<UserRow | undefined> {
  const { rows } = await db.query<UserRow>(
    `SELECT id, workspace_id, email, password_hash, role FROM users
      WHERE workspace_id = $1 AND role = 'admin' ORDER BY created_at, id LIMIT 1`,
    [workspaceId],
  );
  return rows[0];
}

export async function insertCredential(
  db: Queryable,
  c: {
    id: string;
    workspaceId: string;
    userId: string;
    name: string;
    kind: 'token' | 'oauth';
    tokenHash: Buffer;
    scopes: Scope[];
    expiresAt: Date | null;
    /** The tool groups its connections are served; undefined for every group. */
    toolGroups?: readonly string[];
  },
): Promise<void> {
  await db.query(
    `INSERT INTO credentials (id, workspace_id, user_id, name, kind, token_hash, scopes, expires_at, tool_groups)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [c.id, c.workspaceId, c.userId, c.name, c.kind, c.tokenHash, c.scopes, c.expiresAt, c.toolGroups ?? null],
  );
}

const IDENTITY_COLUMNS = `
  c.id AS credential_id, c.name AS credential_name, c.kind, c.scopes, c.expires_at, c.revoked_at,
  c.created_at, c.last_used_at, c.tool_groups, u.id AS user_id, u.email AS user_email, u.role,
  w.id AS workspace_id, w.name AS workspace_name, w.features`;

/** Resolves a token hash to its credential, whatever its state (the caller judges validity). */
export async function findCredentialByHash(
  db: Queryable,
  tokenHash: Buffer,
): Promise<CredentialIdentity | undefined> {
  const { rows } = await db.query<CredentialIdentity>(
    `SELECT ${IDENTITY_COLUMNS}
       FROM credentials c JOIN users u ON u.id = c.user_id JOIN workspaces w ON w.id = c.workspace_id
      WHERE c.token_hash = $1`,
    [tokenHash],
  );
  return rows[0];
}

export async function listCredentials(db: Queryable, workspaceId: string): Promise<CredentialIdentity[]> {
  const { rows } = await db.query<CredentialIdentity>(
    `SELECT ${IDENTITY_COLUMNS}
       FROM credentials c JOIN users u ON u.id = c.user_id JOIN workspaces w ON w.id = c.workspace_id
      WHERE c.workspace_id = $1 ORDER BY c.created_at DESC, c.id`,
    [workspaceId],
  );
  return rows;
}

/**
 * Revokes a credential. With `workspaceId` the credential must belong to that workspace.
 * Returns the revocation time, or undefined when there was no such unrevoked credential.
 */
export async function revokeCredential(
  db: Queryable,
  credentialId: string,
  workspaceId?: string,
): Promise<Date | undefined> {
  const { rows } = await db.query<{ revoked_at: Date }>(
    `UPDATE credentials SET revoked_at = now()
      WHERE id = $1 AND revoked_at IS NULL AND ($2::uuid IS NULL OR workspace_id = $2::uuid)
      RETURNING revoked_at`,
    [credentialId, workspaceId ?? null],
  );
  return rows[0]?.revoked_at;
}

/** When the credential was revoked, or undefined while it is not (or does not exist). */
export async function credentialRevokedAt(db: Queryable, credentialId: string): Promise<Date | undefined> {
  const { rows } = await db.query<{ revoked_at: Date | null }>(
    'SELECT revoked_at FROM credentials WHERE id = $1',
    [credentialId],
  );
  return rows[0]?.revoked_at ?? undefined;
}

/** Records use at most once a minute per credential, so the hot path stays read-only. */
export async function touchCredential(db: Queryable, credentialId: string): Promise<void> {
  await db.query(
    `UPDATE credentials SET last_used_at = now()
      WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`,
    [credentialId],
  );
}

export async function insertAudit(
  db: Queryable,
  e: { workspaceId: string; actor: string; action: string; target?: string; detail?: object },
): Promise<void> {
  await db.query(
    'INSERT INTO audit_log (workspace_id, actor, action, target, detail) VALUES ($1, $2, $3, $4, $5)',
    [e.workspaceId, e.actor, e.action, e.target ?? null, JSON.stringify(e.detail ?? {})],
  );
}

/** Turns a feature on for a workspace; returns its features, or undefined when there is no such workspace. */
export async function enableWorkspaceFeature(
  db: Queryable,
  workspaceId: string,
  feature: string,
): Promise<string[] | undefined> {
  const { rows } = await db.query<{ features: string[] }>(
    `UPDATE workspaces
        SET features = CASE WHEN $2 = ANY(features) THEN features ELSE array_append(features, $2) END
      WHERE id = $1 RETURNING features`,
    [workspaceId, feature],
  );
  return rows[0]?.features;
}

/** Turns a feature off for a workspace; returns its features, or undefined when there is no such workspace. */
export async function disableWorkspaceFeature(
  db: Queryable,
  workspaceId: string,
  feature: string,
): Promise<string[] | undefined> {
  const { rows } = await db.query<{ features: string[] }>(
    'UPDATE workspaces SET features = array_remove(features, $2) WHERE id = $1 RETURNING features',
    [workspaceId, feature],
  );
  return rows[0]?.features;
}
