/**
 * Every fetch the authorization server makes (a client's metadata document, a jwks_uri) goes
 * through the project's safe fetcher: https only, public addresses only, bounded in size and
 * time. oidc-provider wants a WHATWG fetch; this adapts one to the other.
 */
import { createSafeFetcher, type SafeFetch, SafeFetchError } from '@adsmcp/runtime/safe-fetch';

/** Enough for a client metadata document or a key set. */
const MAX_BYTES = 64 * 1024;

export function providerFetch(
  safeFetch: SafeFetch = createSafeFetcher(),
): (input: URL | string | Request, init?: RequestInit) => Promise<Response> {
  return async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
    if (method !== 'GET') {
      throw new TypeError(`the authorization server only reads remote documents (asked to ${method})`);
    }
    try {
      const res = await safeFetch(url, { maxBytes: MAX_BYTES, accept: 'application/json' });
      return new Response(res.status === 204 || res.status === 304 ? null : new Uint8Array(res.body), {
        status: res.status,
        headers: res.headers,
      });
    } catch (err) {
      // The provider reports a failed fetch as the client's fault; the reason says which rule.
      if (err instanceof SafeFetchError) throw new TypeError(`${url}: ${err.message}`, { cause: err });
      throw err;
    }
  };
}
