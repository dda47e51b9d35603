/**
 * Internal authentication. The gateway signs a short-lived principal token (an EdDSA JWT) for
 * every call it makes to a service, naming the workspace, credential, user, role and scopes it
 * authenticated, and the channel the request came through; each service verifies it before any
 * handler runs. No service trusts a caller because of where it sits on the network.
 *
 * A service that does work of its own (the changes worker applying an approved change) signs
 * with its own key as its own issuer. Which issuers a service accepts, on which channels and with
 * which scopes, is the trust table (trust.ts).
 */
import { createContextKey } from '@connectrpc/connect';
import {
  decodeJwt,
  exportPKCS8,
  exportSPKI,
  generateKeyPair,
  importPKCS8,
  importSPKI,
  jwtVerify,
  SignJWT,
} from 'jose';
import { edgeFor, GATEWAY_ISSUER, type Trust, trustRules } from './trust.ts';

export type Role = 'admin' | 'editor' | 'viewer';
export type Scope = 'read' | 'write';
/**
 * How the request reached us: an MCP client (an agent), a person signed in to the dashboard, an
 * operator's command, or a service's own worker. Approval of a change is refused over `mcp`.
 */
export type Channel = 'mcp' | 'dashboard' | 'operator' | 'worker';

/** Who a call is made for. */
export interface Principal {
  workspaceId: string;
  /** The MCP credential, dashboard session or operator command that authenticated. */
  credentialId: string;
  userId: string | null;
  role: Role;
  scopes: Scope[];
  via: Channel;
}

export { GATEWAY_ISSUER };

const ALG = 'EdDSA';
/** Lifetime of a principal token: long enough for one call, short enough to be useless if leaked. */
export const PRINCIPAL_TTL_SECONDS = 60;

/**
 * How records name who acted, by `form`; a caller acting for no user (an operator's command, a
 * worker) is named by its credential:
 * - `record` (changes, proposals, runs): `user:<id> via <channel> (<credential>)`, else
 *   `<channel>:<credential>`; the dashboard reads it back (change-actors.ts);
 * - `channel` (account standards): `user:<id> via <channel>`, else `<channel>:<credential>`;
 * - `member` (competitor sources, whose creator may edit them): `<user id>`, else
 *   `credential:<credential>`.
 * The forms differ because rows already saved in each form are compared and shown as they are.
 */
export function actorName(p: Principal, form: 'record' | 'channel' | 'member' = 'record'): string {
  if (form === 'member') return p.userId ?? `credential:${p.credentialId}`;
  if (!p.userId) return `${p.via}:${p.credentialId}`;
  return form === 'record'
    ? `user:${p.userId} via ${p.via} (${p.credentialId})`
    : `user:${p.userId} via ${p.via}`;
}

/** The verified principal of the call being served, set by the auth interceptor. */
export const principalKey = createContextKey<Principal | undefined>(undefined, {
  description: 'verified caller principal',
});

/** Generates an Ed25519 key pair as PEM strings (for development and tests). */
export async function generatePrincipalKeys(): Promise<{ privateKeyPem: string; publicKeyPem: string }> {
  const { privateKey, publicKey } = await generateKeyPair(ALG, { crv: 'Ed25519', extractable: true });
  return { privateKeyPem: await exportPKCS8(privateKey), publicKeyPem: await exportSPKI(publicKey) };
}

export interface PrincipalSigner {
  /** Signs `principal` for a call to `audience` (a service name). */
  sign(principal: Principal, audience: string): Promise<string>;
}

/** Cached tokens are reused while at least this much of their life is left. */
const REUSE_MARGIN_SECONDS = 20;
const CACHE_LIMIT = 10_000;

/**
 * createPrincipalSigner loads a private key (PKCS#8 PEM) that signs as `issuer`. A token is
 * reused for the same principal and audience while it has more than 20 s left: signing is the
 * gateway's largest cost per internal call, and the token says the same thing.
 */
export async function createPrincipalSigner(
  privateKeyPem: string,
  issuer: string = GATEWAY_ISSUER,
  now = () => Date.now(),
): Promise<PrincipalSigner> {
  const key = await importPKCS8(privateKeyPem, ALG);
  const cache = new Map<string, { token: string; exp: number }>();
  return {
    async sign(principal, audience) {
      const cacheKey = JSON.stringify([
        audience,
        principal.workspaceId,
        principal.credentialId,
        principal.userId,
        principal.role,
        principal.scopes,
        principal.via,
      ]);
      const nowSeconds = Math.floor(now() / 1000);
      const hit = cache.get(cacheKey);
      if (hit !== undefined && hit.exp - nowSeconds > REUSE_MARGIN_SECONDS) return hit.token;
      const exp = nowSeconds + PRINCIPAL_TTL_SECONDS;
      const token = await new SignJWT({
        ws: principal.workspaceId,
        role: principal.role,
        scopes: principal.scopes,
        uid: principal.userId,
        via: principal.via,
      })
        .setProtectedHeader({ alg: ALG })
        .setIssuer(issuer)
        .setAudience(audience)
        .setSubject(principal.credentialId)
        .setIssuedAt(nowSeconds)
        .setExpirationTime(exp)
        .sign(key);
      if (cache.size >= CACHE_LIMIT) cache.clear();
      cache.set(cacheKey, { token, exp });
      return token;
    },
  };
}

export interface PrincipalVerifier {
  /**
   * Verifies a token addressed to this service; throws when it is invalid, expired or misaddressed,
   * or when its issuer may not make `method` here (`<package>.<Service>/<Method>`, the trust
   * table's `methods`; a token of an issuer limited to some calls is refused without one).
   */
  verify(token: string, method?: string): Promise<Principal>;
}

/** Every role a member of a workspace may have. */
export const ROLES: readonly Role[] = ['admin', 'editor', 'viewer'];
const SCOPES: readonly string[] = ['read', 'write'];

/**
 * createPrincipalVerifier trusts the given issuers' public keys (SPKI PEM) for tokens addressed
 * to service `audience`. A plain string is the gateway's key alone. What a token from each issuer
 * may claim is the trust table's (trust.ts); a key for an issuer the table does not let `audience`
 * accept is refused here, before any token is.
 */
export async function createPrincipalVerifier(
  trusted: string | Readonly<Record<string, string>>,
  audience: string,
  now = () => Date.now(),
): Promise<PrincipalVerifier> {
  const pems = typeof trusted === 'string' ? { [GATEWAY_ISSUER]: trusted } : trusted;
  const rules = trustRules(audience);
  const keys = new Map<string, Awaited<ReturnType<typeof importSPKI>>>();
  for (const [issuer, pem] of Object.entries(pems)) {
    if (!rules.has(issuer)) throw new Error(`the trust table does not let ${audience} accept ${issuer}`);
    keys.set(issuer, await importSPKI(pem, ALG));
  }
  // Tokens already verified, by their exact text, until they expire: the signature cannot
  // change, so only the expiry is checked again.
  const verified = new Map<string, { principal: Principal; exp: number; methods?: readonly string[] }>();
  // Checked on every call, cached or not: one token may be sent to several of the service's calls.
  const mayCall = (entry: { methods?: readonly string[] }, iss: string, method: string | undefined) => {
    if (entry.methods !== undefined && (method === undefined || !entry.methods.includes(method)))
      throw new Error(`principal token from ${iss} may not call ${method ?? '(no call named)'}`);
  };
  return {
    async verify(token, method) {
      const hit = verified.get(token);
      if (hit !== undefined) {
        if (hit.exp * 1000 > now()) {
          mayCall(hit, String(decodeJwt(token).iss), method);
          return hit.principal;
        }
        verified.delete(token);
      }
      const { principal, methods } = await verifyToken(token);
      const { exp = 0, iss } = decodeJwt(token);
      if (verified.size >= CACHE_LIMIT) verified.clear();
      verified.set(token, { principal, exp, ...(methods === undefined ? {} : { methods }) });
      mayCall({ ...(methods === undefined ? {} : { methods }) }, String(iss), method);
      return principal;
    },
  };

  /** The token's principal, and the calls its edge of the trust table limits it to (if any). */
  async function verifyToken(token: string): Promise<{ principal: Principal; methods?: Trust['methods'] }> {
    const claimed = decodeJwt(token).iss;
    const key = claimed === undefined ? undefined : keys.get(claimed);
    if (claimed === undefined || key === undefined)
      throw new Error('principal token from an untrusted issuer');
    const { payload } = await jwtVerify(token, key, {
      issuer: claimed,
      audience,
      algorithms: [ALG],
      currentDate: new Date(now()),
    });
    const { ws, role, scopes, uid, sub, via, iss } = payload;
    if (typeof ws !== 'string' || typeof sub !== 'string') throw new Error('principal token lacks ws or sub');
    if (typeof role !== 'string' || !(ROLES as readonly string[]).includes(role))
      throw new Error('principal token has no valid role');
    if (!Array.isArray(scopes) || !scopes.every((s) => typeof s === 'string' && SCOPES.includes(s))) {
      throw new Error('principal token has invalid scopes');
    }
    // Present: only issuers the table allows have a key. The channel picks the issuer's edge.
    const rule = typeof via === 'string' ? edgeFor(rules.get(String(iss)), via) : undefined;
    if (rule === undefined) {
      throw new Error(`principal token from ${String(iss)} may not claim channel ${String(via)}`);
    }
    const beyond = scopes.find((s) => !rule.scopes.includes(s as Scope));
    if (beyond !== undefined)
      throw new Error(`principal token from ${String(iss)} may not claim scope ${beyond}`);
    const principal: Principal = {
      workspaceId: ws,
      credentialId: sub,
      userId: typeof uid === 'string' ? uid : null,
      role: role as Role,
      scopes: scopes as Scope[],
      via: via as Channel,
    };
    return rule.methods === undefined ? { principal } : { principal, methods: rule.methods };
  }
}
