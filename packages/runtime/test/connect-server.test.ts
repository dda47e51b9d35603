import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Health, HealthCheckResponse_ServingStatus } from '@adsmcp/proto/grpc/health/v1/health_pb';
import { UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { Code, ConnectError, createClient, createContextValues } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { importPKCS8, SignJWT } from 'jose';
import { buildConnectServer, type ConnectServer } from '../src/connect-server.ts';
import { NotFoundError, ResourceExhaustedError } from '../src/errors.ts';
import { createLogger } from '../src/log.ts';
import {
  createPrincipalSigner,
  createPrincipalVerifier,
  generatePrincipalKeys,
  type Principal,
  principalKey,
} from '../src/principal.ts';
import { callerKey, createServiceClient } from '../src/service-client.ts';
import { ADMIN } from './fixtures.ts';

const principal: Principal = ADMIN;
const logger = createLogger('test', 'silent');
let keys: { privateKeyPem: string; publicKeyPem: string };
let server: ConnectServer;
let url: string;
let release: () => void = () => undefined;
let seen: Principal | undefined;

/** A test service: it records who called, waits when asked, and fails in the two ways a handler can. */
async function startServer(): Promise<{ server: ConnectServer; url: string }> {
  const server = buildConnectServer({
    serviceName: 'upstream-proxy',
    verifier: await createPrincipalVerifier(keys.publicKeyPem, 'upstream-proxy'),
    logger,
    routes: (router) => {
      router.service(UpstreamService, {
        async listAccounts(_req, ctx) {
          seen = ctx.values.get(principalKey);
          if (ctx.requestHeader.get('x-wait') === '1') await new Promise<void>((r) => (release = r));
          return { accounts: [] };
        },
        async createConnection(req) {
          if (req.name === 'missing') throw new NotFoundError('no such thing');
          if (req.name === 'busy') throw new ResourceExhaustedError('too many checks: retry after 7 s', 7);
          throw new Error('database password is hunter2');
        },
      });
    },
  });
  return { server, url: `http://127.0.0.1:${await server.listen(0)}` };
}

before(async () => {
  keys = await generatePrincipalKeys();
  ({ server, url } = await startServer());
});

after(async () => {
  await server.close(100);
});

const signed = async () =>
  createServiceClient(
    UpstreamService,
    url,
    'upstream-proxy',
    await createPrincipalSigner(keys.privateKeyPem),
  );
const as = { contextValues: createContextValues().set(callerKey, principal) };

async function code(p: Promise<unknown>): Promise<Code | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    return ConnectError.from(err).code;
  }
}

test('a call with a valid principal token reaches the handler with that principal', async () => {
  const client = await signed();
  await client.listAccounts({}, as);
  assert.deepEqual(seen, principal);
});

test('calls without a valid principal token are Unauthenticated', async () => {
  const bare = createClient(UpstreamService, createGrpcTransport({ baseUrl: url }));
  assert.equal(await code(bare.listAccounts({})), Code.Unauthenticated);
  assert.equal(
    await code(bare.listAccounts({}, { headers: { authorization: 'Bearer junk' } })),
    Code.Unauthenticated,
  );

  const otherKeys = await generatePrincipalKeys();
  const forged = createServiceClient(
    UpstreamService,
    url,
    'upstream-proxy',
    await createPrincipalSigner(otherKeys.privateKeyPem),
  );
  assert.equal(await code(forged.listAccounts({}, as)), Code.Unauthenticated);

  const misaddressed = createServiceClient(
    UpstreamService,
    url,
    'changes',
    await createPrincipalSigner(keys.privateKeyPem),
  );
  assert.equal(await code(misaddressed.listAccounts({}, as)), Code.Unauthenticated);

  // Signed with the right key for the right audience, but a minute past its expiry.
  const expired = await new SignJWT({ ws: principal.workspaceId, role: 'admin', scopes: ['read'], uid: null })
    .setProtectedHeader({ alg: 'EdDSA' })
    .setIssuer('adsmcp-gateway')
    .setAudience('upstream-proxy')
    .setSubject('c')
    .setIssuedAt(Math.floor(Date.now() / 1000) - 120)
    .setExpirationTime(Math.floor(Date.now() / 1000) - 60)
    .sign(await importPKCS8(keys.privateKeyPem, 'EdDSA'));
  assert.equal(
    await code(bare.listAccounts({}, { headers: { authorization: `Bearer ${expired}` } })),
    Code.Unauthenticated,
  );
});

test('domain errors keep their code and message; anything else is Internal with no detail', async () => {
  const client = await signed();
  try {
    await client.createConnection({ name: 'missing' }, as);
    assert.fail('expected an error');
  } catch (err) {
    const e = ConnectError.from(err);
    assert.equal(e.code, Code.NotFound);
    assert.equal(e.rawMessage, 'no such thing');
  }
  try {
    await client.createConnection({ name: 'boom' }, as);
    assert.fail('expected an error');
  } catch (err) {
    const e = ConnectError.from(err);
    assert.equal(e.code, Code.Internal);
    assert.ok(!e.message.includes('hunter2'));
  }
});

test('a refusal for the rate keeps its seconds to wait in the retry-after metadata', async () => {
  const client = await signed();
  try {
    await client.createConnection({ name: 'busy' }, as);
    assert.fail('expected an error');
  } catch (err) {
    const e = ConnectError.from(err);
    assert.equal(e.code, Code.ResourceExhausted);
    assert.equal(e.rawMessage, 'too many checks: retry after 7 s');
    assert.equal(e.metadata.get('retry-after'), '7');
  }
});

test('health answers without a principal', async () => {
  const health = createClient(Health, createGrpcTransport({ baseUrl: url }));
  assert.equal((await health.check({})).status, HealthCheckResponse_ServingStatus.SERVING);
  assert.equal(
    (await health.check({ service: 'upstream-proxy' })).status,
    HealthCheckResponse_ServingStatus.SERVING,
  );
  assert.equal(await code(health.check({ service: 'nope' })), Code.NotFound);
});

test('on close, health turns NOT_SERVING and an in-flight call still completes', async () => {
  const { server: s, url: u } = await startServer();
  const client = createServiceClient(
    UpstreamService,
    u,
    'upstream-proxy',
    await createPrincipalSigner(keys.privateKeyPem),
  );
  const health = createClient(Health, createGrpcTransport({ baseUrl: u }));
  const watch = health.watch({})[Symbol.asyncIterator]();
  assert.equal((await watch.next()).value?.status, HealthCheckResponse_ServingStatus.SERVING);

  const inFlight = client.listAccounts({}, { ...as, headers: { 'x-wait': '1' } });
  await new Promise((r) => setTimeout(r, 100));
  const closed = s.close(2000);
  assert.equal((await watch.next()).value?.status, HealthCheckResponse_ServingStatus.NOT_SERVING);
  release();
  assert.deepEqual((await inFlight).accounts, []);
  await closed;
  assert.notEqual(await code(client.listAccounts({}, as)), undefined);
});
