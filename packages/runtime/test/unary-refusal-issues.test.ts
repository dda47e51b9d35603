/**
 * A refusal's list of issues (adsmcp.v1.RefusalIssues, its Connect error details) arrives whole
 * and in order whichever way the call goes: our unary transport to our unary server, a standard
 * Connect client (binary, which our server answers, or JSON, which connect-node's adapter answers),
 * a gRPC client, and our transport to a plain connect-node server.
 */
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { after, before, test } from 'node:test';
import { UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import {
  Code,
  ConnectError,
  type ConnectRouter,
  createClient,
  createContextValues,
} from '@connectrpc/connect';
import { connectNodeAdapter, createConnectTransport, createGrpcTransport } from '@connectrpc/connect-node';
import { toConnectError } from '../src/connect-errors.ts';
import { buildConnectServer, type ConnectServer } from '../src/connect-server.ts';
import { InvalidArgumentIssuesError, type RefusalIssue } from '../src/errors.ts';
import { createLogger } from '../src/log.ts';
import { refusalIssuesOf } from '../src/platform-read/refusal.ts';
import {
  createPrincipalSigner,
  createPrincipalVerifier,
  generatePrincipalKeys,
  type PrincipalSigner,
} from '../src/principal.ts';
import { callerKey, createServiceClient } from '../src/service-client.ts';
import { ADMIN } from './fixtures.ts';

/**
 * Far more than the 4 KB the refusal details metadata may take, with text outside ASCII, which a
 * header could not carry as it is.
 */
const ISSUES: RefusalIssue[] = Array.from({ length: 200 }, (_, i) => ({
  path: `variants[${i}].source_image_url`,
  message: `variants[${i}].source_image_url https://img.example.com/${i}.png: the site answered 404 — «nicht gefunden»`,
}));
const MESSAGE = 'the batch’s images could not be saved';

let signer: PrincipalSigner;
let ours: ConnectServer;
let oursUrl: string;
let plain: http2.Http2Server;
let plainUrl: string;
/** The plain server's sessions, closed at the end: its clients would keep them open. */
const sessions = new Set<http2.ServerHttp2Session>();

/** The one method both servers serve: a domain refusal listing ISSUES, mapped as every service maps it. */
const routes = (router: ConnectRouter) => {
  router.service(UpstreamService, {
    async getAccount() {
      throw toConnectError(new InvalidArgumentIssuesError(MESSAGE, ISSUES)) as ConnectError;
    },
  });
};

before(async () => {
  const keys = await generatePrincipalKeys();
  signer = await createPrincipalSigner(keys.privateKeyPem);
  ours = buildConnectServer({
    serviceName: 'upstream-proxy',
    verifier: await createPrincipalVerifier(keys.publicKeyPem, 'upstream-proxy'),
    logger: createLogger('test', 'silent'),
    routes: (router) => {
      // The service's own interceptor maps domain errors: the handler here throws one unmapped.
      router.service(UpstreamService, {
        async getAccount() {
          throw new InvalidArgumentIssuesError(MESSAGE, ISSUES);
        },
      });
    },
  });
  oursUrl = `http://127.0.0.1:${await ours.listen(0)}`;
  plain = http2.createServer(connectNodeAdapter({ routes }));
  plain.on('session', (session) => sessions.add(session));
  await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
  plainUrl = `http://127.0.0.1:${(plain.address() as { port: number }).port}`;
});

after(async () => {
  await ours.close(100);
  const closed = new Promise<void>((resolve) => plain.close(() => resolve()));
  for (const session of sessions) session.destroy();
  await closed;
});

const as = { contextValues: createContextValues().set(callerKey, ADMIN) };

async function refusalOf(call: Promise<unknown>): Promise<ConnectError> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => ConnectError.from(e),
  );
  assert.ok(err instanceof ConnectError, 'the call was refused');
  return err;
}

function assertListsEveryIssue(err: ConnectError, how: string): void {
  assert.equal(err.code, Code.InvalidArgument, how);
  assert.equal(err.rawMessage, MESSAGE, how);
  assert.deepEqual(refusalIssuesOf(err), ISSUES, how);
}

test('a refusal’s issues arrive whole from our server, to our client and to standard Connect and gRPC clients', async () => {
  const headers = { authorization: `Bearer ${await signer.sign(ADMIN, 'upstream-proxy')}` };
  const binary = createClient(
    UpstreamService,
    createConnectTransport({ baseUrl: oursUrl, httpVersion: '2', useBinaryFormat: true }),
  );
  const json = createClient(UpstreamService, createConnectTransport({ baseUrl: oursUrl, httpVersion: '2' }));
  const grpc = createClient(UpstreamService, createGrpcTransport({ baseUrl: oursUrl }));
  const ourClient = createServiceClient(UpstreamService, oursUrl, 'upstream-proxy', signer);
  assertListsEveryIssue(await refusalOf(ourClient.getAccount({ accountId: 'a1' }, as)), 'our client');
  assertListsEveryIssue(
    await refusalOf(binary.getAccount({ accountId: 'a1' }, { headers })),
    'Connect binary (our unary server)',
  );
  assertListsEveryIssue(
    await refusalOf(json.getAccount({ accountId: 'a1' }, { headers })),
    'Connect JSON (the adapter)',
  );
  assertListsEveryIssue(await refusalOf(grpc.getAccount({ accountId: 'a1' }, { headers })), 'gRPC');
});

test('our client reads the issues a standard Connect server writes', async () => {
  const ourClient = createServiceClient(UpstreamService, plainUrl, 'upstream-proxy', signer);
  assertListsEveryIssue(
    await refusalOf(ourClient.getAccount({ accountId: 'a1' }, as)),
    'our client, connect-node server',
  );
});

test('a refusal lists no issues when it has none, when its details are of another type, or when they do not decode', () => {
  assert.deepEqual(refusalIssuesOf(new ConnectError('refused', Code.InvalidArgument)), []);
  const other = new ConnectError('refused', Code.InvalidArgument);
  other.details.push({ type: 'google.rpc.BadRequest', value: new Uint8Array([10, 1, 65]) });
  // A field 1 whose length runs past the end: not a RefusalIssues message.
  other.details.push({ type: 'adsmcp.v1.RefusalIssues', value: new Uint8Array([10, 200, 1, 65]) });
  assert.deepEqual(refusalIssuesOf(other), []);
});
