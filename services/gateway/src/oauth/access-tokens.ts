/** How the gateway's auth guard reads the authorization server's access tokens. */
import type Provider from 'oidc-provider';
import type { OAuthAccessTokens } from '../auth/authenticate.ts';
import { hashToken } from '../domain/credentials.ts';

/**
 * The hash under which a grant is recorded as a credential (its connection in the dashboard):
 * no token has this value, it only names the grant.
 */
export function grantCredentialHash(grantId: string): Buffer {
  return hashToken(`oauth-grant:${grantId}`);
}

/**
 * oauthAccessTokens admits an access token the provider issued, unexpired, for `resource`; the
 * credential it maps to then decides the caller (and whether it was revoked), acting with no more
 * than the token's scopes.
 */
export function oauthAccessTokens(provider: Provider, resource: string): OAuthAccessTokens {
  return {
    async credentialHash(token) {
      const found = await provider.AccessToken.find(token);
      if (found === undefined || found.isExpired) {
        return { ok: false, error: 'invalid_token', description: 'the access token is not valid' };
      }
      const audiences = Array.isArray(found.aud) ? found.aud : [found.aud];
      if (!audiences.includes(resource)) {
        return {
          ok: false,
          error: 'invalid_token',
          description: `the access token is for another resource, not ${resource}`,
        };
      }
      // The token's own scopes: its connection may hold more than the client asked this token for.
      return { ok: true, hash: grantCredentialHash(found.grantId), scopes: (found.scope ?? '').split(' ') };
    },
  };
}
