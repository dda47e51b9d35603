/** Resolves `Authorization: Bearer <token>` to a caller, or says why it cannot. */
import type { Queryable } from '@adsmcp/runtime/db';
import type { Caller } from '../catalogue/catalogue.ts';
import { hashToken, looksLikeToken } from '../domain/credentials.ts';
import { findCredentialByHash, touchCredential } from '../store/identity-store.ts';

export type AuthResult =
  | { ok: true; caller: Caller }
  /** `error` is the RFC 6750 error code for the challenge; absent when no token was sent. */
  | { ok: false; error?: 'invalid_request' | 'invalid_token'; description: string };

/** authenticate checks the header against the stored credentials at time `now`. */
export async function authenticate(
  db: Queryable,
  header: string | undefined,
  now: Date,
): Promise<AuthResult> {
  if (header === undefined || header === '')
    return { ok: false, description: 'an Authorization: Bearer token is required' };
  const m = /^Bearer +(\S+)$/i.exec(header);
  if (!m?.[1]) {
    return {
      ok: false,
      error: 'invalid_request',
      description: 'the Authorization header must be "Bearer <token>"',
    };
  }
  const token = m[1];
  if (!looksLikeToken(token))
    return { ok: false, error: 'invalid_token', description: 'the access token is not valid' };
  const row = await findCredentialByHash(db, hashToken(token));
  if (row === undefined)
    return { ok: false, error: 'invalid_token', description: 'the access token is not valid' };
  if (row.revoked_at !== null)
    return { ok: false, error: 'invalid_token', description: 'the access token was revoked' };
  if (row.expires_at !== null && row.expires_at <= now) {
    return { ok: false, error: 'invalid_token', description: 'the access token has expired' };
  }
  if (row.last_used_at === null || now.getTime() - row.last_used_at.getTime() > 60_000) {
    await touchCredential(db, row.credential_id);
  }
  return {
    ok: true,
    caller: {
      principal: {
        workspaceId: row.workspace_id,
        credentialId: row.credential_id,
        userId: row.user_id,
        role: row.role,
        scopes: row.scopes,
        via: 'mcp',
      },
      credentialName: row.credential_name,
      credentialKind: row.kind,
      credentialCreatedAt: row.created_at,
      credentialExpiresAt: row.expires_at,
      userEmail: row.user_email,
      workspaceName: row.workspace_name,
      features: row.features,
    },
  };
}
