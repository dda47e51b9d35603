/**
 * Our clients' unary calls take a short path on both sides (unary-transport.ts, unary-server.ts);
 * every other client still goes through connect-node. These tests hold the two paths to the same
 * outcomes: the same answers and principals, the same codes, messages and error metadata, the
 * deadline and a caller's cancel reaching the handler's signal, and a malformed body refused.
 */
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { after, before, test } from 'node:test';
import { UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { Code, ConnectError, createClient, createContextValues } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport } from '@connectrpc/connect-node';
import { buildConnectServer, type ConnectServer } from '../src/connect-server.ts';
import { createLogger } from '../src/log.ts';
import {
  createPrincipalSigner,
  createPrincipalVerifier,
  generatePrincipalKeys,
  type Principal,
  type PrincipalSigner,
  principalKey,
} from '../src/principal.ts';
import { callerKey, createServiceClient } from '../src/service-client.ts';
import { MAX_REQUEST_BYTES } from '../src/unary-server.ts';
import { ADMIN } from './fixtures.ts';

let server: ConnectServer;
let url: string;
let signer: PrincipalSigner;
const seen: (Principal | undefined)[] = [];
/** The reasons the waiting handler's signal was aborted with. */
const aborts: unknown[] = [];

before(async () => {
  const keys = await generatePrincipalKeys();
  signer = await createPrincipalSigner(keys.privateKeyPem);
  server = buildConnectServer({
    serviceName: 'upstream-proxy',
    verifier: await createPrincipalVerifier(keys.publicKeyPem, 'upstream-proxy'),
    logger: createLogger('test', 'silent'),
    routes: (router) => {
      router.service(UpstreamService, {
        async getAccount(req, ctx) {
          seen.push(ctx.values.get(principalKey));
          if (req.accountId === 'wait') {
            await new Promise<void>((resolve) =>
              ctx.signal.addEventListener('abort', () => {
                aborts.push(ctx.signal.reason);
                resolve();
              }),
            );
          }
          return { account: { accountId: req.accountId, name: `Account ${req.accountId}` } };
        },
        async createConnection(req) {
          throw new ConnectError(`slow down, ${req.name}`, Code.ResourceExhausted, { 'retry-after': '7' });
        },
      });
    },
  });
  url = `http://127.0.0.1:${await server.listen(0)}`;
});

after(async () => {
  await server.close(100);
});

const as = { contextValues: createContextValues().set(callerKey, ADMIN) };
const token = async () => `Bearer ${await signer.sign(ADMIN, 'upstream-proxy')}`;

/** The three ways a call can arrive: our client, connect-node's Connect (JSON) client, gRPC. */
async function clients() {
  const headers = { authorization: await token() };
  return {
    ours: createServiceClient(UpstreamService, url, 'upstream-proxy', signer),
    connectJson: createClient(UpstreamService, createConnectTransport({ baseUrl: url, httpVersion: '2' })),
    grpc: createClient(UpstreamService, createGrpcTransport({ baseUrl: url })),
    headers,
  };
}

test('the same call answers the same by our client, a Connect JSON client and a gRPC client, with the same principal', async () => {
  const c = await clients();
  seen.length = 0;
  const ours = await c.ours.getAccount({ accountId: 'a1' }, as);
  const json = await c.connectJson.getAccount({ accountId: 'a1' }, { headers: c.headers });
  const grpc = await c.grpc.getAccount({ accountId: 'a1' }, { headers: c.headers });
  assert.equal(ours.account?.name, 'Account a1');
  assert.deepEqual(json.account, ours.account);
  assert.deepEqual(grpc.account, ours.account);
  assert.equal(seen.length, 3);
  for (const p of seen) assert.deepEqual(p, ADMIN);
});

test('an error keeps its code, message and metadata on every path', async () => {
  const c = await clients();
  const outcomes = await Promise.all([
    c.ours.createConnection({ name: 'agent' }, as).catch((e: unknown) => ConnectError.from(e)),
    c.connectJson
      .createConnection({ name: 'agent' }, { headers: c.headers })
      .catch((e: unknown) => ConnectError.from(e)),
    c.grpc
      .createConnection({ name: 'agent' }, { headers: c.headers })
      .catch((e: unknown) => ConnectError.from(e)),
  ]);
  for (const e of outcomes) {
    assert.ok(e instanceof ConnectError, 'each call failed');
    assert.equal(e.code, Code.ResourceExhausted);
    assert.equal(e.rawMessage, 'slow down, agent');
    assert.equal(e.metadata.get('retry-after'), '7');
  }
  // Without a token, our path refuses as the adapter does.
  const bare = await fetchBinary('/upstream.v1.UpstreamService/GetAccount', new Uint8Array(), {});
  assert.equal(bare.status, 401);
  assert.match(bare.body, /"code":"unauthenticated"/);
});

test('the deadline of our call reaches the handler: the caller gets DeadlineExceeded and the handler’s signal is aborted', async () => {
  aborts.length = 0;
  const ours = createServiceClient(UpstreamService, url, 'upstream-proxy', signer);
  const started = Date.now();
  const err = await ours.getAccount({ accountId: 'wait' }, { ...as, timeoutMs: 300 }).then(
    () => undefined,
    (e: unknown) => ConnectError.from(e),
  );
  assert.equal(err?.code, Code.DeadlineExceeded);
  assert.ok(Date.now() - started < 3000, 'the call ended near its deadline');
  await waitUntil(() => aborts.length === 1);
});

test('a caller that cancels its call aborts the handler’s signal', async () => {
  aborts.length = 0;
  const ours = createServiceClient(UpstreamService, url, 'upstream-proxy', signer);
  const controller = new AbortController();
  const call = ours.getAccount({ accountId: 'wait' }, { ...as, signal: controller.signal });
  await waitUntil(() => seen.at(-1) !== undefined);
  setTimeout(() => controller.abort(), 100);
  const err = await call.then(
    () => undefined,
    (e: unknown) => ConnectError.from(e),
  );
  assert.equal(err?.code, Code.Canceled);
  await waitUntil(() => aborts.length === 1);
});

test('a body that is not the request message is refused as InvalidArgument, naming the parse', async () => {
  const res = await fetchBinary(
    '/upstream.v1.UpstreamService/GetAccount',
    new Uint8Array([0xff, 0xff, 0xff]),
    {
      authorization: await token(),
    },
  );
  assert.equal(res.status, 400);
  assert.match(res.body, /"code":"invalid_argument"/);
  assert.match(res.body, /parse binary/);
});

test('a request larger than a service reads is refused as it arrives, before its token is checked, on every path', async () => {
  const huge = new Uint8Array(MAX_REQUEST_BYTES + 1024);
  const res = await fetchBinary('/upstream.v1.UpstreamService/GetAccount', huge, {});
  assert.equal(res.status, 429);
  assert.match(res.body, /"code":"resource_exhausted"/);
  assert.match(res.body, /larger than 33554432 bytes/);
  // connect-node's adapter, which serves every other protocol, has the same limit.
  const { connectJson, headers } = await clients();
  await assert.rejects(
    connectJson.createConnection({ name: 'x'.repeat(MAX_REQUEST_BYTES + 1024) }, { headers }),
    (err: unknown) => err instanceof ConnectError && err.code === Code.ResourceExhausted,
  );
  // A message within the limit is still read whole.
  const { ours } = await clients();
  const { account } = await ours.getAccount({ accountId: 'a'.repeat(4 * 1024 * 1024) }, as);
  assert.equal(account?.accountId.length, 4 * 1024 * 1024);
});

/** A raw Connect binary POST, as our client sends it, for the cases no client would send. */
function fetchBinary(
  path: string,
  body: Uint8Array,
  headers: Record<string, string>,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url);
    session.on('error', reject);
    const req = session.request({
      ':method': 'POST',
      ':path': path,
      'content-type': 'application/proto',
      'connect-protocol-version': '1',
      ...headers,
    });
    let status = 0;
    const chunks: Buffer[] = [];
    req.on('response', (h) => {
      status = Number(h[':status']);
    });
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      session.close();
      resolve({ status, body: Buffer.concat(chunks).toString('utf8') });
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function waitUntil(check: () => boolean, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}
