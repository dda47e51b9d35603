/**
 * A request's field rules (its proto's buf.validate options) are checked by the server on both
 * paths a call can take, after the caller's token and access and before the handler runs.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ListOptimizersRequestSchema, OptimizerService } from '@adsmcp/proto/optimizer/v1/optimizer_pb';
import { create } from '@bufbuild/protobuf';
import { WireType } from '@bufbuild/protobuf/wire';
import { Code, ConnectError, createClient, createContextValues } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport } from '@connectrpc/connect-node';
import { buildConnectServer, type ConnectServer } from '../src/connect-server.ts';
import { createLogger } from '../src/log.ts';
import {
  createPrincipalSigner,
  createPrincipalVerifier,
  generatePrincipalKeys,
  type PrincipalSigner,
} from '../src/principal.ts';
import { callerKey, createServiceClient } from '../src/service-client.ts';
import { EDITOR } from './fixtures.ts';

let server: ConnectServer;
let url: string;
let signer: PrincipalSigner;
let reached = 0;

before(async () => {
  const keys = await generatePrincipalKeys();
  signer = await createPrincipalSigner(keys.privateKeyPem);
  server = buildConnectServer({
    serviceName: 'optimizer',
    verifier: await createPrincipalVerifier(keys.publicKeyPem, 'optimizer'),
    logger: createLogger('test', 'silent'),
    routes: (router) => {
      router.service(OptimizerService, {
        async listOptimizers() {
          reached++;
          return { optimizers: [], total: 0 };
        },
      });
    },
  });
  url = `http://127.0.0.1:${await server.listen(0)}`;
});

after(async () => {
  await server.close(100);
});

test('a request out of its bounds is refused alike by our client, Connect JSON and gRPC, before its handler', async () => {
  const headers = { authorization: `Bearer ${await signer.sign(EDITOR, 'optimizer')}` };
  // Each call is made when it is awaited: made at once, a later refusal would be unhandled meanwhile.
  const calls = [
    () =>
      createServiceClient(OptimizerService, url, 'optimizer', signer).listOptimizers(
        { limit: 500, accountId: 'a' },
        { contextValues: createContextValues().set(callerKey, EDITOR) },
      ),
    () =>
      createClient(
        OptimizerService,
        createConnectTransport({ baseUrl: url, httpVersion: '2' }),
      ).listOptimizers({ limit: 500, accountId: 'a' }, { headers }),
    () =>
      createClient(OptimizerService, createGrpcTransport({ baseUrl: url })).listOptimizers(
        { limit: 500, accountId: 'a' },
        { headers },
      ),
  ];
  for (const call of calls) {
    const err = await call().then(
      () => assert.fail('not refused'),
      (e: unknown) => ConnectError.from(e),
    );
    assert.equal(err.code, Code.InvalidArgument);
    assert.equal(
      err.rawMessage,
      '`account_id` must be a UUID (got "a"); `limit` must be an integer from 1 to 100 (got 500)',
    );
  }
  assert.equal(reached, 0);
  const ok = await createServiceClient(OptimizerService, url, 'optimizer', signer).listOptimizers(
    { limit: 100 },
    { contextValues: createContextValues().set(callerKey, EDITOR) },
  );
  assert.equal(ok.total, 0);
  assert.equal(reached, 1);
});

test('a request carrying a field its message does not declare (a caller of another release) is refused, not half read', async () => {
  const headers = { authorization: `Bearer ${await signer.sign(EDITOR, 'optimizer')}` };
  // As an older caller would send a filter this release moved to another field: field 99, text.
  const fromAnotherRelease = () => {
    const req = create(ListOptimizersRequestSchema, { limit: 10 });
    req.$unknown = [
      { no: 99, wireType: WireType.LengthDelimited, data: new Uint8Array([3, 0x61, 0x62, 0x63]) },
    ];
    return req;
  };
  const before = reached;
  const calls = [
    () =>
      createServiceClient(OptimizerService, url, 'optimizer', signer).listOptimizers(fromAnotherRelease(), {
        contextValues: createContextValues().set(callerKey, EDITOR),
      }),
    () =>
      createClient(OptimizerService, createGrpcTransport({ baseUrl: url })).listOptimizers(
        fromAnotherRelease(),
        {
          headers,
        },
      ),
  ];
  for (const call of calls) {
    const err = await call().then(
      () => assert.fail('not refused'),
      (e: unknown) => ConnectError.from(e),
    );
    assert.equal(err.code, Code.FailedPrecondition);
    assert.match(
      err.rawMessage,
      /field 99 of ListOptimizersRequest, which this release of the service does not know/,
    );
  }
  assert.equal(reached, before);
});
