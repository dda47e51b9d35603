/**
 * The client side of the OAuth flow for the tests: an MCP client's redirect endpoint on loopback,
 * which records every authorization response it receives, and clients whose state the SDK keeps in
 * memory (its `OAuthClientProvider` interface), each registered with that endpoint.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Page } from 'playwright-core';

/** A client's state, kept in memory as the SDK's provider interface asks. */
export class MemoryOAuthClient implements OAuthClientProvider {
  constructor(
    readonly redirectUrl: string,
    readonly name = 'E2E Agent',
    private readonly grantTypes = ['authorization_code', 'refresh_token'],
  ) {}
  info: OAuthClientInformationMixed | undefined;
  stored: OAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | undefined;
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.name,
      redirect_uris: [this.redirectUrl],
      grant_types: this.grantTypes,
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.stored;
  }
  saveTokens(tokens: OAuthTokens) {
    this.stored = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

export interface OAuthCallback {
  /** `http://127.0.0.1:<port>/callback`. */
  redirectUrl: string;
  /** Every authorization response received, in order. */
  responses: URL[];
  /** A new client redirected here. */
  client(name?: string, grantTypes?: string[]): MemoryOAuthClient;
  close(): Promise<void>;
}

/** startOAuthCallback listens on loopback for the authorization responses of the clients it makes. */
export async function startOAuthCallback(): Promise<OAuthCallback> {
  const responses: URL[] = [];
  let redirectUrl = '';
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', redirectUrl);
    // Only the redirect URL's own path is an authorization response: the browser also asks this
    // server for other things (its favicon, after the page loads), and counting those would put
    // a response without a code where a test expects the next one.
    if (url.pathname !== '/callback') {
      res.writeHead(404).end();
      return;
    }
    responses.push(url);
    res.writeHead(200, { 'content-type': 'text/plain' }).end('You may close this window.');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  redirectUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`;
  return {
    redirectUrl,
    responses,
    client: (name, grantTypes) => new MemoryOAuthClient(redirectUrl, name, grantTypes),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * signInToConsent opens an authorization request (`url`) in `page`, signs `who` in at the
 * dashboard's sign-in page it is sent to, and waits for the consent page it then comes back to.
 */
export async function signInToConsent(
  page: Page,
  url: URL | string,
  who: { email: string; password: string },
): Promise<void> {
  await page.goto(url.toString());
  await page.waitForURL(/\/dashboard\/login\?next=/);
  await page.fill('#email', who.email);
  await page.fill('#password', who.password);
  await Promise.all([page.waitForURL(/\/dashboard\/oauth\/[^/]+$/), page.click('button[type=submit]')]);
}
