/**
 * Resolves `Authorization: Bearer <token>` to a caller, or says why it cannot. Failed lookups are
 * budgeted per client address; successes are not, so a valid credential is never refused because
 * other clients behind the same address (everyone on loopback, everyone behind a proxy) failed.
 */
import type { Queryable } from '@adsmcp/runtime/db';
import type { Caller } from '../catalogue/catalogue.ts';
import { hashToken, looksLikeToken } from '../domain/credentials.ts';
import { findCredentialByHash, touchCredential } from '../store/identity-store.ts';
import type { KnownCredentials } from './known-credentials.ts';
import type { RateLimiter } from './rate-limiter.ts';

export type AuthResult =
  | { ok: true; caller: Caller }
  /** `error` is the RFC 6750 error code for the challenge; absent when no token was sent. */
  | { ok: false; error?: 'invalid_request' | 'invalid_token'; description: string };

type BearerResult = { ok: true; token: string } | Extract<AuthResult, { ok: false }>;

const INVALID_TOKEN = {
  ok: false,
  error: 'invalid_token',
  description: 'the access token is not valid',
} as const;

/**
 * Access tokens issued by the OAuth authorization server (src/oauth): each resolves to the hash
 * under which its grant is recorded as a credential, or to the reason it is not valid here.
 */
export interface OAuthAccessTokens {
  /**
   * `scopes` are the token's own: a client may ask for fewer than its grant holds (a refresh or an
   * authorization request naming fewer, RFC 6749 §3.3 and §6), and the token then carries no more.
   */
  credentialHash(
    token: string,
  ): Promise<{ ok: true; hash: Buffer; scopes: readonly string[] } | Extract<AuthResult, { ok: false }>>;
}

/** The caller acting with at most `scopes`: its connection's scopes narrowed to a token's own. */
function narrowedTo(caller: Caller, scopes: readonly string[] | undefined): Caller {
  if (scopes === undefined) return caller;
  const kept = caller.principal.scopes.filter((s) => scopes.includes(s));
  if (kept.length === caller.principal.scopes.length) return caller;
  return { ...caller, principal: { ...caller.principal, scopes: kept } };
}

/** The shape of an OAuth access token (RFC 6750 b64token), bounded in length. */
const OAUTH_TOKEN = /^[A-Za-z0-9._~+/-]{16,512}=*$/;

/** readBearer takes the token out of an Authorization header, checking only its shape. */
export function readBearer(header: string | undefined, acceptOAuth = false): BearerResult {
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
  const shaped = looksLikeToken(m[1]) || (acceptOAuth && OAUTH_TOKEN.test(m[1]));
  return shaped ? { ok: true, token: m[1] } : INVALID_TOKEN;
}

/** verifyToken checks a well-formed token against the stored credentials at time `now`. */
export async function verifyToken(db: Queryable, tokenHash: Buffer, now: Date): Promise<AuthResult> {
  const row = await findCredentialByHash(db, tokenHash);
  if (row === undefined) return INVALID_TOKEN;
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

export type GuardResult = AuthResult | { ok: false; overBudget: true; retryAfterSeconds: number };

export interface AuthGuardOptions {
  db: Queryable;
  /** Failed lookups per client address. */
  failures: RateLimiter;
  known: KnownCredentials;
  now: () => Date;
  /** OAuth access tokens, accepted besides the pasted ones when given. */
  oauth?: OAuthAccessTokens;
}

/**
 * createAuthGuard returns the edge's authentication: a known, fresh token is admitted from
 * memory; a known, stale one is checked again in the database whatever its address's budget
 * (it is not a guess); an unknown one is looked up only while its address has failures left.
 * A header without a well-formed token costs no lookup and so no budget.
 */
export function createAuthGuard(o: AuthGuardOptions) {
  return async (header: string | undefined, clientAddress: string): Promise<GuardResult> => {
    const bearer = readBearer(header, o.oauth !== undefined);
    if (!bearer.ok) return bearer;
    let tokenHash: Buffer;
    /** An OAuth access token's own scopes; a pasted token has its connection's. */
    let tokenScopes: readonly string[] | undefined;
    if (looksLikeToken(bearer.token) || o.oauth === undefined) {
      tokenHash = hashToken(bearer.token);
    } else {
      // Looked up whatever the address's budget: a guess at a 256-bit token is hopeless, and a valid
      // token is not refused because others behind the same address failed.
      const grant = await o.oauth.credentialHash(bearer.token);
      if (!grant.ok) {
        o.failures.take(clientAddress);
        return grant;
      }
      tokenHash = grant.hash;
      tokenScopes = grant.scopes;
    }
    const now = o.now();
    const known = o.known.get(tokenHash);
    if (known?.fresh) {
      const expiresAt = known.caller.credentialExpiresAt;
      if (expiresAt === null || expiresAt > now)
        return { ok: true, caller: narrowedTo(known.caller, tokenScopes) };
    }
    if (known === undefined) {
      const budget = o.failures.peek(clientAddress);
      if (!budget.allowed)
        return { ok: false, overBudget: true, retryAfterSeconds: budget.retryAfterSeconds };
    }
    const result = await verifyToken(o.db, tokenHash, now);
    if (!result.ok) {
      o.known.forgetToken(tokenHash);
      if (known === undefined) o.failures.take(clientAddress);
      return result;
    }
    // Remembered with the connection's scopes: another token of the same grant may hold more.
    o.known.remember(tokenHash, result.caller);
    return { ok: true, caller: narrowedTo(result.caller, tokenScopes) };
  };
}
