/**
 * The OAuth 2.1 authorization server, built on oidc-provider: authorization code with PKCE (S256),
 * refresh tokens rotated on use, short-lived opaque access tokens bound to this MCP resource
 * (RFC 8707), `iss` in the authorization response (RFC 9207), dynamic client registration. Its
 * state lives in the gateway's schema (pg-adapter.ts); sign-in and consent are the dashboard's
 * (interaction-routes.ts).
 */
import type { Queryable } from '@adsmcp/runtime/db';
import type { SafeFetch } from '@adsmcp/runtime/safe-fetch';
import Provider, { errors, type KoaContextWithOIDC } from 'oidc-provider';
import { esc, page } from '../dashboard/html.ts';
import { cookieKeys, signingJwk } from './keys.ts';
import { providerFetch } from './outbound-fetch.ts';
import { pgAdapter } from './pg-adapter.ts';
import { redirectUrisProblem } from './redirect-uris.ts';

export const OAUTH_SCOPES = ['read', 'write'] as const;
/** Lifetimes in seconds. */
const ACCESS_TOKEN_TTL = 10 * 60;
const REFRESH_TOKEN_TTL = 30 * 24 * 3600;

export const OAUTH_ROUTES = {
  authorization: '/oauth/authorize',
  token: '/oauth/token',
  registration: '/oauth/register',
  revocation: '/oauth/revoke',
  jwks: '/oauth/jwks',
  userinfo: '/oauth/userinfo',
  end_session: '/oauth/session/end',
} as const;

export interface ProviderOptions {
  publicUrl: string;
  /** The protected resource: `{PUBLIC_URL}/mcp`. */
  resource: string;
  /** Secret the provider's cookie and signing keys are derived from. */
  keyMaterial: string;
  trustProxy: boolean;
  /** Outbound fetches (client metadata documents); the safe fetcher unless a test gives its own. */
  safeFetch?: SafeFetch;
}

export function createProvider(db: Queryable, o: ProviderOptions): Provider {
  const provider = new Provider(o.publicUrl, {
    adapter: pgAdapter(db),
    findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
    scopes: [...OAUTH_SCOPES],
    claims: {},
    responseTypes: ['code'],
    clientAuthMethods: ['none', 'client_secret_basic', 'client_secret_post'],
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      id_token_signed_response_alg: 'ES256',
    },
    enabledJWA: { idTokenSigningAlgValues: ['ES256'] },
    jwks: { keys: [signingJwk(o.keyMaterial)] },
    cookies: { keys: cookieKeys(o.keyMaterial) },
    pkce: { required: () => true },
    routes: OAUTH_ROUTES,
    interactions: { url: (_ctx, interaction) => `/dashboard/oauth/${interaction.uid}` },
    ttl: {
      AccessToken: ACCESS_TOKEN_TTL,
      AuthorizationCode: 60,
      RefreshToken: REFRESH_TOKEN_TTL,
      Grant: REFRESH_TOKEN_TTL,
      Interaction: 15 * 60,
      Session: 12 * 3600,
    },
    // MCP clients rarely ask for offline_access; a client registered for refresh tokens gets them.
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    // A failed authorization request a person sees: the dashboard's frame, the error escaped.
    renderError: (ctx, out) => {
      ctx.type = 'html';
      ctx.body = page(
        'Sign-in request refused',
        `<section><h2>This sign-in request was refused</h2><p class="error" role="alert">${esc(out.error)}: ${esc(out.error_description ?? '')}</p><p>Start the connection again from your MCP client.</p></section>`,
      );
    },
    fetch: providerFetch(o.safeFetch),
    extraClientMetadata: {
      // software_id is only the hook: the validator sees the whole metadata once per registration.
      properties: ['software_id'],
      validator: (_ctx, key, _value, metadata) => {
        if (key !== 'software_id') return;
        const problem = redirectUrisProblem(metadata.redirect_uris);
        if (problem !== undefined) throw new errors.InvalidClientMetadata(problem);
      },
    },
    features: {
      devInteractions: { enabled: false },
      userinfo: { enabled: false },
      revocation: { enabled: true },
      // A client_id that is an https URL names its own metadata document, fetched (safely) and
      // cached between 30 s and 5 min as its HTTP caching headers say.
      clientIdMetadataDocument: { enabled: true, ack: 'draft-02', cacheDuration: { min: 30, max: 300 } },
      registration: { enabled: true, initialAccessToken: false, issueRegistrationAccessToken: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => o.resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: KoaContextWithOIDC, indicator: string) => {
          if (indicator !== o.resource) {
            throw new errors.InvalidTarget(`resource must be ${o.resource} (got ${indicator})`);
          }
          return {
            scope: OAUTH_SCOPES.join(' '),
            audience: o.resource,
            accessTokenTTL: ACCESS_TOKEN_TTL,
            accessTokenFormat: 'opaque',
          };
        },
      },
    },
  });
  provider.proxy = o.trustProxy;
  return provider;
}
