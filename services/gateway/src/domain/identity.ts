/** Creating workspaces, users and credentials: the operations the admin command and seeding share. */
import { randomUUID } from 'node:crypto';
import type { Queryable } from '@adsmcp/runtime/db';
import type { Role, Scope } from '@adsmcp/runtime/principal';
import {
  findFirstAdmin,
  findUserByEmail,
  findWorkspace,
  insertAudit,
  insertCredential,
  insertUser,
  insertWorkspace,
} from '../store/identity-store.ts';
import { hashPassword, newToken } from './credentials.ts';

const EMAIL = /^[^\s@]+@[^\s@]+$/;

export async function createWorkspace(
  db: Queryable,
  w: { name: string; features: string[]; adminEmail: string; adminPassword: string },
): Promise<{ workspaceId: string; userId: string }> {
  if (!EMAIL.test(w.adminEmail)) throw new Error(`admin email "${w.adminEmail}" is not an email address`);
  if (w.adminPassword.length < 12) throw new Error('admin password must have at least 12 characters');
  if (await findUserByEmail(db, w.adminEmail)) throw new Error(`a user ${w.adminEmail} already exists`);
  const workspaceId = randomUUID();
  const userId = randomUUID();
  await insertWorkspace(db, { id: workspaceId, name: w.name, features: w.features });
  await insertUser(db, {
    id: userId,
    workspaceId,
    email: w.adminEmail.toLowerCase(),
    passwordHash: await hashPassword(w.adminPassword),
    role: 'admin',
  });
  await insertAudit(db, { workspaceId, actor: 'operator', action: 'workspace.created', target: workspaceId });
  return { workspaceId, userId };
}

export async function addUser(
  db: Queryable,
  u: { workspaceId: string; email: string; password: string; role: Role },
): Promise<string> {
  if (!EMAIL.test(u.email)) throw new Error(`"${u.email}" is not an email address`);
  if (u.password.length < 12) throw new Error('password must have at least 12 characters');
  const existing = await findUserByEmail(db, u.email);
  if (existing !== undefined) {
    const ws = await findWorkspace(db, existing.workspace_id);
    throw new Error(
      `a user ${existing.email} already exists (in workspace ${ws?.name ?? existing.workspace_id}); an email belongs to one person`,
    );
  }
  const id = randomUUID();
  await insertUser(db, {
    id,
    workspaceId: u.workspaceId,
    email: u.email.toLowerCase(),
    passwordHash: await hashPassword(u.password),
    role: u.role,
  });
  return id;
}

export interface IssuedToken {
  credentialId: string;
  token: string;
  workspaceId: string;
  userEmail: string;
  scopes: Scope[];
  expiresAt: Date | null;
  /** The tool groups its connections are served; undefined for every group. */
  toolGroups?: readonly string[];
}

/** issueToken creates an MCP credential for a user (default: the workspace's first admin). */
export async function issueToken(
  db: Queryable,
  t: {
    workspace: string;
    userEmail?: string;
    scopes: Scope[];
    lifetimeMs?: number;
    name: string;
    now: Date;
    /** Ids of tool groups, already checked (issuedToolGroups); undefined for every group. */
    toolGroups?: readonly string[];
  },
): Promise<IssuedToken> {
  const ws = await findWorkspace(db, t.workspace);
  if (ws === undefined) throw new Error(`no workspace "${t.workspace}"`);
  const user = t.userEmail ? await findUserByEmail(db, t.userEmail) : await findFirstAdmin(db, ws.id);
  if (user === undefined || user.workspace_id !== ws.id) {
    throw new Error(
      t.userEmail ? `no user ${t.userEmail} in workspace ${ws.name}` : `workspace ${ws.name} has no admin`,
    );
  }
  if (t.scopes.length === 0) throw new Error('a token needs at least one scope (read, write)');
  const { token, hash } = newToken();
  const credentialId = randomUUID();
  const expiresAt = t.lifetimeMs === undefined ? null : new Date(t.now.getTime() + t.lifetimeMs);
  await insertCredential(db, {
    id: credentialId,
    workspaceId: ws.id,
    userId: user.id,
    name: t.name,
    kind: 'token',
    tokenHash: hash,
    scopes: t.scopes,
    expiresAt,
    ...(t.toolGroups === undefined ? {} : { toolGroups: t.toolGroups }),
  });
  await insertAudit(db, {
    workspaceId: ws.id,
    actor: 'operator',
    action: 'credential.created',
    target: credentialId,
    detail: {
      scopes: t.scopes,
      user: user.email,
      ...(t.toolGroups === undefined ? {} : { tool_groups: t.toolGroups }),
    },
  });
  return {
    credentialId,
    token,
    workspaceId: ws.id,
    userEmail: user.email,
    scopes: t.scopes,
    expiresAt,
    ...(t.toolGroups === undefined ? {} : { toolGroups: t.toolGroups }),
  };
}
