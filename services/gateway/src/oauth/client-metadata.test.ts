/**
 * Client ID Metadata Documents: a client_id that is an https URL is fetched through the safe
 * fetcher and validated like a registration. The authorization server runs in-process on a real
 * database; the client's document is served by a local https site the test's fetcher trusts.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createPool, migrate, type Pool } from '@adsmcp/runtime/db';
import { createSafeFetcher } from '@adsmcp/runtime/safe-fetch';
import { type HttpsSite, startHttpsSite } from '@adsmcp/testkit/https-site';
import { stopTestServer, type TestDatabase, testDatabase } from '@adsmcp/testkit/postgres';
import { createProvider } from './provider.ts';

let site: HttpsSite;
let db: TestDatabase;
let pool: Pool;
const servers: Server[] = [];
let issuer: string;
const documents = new Map<string, object>();

/** Starts an authorization server whose outbound fetches use `fetcher`; returns its issuer. */
async function serve(fetcher: Parameters<typeof createProvider>[1]['safeFetch']): Promise<string> {
  const server = createServer();
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = createProvider(pool, {
    publicUrl: url,
    resource: `${url}/mcp`,
    keyMaterial: 'test key material',
    trustProxy: false,
    safeFetch: fetcher,
  });
  server.on('request', provider.callback());
  return url;
}

/** An authorization request by `clientId`, as a browser would send it. */
function authorize(clientId: string, redirectUri = 'http://127.0.0.1:9/callback'): Promise<Response> {
  const verifier = randomBytes(32).toString('base64url');
  const params = new URLSearchParams({
    client_id: clientId,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: 'read',
    resource: `${issuer}/mcp`,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  });
  return fetch(`${issuer}/oauth/authorize?${params}`, { redirect: 'manual' });
}

function document(path: string, redirectUris: string[]): string {
  const clientId = `${site.origin('client.test')}${path}`;
  documents.set(path, {
    client_id: clientId,
    client_name: 'Metadata Client',
    redirect_uris: redirectUris,
    token_endpoint_auth_method: 'none',
  });
  return clientId;
}

before(async () => {
  site = await startHttpsSite(
    (req, res) => {
      const doc = documents.get(req.url ?? '');
      if (doc === undefined) return res.writeHead(404).end();
      res
        .writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=60' })
        .end(JSON.stringify(doc));
    },
    ['client.test'],
  );
  db = await testDatabase();
  pool = createPool(db.url, 'gateway', 4);
  await migrate(pool, 'gateway', fileURLToPath(new URL('../../migrations', import.meta.url)));
  issuer = await serve(createSafeFetcher(site.fetcherOptions()));
});

after(async () => {
  for (const server of servers) server.close();
  await pool?.end();
  await db?.drop();
  await stopTestServer();
  await site?.close();
});

test('a client named by its metadata document URL is fetched and sent on to sign-in and consent', async () => {
  const res = await authorize(document('/client.json', ['http://127.0.0.1:9/callback']));
  assert.equal(res.status, 303, await res.text());
  assert.match(res.headers.get('location') ?? '', /^\/dashboard\/oauth\/[A-Za-z0-9_-]+$/);
});

test('a metadata document with a plain http redirect URI to another host is refused, naming the rule', async () => {
  const res = await authorize(
    document('/bad-client.json', ['http://client.example/callback']),
    'http://client.example/callback',
  );
  assert.equal(res.status, 400);
  assert.match(await res.text(), /redirect_uris: .*must use https/);
});

test('a metadata document on a private address is not fetched: the safe fetcher refuses it', async () => {
  const { resolve, ca } = site.fetcherOptions();
  const guarded = await serve(createSafeFetcher({ resolve, ca }));
  const before = site.connections();
  const previous = issuer;
  issuer = guarded;
  try {
    const res = await authorize(document('/private-client.json', ['http://127.0.0.1:9/callback']));
    assert.equal(res.status, 400);
    assert.equal(site.connections(), before, 'no connection was made to the private address');
  } finally {
    issuer = previous;
  }
});
