/** MCP credentials and passwords: how secrets are made, hashed and compared. */
import { createHash, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

const TOKEN_PREFIX = 'amcp_';
const scryptAsync = promisify(scrypt) as (
  pw: string,
  salt: Buffer,
  len: number,
  opts: object,
) => Promise<Buffer>;

/** newToken returns a fresh opaque token (shown once) and the SHA-256 that is stored. */
export function newToken(): { token: string; hash: Buffer } {
  const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
  return { token, hash: hashToken(token) };
}

export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** Whether `value` has the shape of one of our tokens (cheap rejection before a lookup). */
export function looksLikeToken(value: string): boolean {
  return (
    value.startsWith(TOKEN_PREFIX) &&
    value.length === TOKEN_PREFIX.length + 43 &&
    /^[A-Za-z0-9_-]+$/.test(value.slice(5))
  );
}

const N = 16384;
const R = 8;
const P = 1;

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scryptAsync(password, salt, 32, { N, r: R, p: P });
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [alg, n, r, p, salt, hash] = stored.split('$');
  if (alg !== 'scrypt' || !n || !r || !p || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const actual = await scryptAsync(password, Buffer.from(salt, 'base64url'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
  });
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** Parses a lifetime such as `30d`, `12h`, `45m` into milliseconds; undefined for `never`. */
export function parseLifetime(text: string): number | undefined {
  if (text === 'never') return undefined;
  const m = /^(\d{1,6})([dhm])$/.exec(text);
  if (!m) throw new Error(`lifetime must look like 30d, 12h, 45m or never (got "${text}")`);
  const unit = { d: 86_400_000, h: 3_600_000, m: 60_000 }[m[2] as 'd' | 'h' | 'm'];
  return Number(m[1]) * unit;
}
