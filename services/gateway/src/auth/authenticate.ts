/**
 * Resolves `Authorization: Bearer <token>` to a caller, or says why it cannot. Failed
 * authentications are budgeted per client address; successes are not, so a valid credential is
 * never refused because other clients behind the same address (everyone on loopback, everyone
 * behind a proxy) failed.
 */
import type { Queryable } from '@adsmcp/runtime/db';
import pLimit, { type LimitFunction } from 'p-limit';
import type { Caller } from '../catalogue/catalogue.ts';
import { hashToken, looksLikeToken } from '../domain/credentials.ts';
import { findCredentialByHash, touchCredential } from '../store/identity-store.ts';
import type { KnownCredential, KnownCredentials } from './known-credentials.ts';
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
      ...(row.tool_groups === null ? {} : { toolGroups: row.tool_groups }),
    },
  };
}

export type GuardResult = AuthResult | { ok: false; overBudget: true; retryAfterSeconds: number };

/**
 * How many lookups of credentials sent from addresses over their failure budget run at once, across
 * all such addresses; the rest wait their turn in the order they came. A flood of guesses from
 * over-budget addresses so holds at most this many of the database pool's connections.
 */
export const OVER_BUDGET_LOOKUPS_AT_ONCE = 2;

export interface AuthGuardOptions {
  db: Queryable;
  /** Failed authentications per client address. */
  failures: RateLimiter;
  known: KnownCredentials;
  now: () => Date;
  /** OAuth access tokens, accepted besides the pasted ones when given. */
  oauth?: OAuthAccessTokens;
  /** Lookups from over-budget addresses at once (default OVER_BUDGET_LOOKUPS_AT_ONCE). */
  overBudgetLookupsAtOnce?: number;
}

/**
 * createAuthGuard returns the edge's authentication. Every credential is checked, and only a failed
 * one is charged to its address's failure budget: a valid credential is served however many
 * failures its address (everyone behind a proxy or a NAT) has sent.
 *
 * The budget bounds the work a client sending bad credentials can cause instead of refusing it:
 * - a header that is not a bearer token, or a token of no accepted shape, costs no lookup;
 * - a known, fresh credential is admitted from memory (a hash and a map lookup);
 * - any other lookup (one indexed read of the credential; for an OAuth token, the provider's read of
 *   it) is charged to the address before it starts and given back when the credential is valid, so
 *   an address under budget has no more lookups under way than failures left;
 * - past its budget, an address's lookups still run, but through one queue shared by every
 *   over-budget address, OVER_BUDGET_LOOKUPS_AT_ONCE at a time, and a lookup whose client has gone
 *   by its turn is skipped. Failures are then answered 429 with Retry-After.
 * A flood thus costs one SHA-256 per request and a bounded share of the database; a valid
 * credential behind it waits for its turn in that queue and is served.
 */
export function createAuthGuard(o: AuthGuardOptions): AuthGuard {
  const overBudget = pLimit(o.overBudgetLookupsAtOnce ?? OVER_BUDGET_LOOKUPS_AT_ONCE);
  return (header, clientAddress, gone = neverGone) =>
    authenticate(o, overBudget, header, clientAddress, gone);
}

export type AuthGuard = (
  header: string | undefined,
  clientAddress: string,
  /** Whether the client has gone (its connection closed) while its lookup waited. */
  gone?: () => boolean,
) => Promise<GuardResult>;

const neverGone = () => false;

async function authenticate(
  o: AuthGuardOptions,
  overBudget: LimitFunction,
  header: string | undefined,
  clientAddress: string,
  gone: () => boolean,
): Promise<GuardResult> {
  const bearer = readBearer(header, o.oauth !== undefined);
  if (!bearer.ok) {
    // No credential at all is how a client asks what to authenticate with: it is not a failure.
    return bearer.error === undefined ? bearer : failed(o, bearer, clientAddress);
  }
  if (looksLikeToken(bearer.token) || o.oauth === undefined) {
    const tokenHash = hashToken(bearer.token);
    const known = o.known.get(tokenHash);
    const remembered = fromMemory(o, known, undefined);
    if (remembered !== undefined) return remembered;
    // Found valid before and only stale: not a guess, so checked again outside the budget.
    if (known !== undefined) {
      const result = await verify(o, tokenHash, undefined);
      return result.ok ? result : failed(o, result, clientAddress);
    }
  }
  if (o.failures.take(clientAddress).allowed) return chargedLookUp(o, bearer.token, clientAddress);
  return queuedLookUp(o, overBudget, bearer.token, clientAddress, gone);
}

/** A failure charged to `clientAddress`: a 429 once the address is over its budget. */
function failed(
  o: AuthGuardOptions,
  result: Extract<AuthResult, { ok: false }>,
  clientAddress: string,
): GuardResult {
  const charged = o.failures.take(clientAddress);
  return charged.allowed
    ? result
    : { ok: false, overBudget: true, retryAfterSeconds: charged.retryAfterSeconds };
}

/** The database's word on a pasted token's hash (or an OAuth token's grant), remembered when valid. */
async function verify(
  o: AuthGuardOptions,
  tokenHash: Buffer,
  tokenScopes: readonly string[] | undefined,
): Promise<AuthResult> {
  const result = await verifyToken(o.db, tokenHash, o.now());
  if (!result.ok) {
    o.known.forgetToken(tokenHash);
    return result;
  }
  // Remembered with the connection's scopes: another token of the same grant may hold more.
  o.known.remember(tokenHash, result.caller);
  return { ok: true, caller: narrowedTo(result.caller, tokenScopes) };
}

/** A known credential admitted from memory, while its entry is fresh and it has not expired. */
function fromMemory(
  o: AuthGuardOptions,
  known: KnownCredential | undefined,
  tokenScopes: readonly string[] | undefined,
): AuthResult | undefined {
  if (!known?.fresh) return undefined;
  const expiresAt = known.caller.credentialExpiresAt;
  if (expiresAt !== null && expiresAt <= o.now()) return undefined;
  return { ok: true, caller: narrowedTo(known.caller, tokenScopes) };
}

/** The whole check of a well-shaped token that memory did not settle. */
async function lookUp(o: AuthGuardOptions, token: string): Promise<AuthResult> {
  if (looksLikeToken(token) || o.oauth === undefined) return verify(o, hashToken(token), undefined);
  const grant = await o.oauth.credentialHash(token);
  if (!grant.ok) return grant;
  return fromMemory(o, o.known.get(grant.hash), grant.scopes) ?? verify(o, grant.hash, grant.scopes);
}

/** A lookup under the address's budget: charged before it starts, given back when the credential is valid. */
async function chargedLookUp(o: AuthGuardOptions, token: string, clientAddress: string): Promise<AuthResult> {
  let result: AuthResult;
  try {
    result = await lookUp(o, token);
  } catch (err) {
    // The lookup itself failed (the database): no credential was found wanting.
    o.failures.give(clientAddress);
    throw err;
  }
  if (result.ok) o.failures.give(clientAddress);
  return result;
}

/** A lookup from an address over its budget: in the shared queue, skipped when its client has gone. */
async function queuedLookUp(
  o: AuthGuardOptions,
  overBudget: LimitFunction,
  token: string,
  clientAddress: string,
  gone: () => boolean,
): Promise<GuardResult> {
  const result = await overBudget(
    async (): Promise<AuthResult | undefined> => (gone() ? undefined : lookUp(o, token)),
  );
  if (result?.ok === true) return result;
  const budget = o.failures.peek(clientAddress);
  return { ok: false, overBudget: true, retryAfterSeconds: Math.max(1, budget.retryAfterSeconds) };
}
