/**
 * Internal authentication. The gateway signs a short-lived principal token (an EdDSA JWT) for
 * every call it makes to a service, naming the workspace, credential, user, role and scopes it
 * authenticated; each service verifies it before any handler runs. No service trusts a caller
 * because of where it sits on the network.
 */
import { createContextKey } from '@connectrpc/connect';
import { exportPKCS8, exportSPKI, generateKeyPair, importPKCS8, importSPKI, jwtVerify, SignJWT } from 'jose';

export type Role = 'admin' | 'editor' | 'viewer';
export type Scope = 'read' | 'write';

/** Who a call is made for. */
export interface Principal {
  workspaceId: string;
  /** The MCP credential, dashboard session or operator command that authenticated. */
  credentialId: string;
  userId: string | null;
  role: Role;
  scopes: Scope[];
}

const ISSUER = 'adsmcp-gateway';
const ALG = 'EdDSA';
/** Lifetime of a principal token: long enough for one call, short enough to be useless if leaked. */
export const PRINCIPAL_TTL_SECONDS = 60;

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

/** createPrincipalSigner loads the gateway's private key (PKCS#8 PEM). */
export async function createPrincipalSigner(privateKeyPem: string): Promise<PrincipalSigner> {
  const key = await importPKCS8(privateKeyPem, ALG);
  return {
    sign(principal, audience) {
      return new SignJWT({
        ws: principal.workspaceId,
        role: principal.role,
        scopes: principal.scopes,
        uid: principal.userId,
      })
        .setProtectedHeader({ alg: ALG })
        .setIssuer(ISSUER)
        .setAudience(audience)
        .setSubject(principal.credentialId)
        .setIssuedAt()
        .setExpirationTime(`${PRINCIPAL_TTL_SECONDS}s`)
        .sign(key);
    },
  };
}

export interface PrincipalVerifier {
  /** Verifies a token addressed to this service; throws when it is invalid, expired or misaddressed. */
  verify(token: string): Promise<Principal>;
}

const ROLES: readonly string[] = ['admin', 'editor', 'viewer'];
const SCOPES: readonly string[] = ['read', 'write'];

/** createPrincipalVerifier loads the gateway's public key (SPKI PEM) for service `audience`. */
export async function createPrincipalVerifier(
  publicKeyPem: string,
  audience: string,
): Promise<PrincipalVerifier> {
  const key = await importSPKI(publicKeyPem, ALG);
  return {
    async verify(token) {
      const { payload } = await jwtVerify(token, key, { issuer: ISSUER, audience, algorithms: [ALG] });
      const { ws, role, scopes, uid, sub } = payload;
      if (typeof ws !== 'string' || typeof sub !== 'string')
        throw new Error('principal token lacks ws or sub');
      if (typeof role !== 'string' || !ROLES.includes(role))
        throw new Error('principal token has no valid role');
      if (!Array.isArray(scopes) || !scopes.every((s) => typeof s === 'string' && SCOPES.includes(s))) {
        throw new Error('principal token has invalid scopes');
      }
      return {
        workspaceId: ws,
        credentialId: sub,
        userId: typeof uid === 'string' ? uid : null,
        role: role as Role,
        scopes: scopes as Scope[],
      };
    },
  };
}
