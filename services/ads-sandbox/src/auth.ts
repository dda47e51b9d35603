/** Credentials: the accounts' API credentials (opaque bearer tokens) and the operator token. */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Queryable } from '@adsmcp/runtime/db';
import type { FastifyRequest } from 'fastify';
import { PlatformHttpError } from './errors.ts';
import { type Account, findAccountByCredential } from './store/account-store.ts';

const CREDENTIAL_PREFIX = 'sbx_';

/** sha256 is what the platform stores of a credential, and compares the operator token through. */
export function sha256(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** newCredential returns a fresh random API credential (shown once) and the hash to store. */
export function newCredential(): { credential: string; sha256: Buffer } {
  const credential = `${CREDENTIAL_PREFIX}${randomBytes(32).toString('base64url')}`;
  return { credential, sha256: sha256(credential) };
}

/** The token of an `Authorization: Bearer <token>` header, if there is one. */
export function bearerToken(req: FastifyRequest): string | undefined {
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  return match?.[1];
}

function unauthorized(message: string): PlatformHttpError {
  return new PlatformHttpError(401, 'unauthorized', message);
}

/**
 * createAdminGuard returns an `onRequest` hook that lets through only requests bearing the
 * operator token, compared in constant time.
 */
export function createAdminGuard(adminToken: string): (req: FastifyRequest) => Promise<void> {
  const expected = sha256(adminToken);
  return async (req) => {
    const token = bearerToken(req);
    if (token === undefined)
      throw unauthorized('operator endpoints need Authorization: Bearer <admin token>');
    if (!timingSafeEqual(sha256(token), expected)) throw unauthorized('the admin token is not valid');
  };
}

/** requireAccount returns the account whose API credential the request bears, or refuses with 401. */
export async function requireAccount(db: Queryable, req: FastifyRequest): Promise<Account> {
  const token = bearerToken(req);
  if (token === undefined)
    throw unauthorized('send the account credential as Authorization: Bearer <credential>');
  const account = await findAccountByCredential(db, sha256(token));
  if (account === undefined) throw unauthorized('the credential is not valid');
  return account;
}

/**
 * How long an API credential the sandbox issues is valid by default: 60 days after it was issued,
 * as the long-lived tokens of real ad platforms are (`SANDBOX_CREDENTIAL_VALID_DAYS` sets another).
 * The sandbox reports it (`GET /me`'s `credential_expires_at`) and does not enforce it: tests run
 * the sandbox's clock anywhere.
 */
export const CREDENTIAL_VALID_DAYS = 60;

/** When the credential the request bears expires (RFC 3339), or undefined for an unknown one. */
export async function credentialExpiresAt(
  db: Queryable,
  req: FastifyRequest,
  validDays = CREDENTIAL_VALID_DAYS,
): Promise<string | undefined> {
  const token = bearerToken(req);
  if (token === undefined) return undefined;
  const { rows } = await db.query<{ expires_at: Date }>(
    `SELECT created_at + make_interval(days => $2) AS expires_at FROM credentials WHERE token_sha256 = $1`,
    [sha256(token), validDays],
  );
  return rows[0]?.expires_at.toISOString();
}
