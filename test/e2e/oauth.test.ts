/**
 * OAuth 2.1 as a stock MCP client uses it against the whole stack: the v1 SDK's client flow
 * (discovery, dynamic registration, PKCE) with the consent clicked in Chromium, then tools called
 * through the official MCP client with the issued token; refresh rotation, revocation, a token for
 * another resource, and redirect URIs that are refused.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { launchBrowser } from '@adsmcp/testkit/browser';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, rawPost } from '@adsmcp/testkit/mcp-clients';
import {
  type MemoryOAuthClient,
  type OAuthCallback,
  signInToConsent,
  startOAuthCallback,
} from '@adsmcp/testkit/oauth-client';
import type { SeedResult, Stack } from '@adsmcp/testkit/stack';
import { auth, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import pg from 'pg';
import type { Browser, BrowserContext, Page } from 'playwright-core';

let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
let browser: Browser;
/** The client's loopback redirect endpoint: it records each authorization response it receives. */
let callback: OAuthCallback;
let people = 0;

/** A new person in the demo workspace. */
async function person(): Promise<{ email: string; password: string }> {
  people += 1;
  const email = `oauth-${people}@demo.example`;
  const password = `oauth-password-${people}`;
  await stack.admin([
    'add-user',
    '--workspace',
    seed.workspaceId,
    '--email',
    email,
    '--password',
    password,
    '--role',
    'editor',
  ]);
  return { email, password };
}

/** A dynamic client registration of a public client at the callback, with `metadata` besides. */
function registerClient(metadata: Record<string, unknown>): Promise<Response> {
  return fetch(`${stack.gatewayUrl}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      redirect_uris: [callback.redirectUrl],
      token_endpoint_auth_method: 'none',
      ...metadata,
    }),
  });
}

/**
 * Runs the SDK's flow to the end: discovery and registration, the authorization request opened in
 * Chromium where the person signs in and approves, then the code exchanged for tokens.
 */
async function connectThroughOAuth(
  client: MemoryOAuthClient,
  scope?: string,
): Promise<{ tokens: OAuthTokens; consent: string }> {
  assert.equal(await auth(client, { serverUrl: stack.mcpUrl, scope }), 'REDIRECT');
  const url = client.authorizationUrl;
  assert.ok(url, 'the SDK asked for the authorization page');
  assert.equal(url.searchParams.get('code_challenge_method'), 'S256');
  const who = await person();
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await signInToConsent(page, url, who);
    const consent = await page.locator('section.consent').innerText();
    const before = callback.responses.length;
    await Promise.all([
      page.waitForURL((u) => u.toString().startsWith(callback.redirectUrl)),
      page.click('#approve'),
    ]);
    const response = callback.responses[before];
    assert.ok(response, 'the client received the authorization response');
    assert.equal(response.searchParams.get('iss'), stack.gatewayUrl, 'RFC 9207: the issuer is named');
    const code = response.searchParams.get('code');
    assert.ok(code, `an authorization code came back (${response})`);
    assert.equal(await auth(client, { serverUrl: stack.mcpUrl, authorizationCode: code }), 'AUTHORIZED');
    assert.ok(client.stored, 'the SDK stored the tokens');
    return { tokens: client.stored, consent };
  } finally {
    await context.close();
  }
}

/** A pasted token with both scopes, of a new viewer of the demo workspace. */
async function viewerToken(): Promise<string> {
  const email = `viewer-${randomUUID()}@demo.example`;
  await stack.admin([
    'add-user',
    '--workspace',
    seed.workspaceId,
    '--email',
    email,
    '--password',
    'viewer-password-1',
    '--role',
    'viewer',
  ]);
  const args = ['create-token', '--workspace', seed.workspaceId, '--user', email, '--scopes', 'read,write'];
  return (JSON.parse(await stack.admin(args)) as { token: string }).token;
}

function tokenRequest(form: Record<string, string>): Promise<Response> {
  return fetch(`${stack.gatewayUrl}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
  });
}

async function mcpStatus(token: string): Promise<{ status: number; challenge: string | null }> {
  const res = await rawPost(
    stack.mcpUrl,
    {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'ads_get_connection_context', arguments: {} },
    },
    { authorization: `Bearer ${token}` },
  );
  return { status: res.status, challenge: res.headers.get('www-authenticate') };
}

interface ListedConnection {
  credential_id: string;
  name: string;
  revoked_at: string | null;
  expires_at: string | null;
}

/** The connections named `name`, as `admin list-tokens` lists them. */
async function listedConnections(name: string): Promise<ListedConnection[]> {
  const all = JSON.parse(
    await stack.admin(['list-tokens', '--workspace', seed.workspaceId]),
  ) as ListedConnection[];
  return all.filter((c) => c.name === name);
}

/** How many gateway audit rows of `action` name `oauthClient` in their detail, or have `target`. */
async function auditCount(action: string, where: { oauthClient?: string; target?: string }): Promise<number> {
  const db = new pg.Client({ connectionString: e2e.db.url });
  await db.connect();
  try {
    const { rows } = await db.query<{ n: string }>(
      `SELECT count(*) AS n FROM gateway.audit_log
        WHERE action = $1 AND ($2::text IS NULL OR detail->>'oauth_client' = $2) AND ($3::text IS NULL OR target = $3)`,
      [action, where.oauthClient ?? null, where.target ?? null],
    );
    return Number(rows[0]?.n ?? 0);
  } finally {
    await db.end();
  }
}

/**
 * The SDK's flow up to the consent page: a new person signed in in Chromium, looking at it. The
 * caller posts the forms (the browser context holds the session and interaction cookies).
 */
async function openConsent(
  client: MemoryOAuthClient,
): Promise<{ context: BrowserContext; page: Page; uid: string; csrf: string }> {
  assert.equal(await auth(client, { serverUrl: stack.mcpUrl }), 'REDIRECT');
  const url = client.authorizationUrl;
  assert.ok(url);
  const who = await person();
  const context = await browser.newContext();
  const page = await context.newPage();
  await signInToConsent(page, url, who);
  const uid = new URL(page.url()).pathname.split('/').pop() ?? '';
  const csrf = (await page.locator('input[name=csrf]').first().getAttribute('value')) ?? '';
  return { context, page, uid, csrf };
}

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '200' } });
  ({ stack, seed } = e2e);
  browser = await launchBrowser();
  callback = await startOAuthCallback();
});

after(async () => {
  await browser?.close();
  await callback?.close();
  await e2e?.stop();
});

describe('OAuth 2.1 for MCP clients', () => {
  test('the metadata names the authorization server, which serves its own at the well-known paths', async () => {
    const prm = (await (await fetch(`${stack.gatewayUrl}/.well-known/oauth-protected-resource`)).json()) as {
      authorization_servers: string[];
      resource: string;
    };
    assert.deepEqual(prm.authorization_servers, [stack.gatewayUrl]);
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      const res = await fetch(`${stack.gatewayUrl}${path}`);
      assert.equal(res.status, 200, path);
      const as = (await res.json()) as Record<string, unknown>;
      assert.equal(as.issuer, stack.gatewayUrl);
      assert.deepEqual(as.code_challenge_methods_supported, ['S256']);
      assert.equal(as.authorization_response_iss_parameter_supported, true);
      assert.equal(as.client_id_metadata_document_supported, true);
      assert.ok(String(as.registration_endpoint).startsWith(stack.gatewayUrl));
    }
  });

  test('a client connects through the SDK flow, the person consents in the browser, and its token calls tools', async () => {
    const client = callback.client();
    const { tokens, consent } = await connectThroughOAuth(client);
    assert.match(consent, /E2E Agent/);
    assert.match(consent, /Demo|demo/i, 'the workspace is named');
    assert.match(consent, /read: /);
    assert.match(consent, new RegExp(String(seed.accounts[0]?.account_id)), 'the ad accounts are listed');
    assert.ok(tokens.refresh_token, 'a refresh token was issued');
    const mcp = await connectClient('v1', stack.mcpUrl, tokens.access_token);
    try {
      const res = await mcp.callTool('ads_get_connection_context', {});
      assert.notEqual(res.isError, true, JSON.stringify(res.content));
      const accounts = await mcp.callTool('ads_list_accounts', {});
      assert.notEqual(accounts.isError, true, JSON.stringify(accounts.content));
    } finally {
      await mcp.close();
    }
    // The connections list (the dashboard's and the admin command's) shows the grant with the pasted tokens.
    const connections = JSON.parse(await stack.admin(['list-tokens', '--workspace', seed.workspaceId])) as {
      name: string;
      scopes: string[];
      last_used_at: string | null;
      revoked_at: string | null;
    }[];
    const listed = connections.filter((c) => c.name === 'E2E Agent');
    assert.equal(listed.length, 1, JSON.stringify(connections));
    assert.deepEqual(listed[0]?.scopes, ['read', 'write']);
    assert.ok(listed[0]?.last_used_at, 'its last use is recorded');
  });

  test('a refresh token is rotated on use: the new one works, the old one is refused', async () => {
    const client = callback.client();
    const { tokens } = await connectThroughOAuth(client);
    const oldRefresh = tokens.refresh_token;
    assert.ok(oldRefresh);
    const clientId = client.info?.client_id;
    assert.ok(clientId);
    const first = await tokenRequest({
      grant_type: 'refresh_token',
      refresh_token: oldRefresh,
      client_id: clientId,
    });
    assert.equal(first.status, 200, await first.clone().text());
    const rotated = (await first.json()) as { access_token: string; refresh_token: string };
    assert.notEqual(rotated.refresh_token, oldRefresh);
    assert.equal((await mcpStatus(rotated.access_token)).status, 200);
    const again = await tokenRequest({
      grant_type: 'refresh_token',
      refresh_token: oldRefresh,
      client_id: clientId,
    });
    assert.equal(again.status, 400);
    assert.equal(((await again.json()) as { error: string }).error, 'invalid_grant');
  });

  test('a request naming scopes not offered (openid, offline_access, profile) gets ours at the first approval, and no ID token', async () => {
    // A client registered without scopes may ask for any: each request is approved once, and a
    // scope left undecided would bring the consent back (no code reaches the client, a timeout).
    const registered = await registerClient({ client_name: 'Scope prober' });
    assert.equal(registered.status, 201);
    const clientId = ((await registered.json()) as { client_id: string }).client_id;
    const cases = [
      ['openid read', 'read'],
      ['openid offline_access read write', 'read write'],
      ['profile', 'read'],
    ] as const;
    for (const [asked, granted] of cases) {
      const verifier = randomBytes(32).toString('base64url');
      const url = new URL(`${stack.gatewayUrl}/oauth/authorize`);
      url.search = new URLSearchParams({
        client_id: clientId,
        response_type: 'code',
        redirect_uri: callback.redirectUrl,
        scope: asked,
        code_challenge: createHash('sha256').update(verifier).digest('base64url'),
        code_challenge_method: 'S256',
      }).toString();
      const context = await browser.newContext();
      let code: string | null;
      try {
        const page = await context.newPage();
        await signInToConsent(page, url, await person());
        assert.match(await page.locator('section.consent').innerText(), /read: /, asked);
        const before = callback.responses.length;
        await Promise.all([
          page.waitForURL((u) => u.toString().startsWith(callback.redirectUrl)),
          page.click('#approve'),
        ]);
        code = callback.responses[before]?.searchParams.get('code') ?? null;
      } finally {
        await context.close();
      }
      assert.ok(code, `${asked}: a code came back at the first approval`);
      const res = await tokenRequest({
        grant_type: 'authorization_code',
        code,
        client_id: clientId,
        redirect_uri: callback.redirectUrl,
        code_verifier: verifier,
      });
      assert.equal(res.status, 200, await res.clone().text());
      const tokens = (await res.json()) as { access_token: string; scope: string; id_token?: string };
      assert.equal(tokens.scope, granted, `${asked}: the token says what it holds`);
      assert.equal(tokens.id_token, undefined, `${asked}: no OpenID Connect`);
      assert.equal((await mcpStatus(tokens.access_token)).status, 200, asked);
    }
  });

  test('a token refreshed for fewer scopes acts with only those: a write tool gets 403 insufficient_scope', async () => {
    const client = callback.client();
    const { tokens } = await connectThroughOAuth(client, 'read write');
    const clientId = String(client.info?.client_id);
    const res = await tokenRequest({
      grant_type: 'refresh_token',
      refresh_token: String(tokens.refresh_token),
      client_id: clientId,
      scope: 'read',
    });
    assert.equal(res.status, 200, await res.clone().text());
    const narrowed = (await res.json()) as { access_token: string; refresh_token: string; scope: string };
    assert.equal(narrowed.scope, 'read', 'the token endpoint says the token holds read only');
    const writeCall = {
      jsonrpc: '2.0',
      id: 3,
      method: 'tools/call',
      params: { name: 'ads_save_marketing_item', arguments: {} },
    };
    const refused = await rawPost(stack.mcpUrl, writeCall, {
      authorization: `Bearer ${narrowed.access_token}`,
    });
    assert.equal(refused.status, 403, refused.text);
    assert.match(
      refused.headers.get('www-authenticate') ?? '',
      /error_description="ads_save_marketing_item needs the write scope; this token has read"/,
    );
    const mcp = await connectClient('v1', stack.mcpUrl, narrowed.access_token);
    try {
      const context = await mcp.callTool('ads_get_connection_context', {});
      assert.notEqual(context.isError, true, JSON.stringify(context.content));
      assert.match(JSON.stringify(context.structuredContent), /"scopes":\["read"\]/);
    } finally {
      await mcp.close();
    }
    // A token of the same grant that holds write still writes (a tool error, not a scope refusal).
    const wide = await tokenRequest({
      grant_type: 'refresh_token',
      refresh_token: narrowed.refresh_token,
      client_id: clientId,
    });
    assert.equal(wide.status, 200);
    const full = (await wide.json()) as { access_token: string; scope: string };
    assert.equal(full.scope, 'read write');
    const allowed = await rawPost(stack.mcpUrl, writeCall, { authorization: `Bearer ${full.access_token}` });
    assert.equal(allowed.status, 200, allowed.text);
    // The narrowed token is still held to read once its grant is remembered with both scopes.
    const again = await rawPost(stack.mcpUrl, writeCall, {
      authorization: `Bearer ${narrowed.access_token}`,
    });
    assert.equal(again.status, 403);
  });

  test('ads_disconnect_client with an OAuth token ends the grant: its tokens and refresh token are refused', async () => {
    const client = callback.client();
    const { tokens } = await connectThroughOAuth(client);
    const mcp = await connectClient('v1', stack.mcpUrl, tokens.access_token);
    try {
      const res = await mcp.callTool('ads_disconnect_client', {});
      assert.notEqual(res.isError, true, JSON.stringify(res.content));
    } finally {
      await mcp.close();
    }
    const after = await mcpStatus(tokens.access_token);
    assert.equal(after.status, 401);
    const refresh = await tokenRequest({
      grant_type: 'refresh_token',
      refresh_token: String(tokens.refresh_token),
      client_id: String(client.info?.client_id),
    });
    assert.equal(refresh.status, 400);
  });

  test('a client revoking its refresh token ends the connection: its access token gets 401 and it is listed revoked', async () => {
    const client = callback.client('Revoking Agent');
    const { tokens } = await connectThroughOAuth(client);
    assert.equal((await mcpStatus(tokens.access_token)).status, 200);
    const res = await fetch(`${stack.gatewayUrl}/oauth/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        token: String(tokens.refresh_token),
        token_type_hint: 'refresh_token',
        client_id: String(client.info?.client_id),
      }).toString(),
    });
    assert.equal(res.status, 200);
    assert.equal((await mcpStatus(tokens.access_token)).status, 401);
    const connections = JSON.parse(await stack.admin(['list-tokens', '--workspace', seed.workspaceId])) as {
      name: string;
      revoked_at: string | null;
    }[];
    const listed = connections.find((c) => c.name === 'Revoking Agent');
    assert.ok(listed?.revoked_at, 'the connection is listed as revoked');
  });

  test('an access token issued for another resource is refused with 401', async () => {
    const client = callback.client();
    const { tokens } = await connectThroughOAuth(client);
    // The same token, as another resource's server would hold it: only its audience differs.
    const other = randomUUID().replaceAll('-', '') + randomUUID().replaceAll('-', '');
    const db = new pg.Client({ connectionString: e2e.db.url });
    await db.connect();
    await db.query(
      `INSERT INTO gateway.oauth_payloads (kind, id, payload, grant_id, expires_at)
       SELECT kind, $2, jsonb_set(jsonb_set(payload, '{aud}', '"https://other.example/mcp"'), '{jti}', to_jsonb($2::text)), grant_id, expires_at
         FROM gateway.oauth_payloads WHERE kind = 'AccessToken' AND id = $1`,
      [tokens.access_token, other],
    );
    await db.end();
    assert.equal((await mcpStatus(tokens.access_token)).status, 200);
    const refused = await mcpStatus(other);
    assert.equal(refused.status, 401);
    assert.match(refused.challenge ?? '', /error="invalid_token"/);
    assert.match(refused.challenge ?? '', /scope="read write"/);
    assert.match(refused.challenge ?? '', /another resource/);
  });

  test('a read-only token calling a write tool gets 403 insufficient_scope, and the SDK steps up to read and write', async () => {
    // Without a refresh token the SDK's step-up goes straight to a new authorization request.
    const client = callback.client('Read-only Agent', ['authorization_code']);
    const { tokens, consent } = await connectThroughOAuth(client, 'read');
    assert.match(consent, /read: /);
    assert.doesNotMatch(consent, /write: /, 'only read was asked for');
    const writeCall = {
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'ads_save_marketing_item', arguments: {} },
    };
    const raw = await rawPost(stack.mcpUrl, writeCall, { authorization: `Bearer ${tokens.access_token}` });
    assert.equal(raw.status, 403);
    const header = raw.headers.get('www-authenticate') ?? '';
    assert.match(header, /^Bearer /);
    assert.match(header, /error="insufficient_scope"/);
    assert.match(header, /scope="read write"/, 'the scopes to ask for: the token’s own and the missing one');
    assert.match(
      header,
      new RegExp(`resource_metadata="${stack.gatewayUrl}/.well-known/oauth-protected-resource"`),
    );
    assert.match(
      header,
      /error_description="ads_save_marketing_item needs the write scope; this token has read"/,
    );
    const body = raw.json as { id: number; error: { code: number; message: string } };
    assert.equal(body.id, 7, 'the JSON-RPC error answers the call');
    assert.match(body.error.message, /lacks the "write" scope/);
    // A read tool still works with the same token, with no challenge.
    assert.equal((await mcpStatus(tokens.access_token)).status, 200);

    // The official client with the same provider: its 403 path reads the challenge and asks again.
    const before = client.authorizationUrl;
    const mcp = new Client({ name: 'step-up', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(stack.mcpUrl), { authProvider: client }));
    try {
      await assert.rejects(
        mcp.callTool({ name: 'ads_save_marketing_item', arguments: {} }),
        (err: unknown) => err instanceof UnauthorizedError,
      );
    } finally {
      await mcp.close();
    }
    const stepUp = client.authorizationUrl;
    assert.ok(stepUp && stepUp !== before, 'the SDK started a new authorization request');
    assert.equal(stepUp.searchParams.get('scope'), 'read write');
    assert.equal(stepUp.searchParams.get('resource'), stack.mcpUrl);
  });

  test('a viewer’s token with the write scope is refused a write tool by role, with no step-up challenge', async () => {
    const res = await rawPost(
      stack.mcpUrl,
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'ads_save_marketing_item', arguments: {} },
      },
      { authorization: `Bearer ${await viewerToken()}` },
    );
    assert.equal(res.status, 403);
    assert.equal(res.headers.get('www-authenticate'), null, 'more scopes would not help a viewer');
  });

  test('registration refuses plain http redirect URIs to another host, naming the field', async () => {
    const res = await fetch(`${stack.gatewayUrl}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'Bad',
        redirect_uris: ['http://client.example/callback'],
        token_endpoint_auth_method: 'none',
      }),
    });
    assert.equal(res.status, 400);
    const body = (await res.json()) as { error: string; error_description: string };
    assert.equal(body.error, 'invalid_redirect_uri');
    assert.match(body.error_description, /redirect_uris: .*https/);
  });
});

describe('OAuth: one decision per request, grants and connections kept in step', () => {
  test('revoking the access token at /oauth/revoke ends the grant and the connection is listed revoked, with its audit entry', async () => {
    const name = `Access-token revoker ${randomUUID().slice(0, 8)}`;
    const client = callback.client(name);
    const { tokens } = await connectThroughOAuth(client);
    assert.equal((await mcpStatus(tokens.access_token)).status, 200);
    const res = await fetch(`${stack.gatewayUrl}/oauth/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        token: tokens.access_token,
        token_type_hint: 'access_token',
        client_id: String(client.info?.client_id),
      }).toString(),
    });
    assert.equal(res.status, 200);
    assert.equal((await mcpStatus(tokens.access_token)).status, 401);
    const refresh = await tokenRequest({
      grant_type: 'refresh_token',
      refresh_token: String(tokens.refresh_token),
      client_id: String(client.info?.client_id),
    });
    assert.equal(refresh.status, 400, 'the grant is gone with its refresh token');
    // The provider's event is handled after the response: wait a moment for the listing to follow.
    let listed = await listedConnections(name);
    for (let i = 0; i < 50 && !listed[0]?.revoked_at; i++) {
      await new Promise((r) => setTimeout(r, 100));
      listed = await listedConnections(name);
    }
    assert.equal(listed.length, 1);
    assert.ok(listed[0]?.revoked_at, 'the connection is listed revoked');
    assert.equal(await auditCount('credential.revoked', { target: listed[0]?.credential_id }), 1);
  });

  test('Approve posted twice at once and again later makes one grant, one connection and one audit entry', async () => {
    const name = `Double submit ${randomUUID().slice(0, 8)}`;
    const client = callback.client(name);
    const { context, uid, csrf, page } = await openConsent(client);
    try {
      const approve = () =>
        context.request.post(`${stack.gatewayUrl}/dashboard/oauth/${uid}/approve`, {
          form: { csrf },
          headers: { origin: stack.gatewayUrl },
          maxRedirects: 0,
        });
      const [a, b] = await Promise.all([approve(), approve()]);
      assert.deepEqual([a.status(), b.status()], [303, 303], 'the repeat answers as the first did');
      assert.equal(a.headers().location, b.headers().location);
      assert.equal((await listedConnections(name)).length, 1);
      // The browser follows the answer to the client, which gets its code and tokens.
      const before = callback.responses.length;
      await page.goto(new URL(String(a.headers().location), stack.gatewayUrl).toString());
      await page.waitForURL((u) => u.toString().startsWith(callback.redirectUrl));
      const code = callback.responses[before]?.searchParams.get('code');
      assert.ok(code, 'one authorization code came back');
      assert.equal(await auth(client, { serverUrl: stack.mcpUrl, authorizationCode: code }), 'AUTHORIZED');
      assert.equal((await mcpStatus(String(client.stored?.access_token))).status, 200);
      // Posted again once the request has been used: refused, and nothing more is made.
      const late = await approve();
      assert.equal(late.status(), 409);
      assert.match(
        await late.text(),
        /This sign-in request was already approved; a request is decided once\./,
      );
      const decline = await context.request.post(`${stack.gatewayUrl}/dashboard/oauth/${uid}/decline`, {
        form: { csrf },
        headers: { origin: stack.gatewayUrl },
        maxRedirects: 0,
      });
      assert.equal(decline.status(), 409);
      const listed = await listedConnections(name);
      assert.equal(listed.length, 1, JSON.stringify(listed));
      assert.equal(listed[0]?.revoked_at, null);
      assert.ok(listed[0]?.expires_at, 'the connection expires with its grant, not "never"');
      assert.equal(
        await auditCount('credential.created', { oauthClient: String(client.info?.client_id) }),
        1,
      );
    } finally {
      await context.close();
    }
  });

  /** A new request of `client` opened in `page`, answered at once (a code) from a standing sign-in. */
  async function answeredAtOnce(page: Page, client: MemoryOAuthClient): Promise<string | null | undefined> {
    assert.equal(await auth(client, { serverUrl: stack.mcpUrl }), 'REDIRECT');
    const before = callback.responses.length;
    await page.goto(String(client.authorizationUrl));
    await page.waitForURL((u) => u.toString().startsWith(callback.redirectUrl));
    return callback.responses[before]?.searchParams.get('code');
  }

  /** `who` signs in from `client`'s request in `page` and approves it: the client gets a code. */
  async function approveAs(page: Page, client: MemoryOAuthClient, who: { email: string; password: string }) {
    assert.equal(await auth(client, { serverUrl: stack.mcpUrl }), 'REDIRECT');
    await signInToConsent(page, String(client.authorizationUrl), who);
    const before = callback.responses.length;
    await Promise.all([
      page.waitForURL((u) => u.toString().startsWith(callback.redirectUrl)),
      page.click('#approve'),
    ]);
    assert.ok(callback.responses[before]?.searchParams.get('code'), `${who.email} connected the client`);
  }

  /** `client`'s next request opened in `page` goes to `where`, and no code is sent for it. */
  async function askedAgain(page: Page, client: MemoryOAuthClient, where: RegExp, message: string) {
    assert.equal(await auth(client, { serverUrl: stack.mcpUrl }), 'REDIRECT');
    const before = callback.responses.length;
    await page.goto(String(client.authorizationUrl));
    await page.waitForURL(where);
    assert.equal(callback.responses.length, before, message);
  }

  test('signing out of the dashboard ends the OAuth sign-in: that browser is asked who is there again', async () => {
    const client = callback.client(`Signed-out Agent ${randomUUID().slice(0, 8)}`);
    const who = await person();
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await approveAs(page, client, who);
      // Signed in, the same client's next request is answered at once, from the standing grant.
      assert.ok(await answeredAtOnce(page, client), 'answered without asking');

      await page.goto(`${stack.gatewayUrl}/dashboard`);
      await Promise.all([page.waitForURL(/\/dashboard\/login$/), page.click('header button[type=submit]')]);
      await askedAgain(
        page,
        client,
        /\/dashboard\/login\?next=/,
        'no code was sent in the signed-out person’s name',
      );
    } finally {
      await context.close();
    }
  });

  test('another person signing in to the dashboard ends the OAuth sign-in left in that browser', async () => {
    const client = callback.client(`Shared-browser Agent ${randomUUID().slice(0, 8)}`);
    const first = await person();
    const second = await person();
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await approveAs(page, client, first);
      // The first person walks away signed in; the second signs in to the dashboard directly.
      await page.goto(`${stack.gatewayUrl}/dashboard/login`);
      await page.fill('#email', second.email);
      await page.fill('#password', second.password);
      await Promise.all([page.waitForURL(/\/dashboard$/), page.click('button[type=submit]')]);
      // The client the first person approved is no longer answered in their name: the person
      // signed in now is asked.
      await askedAgain(
        page,
        client,
        /\/dashboard\/oauth\/[^/]+$/,
        'no code was sent in the first person’s name',
      );
      assert.match((await page.textContent('body')) ?? '', new RegExp(second.email.replace('.', '\\.')));
    } finally {
      await context.close();
    }
  });

  test('the metadata advertises only what is served: no pushed requests, no DPoP, no openid, no session-end page', async () => {
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      const as = (await (await fetch(`${stack.gatewayUrl}${path}`)).json()) as Record<string, unknown>;
      assert.equal(as.pushed_authorization_request_endpoint, undefined, path);
      assert.equal(as.end_session_endpoint, undefined, path);
      assert.equal(as.dpop_signing_alg_values_supported, undefined, path);
      assert.deepEqual(as.scopes_supported, ['read', 'write'], path);
      assert.equal(as.revocation_endpoint, `${stack.gatewayUrl}/oauth/revoke`);
    }
    const end = await fetch(`${stack.gatewayUrl}/oauth/session/end`);
    assert.equal(end.status, 404, 'no logout page is served');
    await end.text();
  });

  test('the authorization endpoint’s error page carries the dashboard’s security headers', async () => {
    const res = await fetch(`${stack.gatewayUrl}/oauth/authorize?client_id=nobody&response_type=code`);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    const csp = res.headers.get('content-security-policy') ?? '';
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.match(csp, /script-src 'sha256-/);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    assert.match(await res.text(), /This sign-in request was refused/);
  });

  test('an oversized registration is refused naming the size limit, and client_name is held to 200 characters', async () => {
    const huge = await registerClient({ client_name: 'x'.repeat(60_000) });
    assert.equal(huge.status, 413);
    const hugeBody = (await huge.json()) as { error_description: string };
    assert.match(hugeBody.error_description, /the limit is 57344 bytes \(56 KiB\)/);

    const long = await registerClient({ client_name: '🙂'.repeat(201) });
    assert.equal(long.status, 400);
    const longBody = (await long.json()) as { error: string; error_description: string };
    assert.equal(longBody.error, 'invalid_client_metadata');
    assert.equal(longBody.error_description, 'client_name must be 1 to 200 characters (got 201)');

    const contacts = await registerClient({
      client_name: 'Many contacts',
      contacts: Array.from({ length: 11 }, (_, i) => `c${i}@x.example`),
    });
    assert.equal(contacts.status, 400);
    assert.match(
      ((await contacts.json()) as { error_description: string }).error_description,
      /contacts: at most 10/,
    );

    const fits = await registerClient({ client_name: '🙂'.repeat(200) });
    assert.equal(fits.status, 201);
    await fits.text();
  });

  test('U+0000 in a registration, an authorization request or a token is refused as the client’s error, never a 500', async () => {
    for (const [metadata, field, error] of [
      [{ client_name: 'Agent\u0000' }, 'client_name', 'invalid_client_metadata'],
      [
        { client_name: 'Agent', redirect_uris: ['https://client.example/cb\u0000'] },
        'redirect_uris[0]',
        'invalid_redirect_uri',
      ],
    ] as const) {
      const res = await registerClient(metadata);
      assert.equal(res.status, 400, field);
      assert.deepEqual(await res.json(), {
        error,
        error_description: `${field} must not contain the character U+0000 (NUL)`,
      });
    }
    // Half of a UTF-16 pair (JSON's "\ud800"), which PostgreSQL's jsonb cannot hold either.
    const lone = await registerClient({ client_name: 'Agent \ud800' });
    assert.equal(lone.status, 400);
    assert.deepEqual(await lone.json(), {
      error: 'invalid_client_metadata',
      error_description: 'client_name must be well-formed Unicode (it holds a lone surrogate)',
    });

    const registered = await registerClient({ client_name: 'NUL prober' });
    assert.equal(registered.status, 201);
    const clientId = ((await registered.json()) as { client_id: string }).client_id;
    const challenge = createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url');
    const authorize = (params: Record<string, string>) =>
      fetch(
        `${stack.gatewayUrl}/oauth/authorize?${new URLSearchParams({
          client_id: clientId,
          response_type: 'code',
          redirect_uri: callback.redirectUrl,
          scope: 'read',
          code_challenge: challenge,
          code_challenge_method: 'S256',
          ...params,
        })}`,
        { redirect: 'manual' },
      );
    // The redirect URI is the client's own: the error goes back to it, naming the parameter.
    const state = await authorize({ state: 'a\u0000b' });
    assert.equal(state.status, 303, await state.clone().text());
    const back = new URL(String(state.headers.get('location')));
    assert.ok(back.toString().startsWith(callback.redirectUrl), back.toString());
    assert.equal(back.searchParams.get('error'), 'invalid_request');
    assert.equal(
      back.searchParams.get('error_description'),
      'state must not contain the character U+0000 (NUL)',
    );
    await state.text();
    const client = await authorize({ client_id: `${clientId}\u0000` });
    assert.equal(client.status, 400);
    assert.match(await client.text(), /invalid_client: client is invalid/);

    for (const [form, status, error] of [
      [{ grant_type: 'refresh_token', refresh_token: 'a\u0000b', client_id: clientId }, 400, 'invalid_grant'],
      [
        {
          grant_type: 'authorization_code',
          code: 'a\u0000b',
          client_id: clientId,
          redirect_uri: callback.redirectUrl,
          code_verifier: 'v'.repeat(43),
        },
        400,
        'invalid_grant',
      ],
      [{ grant_type: 'refresh_token', refresh_token: 'abc', client_id: 'a\u0000b' }, 401, 'invalid_client'],
    ] as const) {
      const res = await tokenRequest(form);
      assert.equal(res.status, status, JSON.stringify(form));
      assert.equal(((await res.json()) as { error: string }).error, error);
    }
    // RFC 7009: a token the server does not know is answered 200, as any unknown token is.
    const revoke = await fetch(`${stack.gatewayUrl}/oauth/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: 'a\u0000b', client_id: clientId }).toString(),
    });
    assert.equal(revoke.status, 200);
    await revoke.text();
  });
});
