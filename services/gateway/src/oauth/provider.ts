/**
 * The OAuth 2.1 authorization server, built on oidc-provider: authorization code with PKCE (S256),
 * refresh tokens rotated on use, short-lived opaque access tokens bound to this MCP resource
 * (RFC 8707), `iss` in the authorization response (RFC 9207), dynamic client registration. Its
 * state lives in the gateway's schema (pg-adapter.ts); sign-in and consent are the dashboard's
 * (interaction-routes.ts).
 */
import type { Queryable } from '@adsmcp/runtime/db';
import type { SafeFetch } from '@adsmcp/runtime/safe-fetch';
import Provider, {
  type ClientMetadata,
  type Configuration,
  type ErrorOut,
  errors,
  type KoaContextWithOIDC,
  type ResourceServer,
} from 'oidc-provider';
import { esc, page } from '../dashboard/html.ts';
import { unstorablePath } from '../storable-text.ts';
import { cookieKeys, signingJwk } from './keys.ts';
import { providerFetch } from './outbound-fetch.ts';
import { pgAdapter } from './pg-adapter.ts';
import { redirectUrisProblem } from './redirect-uris.ts';

export const OAUTH_SCOPES = ['read', 'write'] as const;
/** Lifetimes in seconds. */
const ACCESS_TOKEN_TTL = 10 * 60;
const REFRESH_TOKEN_TTL = 30 * 24 * 3600;
/** A grant lives as long as a refresh token from its approval; its connection expires with it. */
export const GRANT_TTL_SECONDS = REFRESH_TOKEN_TTL;
/** An authorization code must be redeemed within this of being issued. */
export const AUTHORIZATION_CODE_TTL_SECONDS = 60;
/**
 * An authorization request (its interaction: sign-in, consent, then the code) lives this long from
 * when it starts; approving does not extend it (oidc-provider keeps the interaction's expiry).
 */
export const INTERACTION_TTL_SECONDS = 15 * 60;

export const OAUTH_ROUTES = {
  authorization: '/oauth/authorize',
  token: '/oauth/token',
  registration: '/oauth/register',
  revocation: '/oauth/revoke',
  jwks: '/oauth/jwks',
  userinfo: '/oauth/userinfo',
} as const;

/** Limits on the client metadata a person is shown (the consent page, the connections list). */
export const CLIENT_NAME_MAX = 200;
export const CLIENT_URI_MAX = 2000;
export const CONTACTS_MAX = 10;
/** oidc-provider reads at most this many bytes of a request body (lib/shared/selective_body.js). */
export const OAUTH_BODY_MAX_BYTES = 56 * 1024;

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
  const provider = new Provider(o.publicUrl, configuration(db, o));
  provider.proxy = o.trustProxy;
  provider.use(withoutOpenidScope);
  return provider;
}

/** oidc-provider's configuration: what is offered, for how long, and the hooks into this gateway. */
function configuration(db: Queryable, o: ProviderOptions): Configuration {
  return {
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
      AuthorizationCode: AUTHORIZATION_CODE_TTL_SECONDS,
      RefreshToken: REFRESH_TOKEN_TTL,
      Grant: GRANT_TTL_SECONDS,
      Interaction: INTERACTION_TTL_SECONDS,
      Session: 12 * 3600,
    },
    // MCP clients rarely ask for offline_access; a client registered for refresh tokens gets them.
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    // Revoking any of a grant's tokens at /oauth/revoke ends the whole grant (the library would
    // keep the grant for an access token but still delete its refresh tokens, leaving a
    // connection listed active that nothing can use): `grant.revoked` then revokes the connection.
    revokeGrantPolicy: () => true,
    renderError: renderRefusal,
    fetch: providerFetch(o.safeFetch),
    extraClientMetadata: {
      // software_id is only the hook: the validator sees the whole metadata once per registration.
      properties: ['software_id'],
      validator: validateClientMetadata,
    },
    features: features(o.resource),
  };
}

function features(resource: string): Configuration['features'] {
  return {
    devInteractions: { enabled: false },
    userinfo: { enabled: false },
    // Only what docs/oauth.md describes is served and advertised: no pushed authorization
    // requests (their endpoint is not routed), no DPoP, no RP-initiated logout page.
    pushedAuthorizationRequests: { enabled: false },
    dPoP: { enabled: false },
    rpInitiatedLogout: { enabled: false },
    revocation: { enabled: true },
    // A client_id that is an https URL names its own metadata document, fetched (safely) and
    // cached between 30 s and 5 min as its HTTP caching headers say.
    clientIdMetadataDocument: { enabled: true, ack: 'draft-02', cacheDuration: { min: 30, max: 300 } },
    registration: { enabled: true, initialAccessToken: false, issueRegistrationAccessToken: false },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx: KoaContextWithOIDC, indicator: string) =>
        resourceServer(resource, indicator),
    },
  };
}

/** The one resource tokens are issued for: this MCP endpoint, with opaque short-lived tokens. */
function resourceServer(resource: string, indicator: string): ResourceServer {
  if (indicator !== resource) {
    throw new errors.InvalidTarget(`resource must be ${resource} (got ${indicator})`);
  }
  return {
    scope: OAUTH_SCOPES.join(' '),
    audience: resource,
    accessTokenTTL: ACCESS_TOKEN_TTL,
    accessTokenFormat: 'opaque',
  };
}

/** A failed authorization request a person sees: the dashboard's frame, the error escaped. */
function renderRefusal(ctx: KoaContextWithOIDC, out: ErrorOut): void {
  ctx.type = 'html';
  ctx.body = page(
    'Sign-in request refused',
    `<section><h2>This sign-in request was refused</h2><p class="error" role="alert">${esc(out.error)}: ${esc(out.error_description ?? '')}</p><p>Start the connection again from your MCP client.</p></section>`,
  );
}

/** Refuses a registration whose metadata cannot be stored, redirects badly or is too long to show. */
function validateClientMetadata(
  _ctx: KoaContextWithOIDC | undefined,
  key: string,
  _value: unknown,
  metadata: ClientMetadata,
): void {
  if (key !== 'software_id') return;
  const problem =
    unstorableProblem(metadata) ??
    redirectUrisProblem(metadata.redirect_uris) ??
    displayedMetadataProblem(metadata);
  if (problem !== undefined) throw new errors.InvalidClientMetadata(problem);
}

/**
 * No OpenID Connect is offered (no ID tokens are issued for our scopes), but the library always
 * lists `openid`: the metadata names only the scopes docs/oauth.md describes.
 */
const withoutOpenidScope: Parameters<Provider['use']>[0] = async (ctx, next) => {
  await next();
  if (ctx.oidc?.route !== 'discovery') return;
  const body = ctx.body as { scopes_supported?: string[] } | undefined;
  if (body?.scopes_supported) body.scopes_supported = body.scopes_supported.filter((s) => s !== 'openid');
};

/** Why the metadata cannot be stored: a field holding what PostgreSQL cannot take (unstorablePath). */
function unstorableProblem(metadata: Record<string, unknown>): string | undefined {
  const where = unstorablePath(metadata);
  return where === undefined ? undefined : `${where.path} ${where.rule}`;
}

/** Text length in code points, as the dashboard counts a connection's name. */
const length = (text: string) => [...text].length;

/**
 * The first problem with the metadata a person is shown or that is stored for display, or
 * undefined: client_name (1 to 200 characters), the URIs (2000 each) and contacts (at most 10).
 */
export function displayedMetadataProblem(metadata: Record<string, unknown>): string | undefined {
  const name = metadata.client_name;
  if (name !== undefined && (typeof name !== 'string' || length(name) < 1 || length(name) > CLIENT_NAME_MAX))
    return `client_name must be 1 to ${CLIENT_NAME_MAX} characters (got ${typeof name === 'string' ? length(name) : typeof name})`;
  for (const key of ['client_uri', 'logo_uri', 'policy_uri', 'tos_uri', 'jwks_uri'] as const) {
    const v = metadata[key];
    if (typeof v === 'string' && length(v) > CLIENT_URI_MAX)
      return `${key} must be at most ${CLIENT_URI_MAX} characters (got ${length(v)})`;
  }
  const uris = Array.isArray(metadata.redirect_uris) ? metadata.redirect_uris : [];
  for (const uri of uris)
    if (typeof uri === 'string' && length(uri) > CLIENT_URI_MAX)
      return `redirect_uris: each must be at most ${CLIENT_URI_MAX} characters (one has ${length(uri)})`;
  const contacts = metadata.contacts;
  if (Array.isArray(contacts)) {
    if (contacts.length > CONTACTS_MAX)
      return `contacts: at most ${CONTACTS_MAX} are accepted (got ${contacts.length})`;
    for (const c of contacts)
      if (typeof c === 'string' && length(c) > 320)
        return `contacts: each must be at most 320 characters (one has ${length(c)})`;
  }
  return undefined;
}
