/**
 * Mounts the authorization server on the gateway: oidc-provider answers its own endpoints
 * (/oauth/*) and discovery (/.well-known/oauth-authorization-server, /.well-known/openid-configuration);
 * the dashboard answers sign-in and consent (consent-routes.ts).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { OAuthAccessTokens } from '../auth/authenticate.ts';
import { RateLimiter } from '../auth/rate-limiter.ts';
import { LOCAL_TIME_SCRIPT_SRC } from '../dashboard/local-time.ts';
import type { GatewayDeps } from '../deps.ts';
import { insertAudit } from '../store/identity-store.ts';
import { oauthAccessTokens } from './access-tokens.ts';
import { registerConsentRoutes } from './consent-routes.ts';
import { revokeGrantCredential } from './oauth-store.ts';
import { createProvider, OAUTH_BODY_MAX_BYTES, OAUTH_ROUTES, OAUTH_SCOPES } from './provider.ts';

/**
 * Headers on everything the provider answers: no framing, no sniffing, no referrer (a code may be
 * in the URL), and a policy that allows no script but one the provider hashes into it.
 */
const OAUTH_SECURITY_HEADERS = {
  'content-security-policy': `default-src 'none'; script-src ${LOCAL_TIME_SCRIPT_SRC}; style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; frame-ancestors 'none'`,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

export interface OAuthOptions {
  publicUrl: string;
  allowedOrigins: readonly string[];
  keyMaterial: string;
  trustProxy: boolean;
  /** Client registrations allowed per address: a refill rate per second and a burst. */
  registrationsPerSecond?: number;
  registrationsBurst?: number;
}

async function endConnection(deps: GatewayDeps, grantId: string): Promise<void> {
  const revoked = await revokeGrantCredential(deps.pool, grantId);
  if (revoked === undefined) return;
  deps.forgetCredential?.(revoked.credential_id);
  await insertAudit(deps.pool, {
    workspaceId: revoked.workspace_id,
    actor: 'oauth',
    action: 'credential.revoked',
    target: revoked.credential_id,
    detail: { by: 'oauth grant ended' },
  });
}

/**
 * An authorization request naming none of our scopes asks for `read` besides (RFC 6749 §3.3 lets
 * the server pick a default): `scope` absent, or only scopes we do not offer (`profile`). The
 * provider grants only what a request names, so it would otherwise grant nothing and answer
 * access_denied after the person approved. The other scopes it names stay: the consent refuses
 * them (consent-routes.ts), so the client learns from the token's `scope` what it got.
 */
function defaultScope(req: FastifyRequest): void {
  if (req.method !== 'GET') return;
  const url = new URL(req.raw.url ?? '/', 'http://gateway.invalid');
  if (url.pathname !== OAUTH_ROUTES.authorization) return;
  const asked = (url.searchParams.get('scope') ?? '').split(' ').filter((s) => s !== '');
  if (asked.some((s) => (OAUTH_SCOPES as readonly string[]).includes(s))) return;
  url.searchParams.set('scope', [...asked, 'read'].join(' '));
  req.raw.url = `${url.pathname}${url.search}`;
}

/** What the rest of the gateway uses of the authorization server. */
export interface OAuthServer {
  /** How /mcp reads the access tokens it issued. */
  accessTokens: OAuthAccessTokens;
  /**
   * Ends the authorization server's sign-in in the browser that sent `req` (its session cookie),
   * unless it is `keep`'s: when the person signs out of the dashboard (no `keep`), or another
   * person signs in to it. Otherwise a client the signed-in person approved before would still
   * get codes in their name from that browser, without them there.
   */
  endSignIn(req: FastifyRequest, reply: FastifyReply, keep?: string): Promise<void>;
}

/** registerOAuth mounts the authorization server and returns what the gateway uses of it. */
export function registerOAuth(app: FastifyInstance, deps: GatewayDeps, o: OAuthOptions): OAuthServer {
  const resource = `${o.publicUrl}/mcp`;
  const provider = createProvider(deps.pool, {
    publicUrl: o.publicUrl,
    resource,
    keyMaterial: o.keyMaterial,
    trustProxy: o.trustProxy,
  });
  const registrations = new RateLimiter(o.registrationsPerSecond ?? 20 / 60, o.registrationsBurst ?? 20);
  const callback = provider.callback();
  // The provider ended a grant (one of its tokens revoked at /oauth/revoke, a code or a rotated
  // refresh token reused): the connection is revoked with it, audited, and listed so.
  provider.on('grant.revoked', (_ctx: unknown, grantId: string) => {
    endConnection(deps, grantId).catch((err: unknown) =>
      deps.logger.error({ err, grant_id: grantId }, 'revoking the connection of an ended OAuth grant failed'),
    );
  });

  app.register(async (scope) => {
    // The provider reads its own request bodies: nothing here may consume them first.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_req, _payload, done) => done(null));

    const forward = async (req: FastifyRequest, reply: FastifyReply) => {
      // The provider would answer "failed to parse the request body"; say which limit it is.
      const length = Number(req.headers['content-length'] ?? 0);
      if (length > OAUTH_BODY_MAX_BYTES) {
        return reply.code(413).send({
          error: 'invalid_request',
          error_description: `the request body is ${length} bytes; the limit is ${OAUTH_BODY_MAX_BYTES} bytes (56 KiB)`,
        });
      }
      if (req.method === 'POST' && req.url.split('?')[0] === OAUTH_ROUTES.registration) {
        const limit = registrations.take(req.ip);
        if (!limit.allowed) {
          return reply
            .code(429)
            .header('retry-after', String(limit.retryAfterSeconds))
            .send({
              error: 'too_many_requests',
              error_description: `too many client registrations from this address: retry after ${limit.retryAfterSeconds} s`,
            });
        }
      }
      defaultScope(req);
      // The provider's own pages (an authorization error) get the dashboard's protections. Its
      // script-src names no script of ours; the provider adds the hash of any it writes inline.
      for (const [name, value] of Object.entries(OAUTH_SECURITY_HEADERS)) reply.raw.setHeader(name, value);
      reply.hijack();
      await callback(req.raw, reply.raw);
    };
    scope.all('/oauth/*', forward);
    scope.get('/.well-known/openid-configuration', forward);
    // RFC 8414 metadata is the same document at its own well-known path.
    scope.get('/.well-known/oauth-authorization-server', async (req, reply) => {
      req.raw.url = '/.well-known/openid-configuration';
      return forward(req, reply);
    });
  });

  registerConsentRoutes(app, deps, provider, {
    publicUrl: o.publicUrl,
    allowedOrigins: o.allowedOrigins,
    resource,
  });
  return {
    accessTokens: oauthAccessTokens(provider, resource),
    async endSignIn(req, reply, keep) {
      // The session named by the browser's signed cookie; none (a new, unsaved one) when absent.
      const session = await provider.Session.get({ req: req.raw, res: reply.raw } as never);
      if (session.accountId !== undefined && session.accountId !== keep) await session.destroy();
    },
  };
}
