import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { freePort } from '@adsmcp/testkit/free-port';
import { Code, ConnectError, createContextValues } from '@connectrpc/connect';
import { buildConnectServer, type ConnectServer } from '../src/connect-server.ts';
import { parseServiceAddresses } from '../src/failover-transport.ts';
import { createLogger } from '../src/log.ts';
import {
  createPrincipalSigner,
  createPrincipalVerifier,
  generatePrincipalKeys,
  type Principal,
  type PrincipalSigner,
} from '../src/principal.ts';
import { callerKey, createServiceClient, serviceDirectory } from '../src/service-client.ts';
import { EDITOR } from './fixtures.ts';

const principal: Principal = EDITOR;
const as = { contextValues: createContextValues().set(callerKey, principal) };
const logger = createLogger('test', 'silent');
let keys: { privateKeyPem: string; publicKeyPem: string };
let signer: PrincipalSigner;

/** One replica of a test service: it counts the calls its handlers ran. */
interface Replica {
  server: ConnectServer;
  url: string;
  handled: number;
}

async function startReplica(
  opts: { port?: number; delayMs?: number; fail?: boolean } = {},
): Promise<Replica> {
  const replica = { handled: 0 } as Replica;
  replica.server = buildConnectServer({
    serviceName: 'upstream-proxy',
    verifier: await createPrincipalVerifier(keys.publicKeyPem, 'upstream-proxy'),
    logger,
    routes: (router) => {
      router.service(UpstreamService, {
        async listAccounts() {
          replica.handled++;
          if (opts.delayMs) await new Promise((r) => setTimeout(r, opts.delayMs));
          if (opts.fail) throw new ConnectError('busy', Code.Unavailable);
          return { accounts: [] };
        },
      });
    },
  });
  replica.url = `http://127.0.0.1:${await replica.server.listen(opts.port ?? 0)}`;
  return replica;
}

async function codeOf(p: Promise<unknown>): Promise<Code | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    return ConnectError.from(err).code;
  }
}

before(async () => {
  keys = await generatePrincipalKeys();
  signer = await createPrincipalSigner(keys.privateKeyPem);
});

test('a service address may list several addresses, blanks around commas ignored', () => {
  assert.deepEqual(parseServiceAddresses('http://a:1, http://b:2 ,'), ['http://a:1', 'http://b:2']);
  assert.deepEqual(parseServiceAddresses('http://a:1'), ['http://a:1']);
  assert.throws(() => parseServiceAddresses(' , '), /a service address is empty/);
});

test('calls to a listed service are spread over every replica', async () => {
  const [a, b] = [await startReplica(), await startReplica()];
  try {
    const client = createServiceClient(UpstreamService, `${a.url},${b.url}`, 'upstream-proxy', signer);
    for (let i = 0; i < 10; i++) await client.listAccounts({}, as);
    assert.equal(a.handled, 5);
    assert.equal(b.handled, 5);
  } finally {
    await Promise.all([a.server.close(100), b.server.close(100)]);
  }
});

test('calls move to another replica when one is stopped, and come back once it listens again', async () => {
  const [a, b] = [await startReplica(), await startReplica()];
  const port = Number(new URL(a.url).port);
  const clientOf = serviceDirectory(
    { upstream: { baseUrl: `${a.url},${b.url}`, audience: 'upstream-proxy' } },
    signer,
  );
  const client = clientOf(UpstreamService);
  let restarted: Replica | undefined;
  try {
    await a.server.close(100);
    for (let i = 0; i < 6; i++) await client.listAccounts({}, as);
    assert.equal(b.handled, 6, 'the stopped replica refused the connection; each call went to the other');
    restarted = await startReplica({ port });
    // The restarted replica is passed over only briefly after it refused.
    await new Promise((r) => setTimeout(r, 2_100));
    for (let i = 0; i < 6; i++) await client.listAccounts({}, as);
    assert.ok(restarted.handled >= 2, `the restarted replica took calls again (${restarted.handled})`);
  } finally {
    await Promise.all([b.server.close(100), restarted?.server.close(100)]);
  }
});

test('a replica draining under a steady load loses no call and runs each call once', async () => {
  const [a, b] = [await startReplica({ delayMs: 20 }), await startReplica({ delayMs: 20 })];
  const client = createServiceClient(UpstreamService, `${a.url},${b.url}`, 'upstream-proxy', signer);
  const failures: unknown[] = [];
  let answered = 0;
  let running = true;
  const worker = async () => {
    while (running) {
      try {
        await client.listAccounts({}, as);
        answered++;
      } catch (err) {
        failures.push(err);
      }
    }
  };
  const workers = Array.from({ length: 8 }, worker);
  try {
    await new Promise((r) => setTimeout(r, 300));
    await a.server.close(5_000);
    await new Promise((r) => setTimeout(r, 300));
    running = false;
    await Promise.all(workers);
    assert.deepEqual(failures.map(String), []);
    assert.equal(a.handled + b.handled, answered, 'every call ran exactly once');
    assert.ok(a.handled > 0 && b.handled > 0);
  } finally {
    running = false;
    await b.server.close(100);
  }
});

test('a call that reached a handler is not sent again, even when it failed as unavailable', async () => {
  const [a, b] = [await startReplica({ fail: true }), await startReplica({ fail: true })];
  try {
    const client = createServiceClient(UpstreamService, `${a.url},${b.url}`, 'upstream-proxy', signer);
    assert.equal(await codeOf(client.listAccounts({}, as)), Code.Unavailable);
    assert.equal(a.handled + b.handled, 1);
  } finally {
    await Promise.all([a.server.close(100), b.server.close(100)]);
  }
});

test('when no replica listens the call fails as unavailable', async () => {
  const url = `http://127.0.0.1:${await freePort()}`;
  const client = createServiceClient(UpstreamService, url, 'upstream-proxy', signer);
  assert.equal(await codeOf(client.listAccounts({}, as)), Code.Unavailable);
});
