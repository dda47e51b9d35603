/**
 * Every method's access is declared in its proto and applied by the server before the handler
 * runs, on both paths a call can take; a service with a method that declares none does not start.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Health } from '@adsmcp/proto/grpc/health/v1/health_pb';
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
} from '../src/principal.ts';
import { callerKey, createServiceClient } from '../src/service-client.ts';
import { ADMIN, EDITOR } from './fixtures.ts';

const logger = createLogger('test', 'silent');
let server: ConnectServer;
let url: string;
let signer: PrincipalSigner;
let verifier: Awaited<ReturnType<typeof createPrincipalVerifier>>;
/** Calls that reached a handler. */
let reached = 0;

before(async () => {
  const keys = await generatePrincipalKeys();
  signer = await createPrincipalSigner(keys.privateKeyPem);
  verifier = await createPrincipalVerifier(keys.publicKeyPem, 'upstream-proxy');
  server = buildConnectServer({
    serviceName: 'upstream-proxy',
    verifier,
    logger,
    routes: (router) => {
      router.service(UpstreamService, {
        async getAccount(req) {
          reached++;
          return { account: { accountId: req.accountId, name: 'Account' } };
        },
        async createConnection() {
          reached++;
          return {};
        },
      });
    },
  });
  url = `http://127.0.0.1:${await server.listen(0)}`;
});

after(async () => {
  await server.close(100);
});

/** The call made on each path: our client (the unary path), Connect JSON and gRPC (connect-node's). */
async function onEveryPath(
  p: Principal,
  call: (
    client: ReturnType<typeof createServiceClient<typeof UpstreamService>>,
    options: object,
  ) => Promise<unknown>,
): Promise<(ConnectError | undefined)[]> {
  const headers = { authorization: `Bearer ${await signer.sign(p, 'upstream-proxy')}` };
  const ours = createServiceClient(UpstreamService, url, 'upstream-proxy', signer);
  const json = createClient(UpstreamService, createConnectTransport({ baseUrl: url, httpVersion: '2' }));
  const grpc = createClient(UpstreamService, createGrpcTransport({ baseUrl: url }));
  const outcomes: (ConnectError | undefined)[] = [];
  for (const [client, options] of [
    [ours, { contextValues: createContextValues().set(callerKey, p) }],
    [json, { headers }],
    [grpc, { headers }],
  ] as const) {
    outcomes.push(
      await call(client, options).then(
        () => undefined,
        (err: unknown) => ConnectError.from(err),
      ),
    );
  }
  return outcomes;
}

test('an editor is refused an admin-only method on every path, by the words of the policy, before its handler runs', async () => {
  reached = 0;
  const outcomes = await onEveryPath(EDITOR, (c, o) =>
    c.createConnection({ name: 'Shop', canWrite: true }, o),
  );
  for (const err of outcomes) {
    assert.equal(err?.code, Code.PermissionDenied);
    assert.equal(
      err?.rawMessage,
      'connecting an ad account needs the admin role and the write scope; this caller has role editor and scopes [read, write]',
    );
  }
  assert.equal(reached, 0);
  assert.deepEqual(
    await onEveryPath(ADMIN, (c, o) => c.createConnection({ name: 'Shop', canWrite: true }, o)),
    [undefined, undefined, undefined],
  );
  assert.equal(reached, 3);
});

test('a read without the read scope is refused; with it, any role reads', async () => {
  const writeOnly: Principal = { ...EDITOR, role: 'viewer', scopes: ['write'] };
  for (const err of await onEveryPath(writeOnly, (c, o) => c.getAccount({ accountId: 'a' }, o))) {
    assert.equal(err?.code, Code.PermissionDenied);
    assert.match(
      err?.rawMessage ?? '',
      /^reading an account needs the read scope; this caller has role viewer/,
    );
  }
  const viewer: Principal = { ...EDITOR, role: 'viewer', scopes: ['read'] };
  assert.deepEqual(await onEveryPath(viewer, (c, o) => c.getAccount({ accountId: 'a' }, o)), [
    undefined,
    undefined,
    undefined,
  ]);
});

test('a service with a method that declares no access does not start', () => {
  // The health protocol's own proto declares no access: registered as a service's routes, it is refused.
  assert.throws(
    () =>
      buildConnectServer({
        serviceName: 'upstream-proxy',
        verifier,
        logger,
        routes: (router) => {
          router.service(Health, { check: () => ({}), async *watch() {} });
        },
      }),
    /grpc\.health\.v1\.Health\/Check declares no \(adsmcp\.v1\.access\) option; grpc\.health\.v1\.Health\/Watch declares no/,
  );
});
