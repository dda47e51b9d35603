/**
 * A plain @grpc/grpc-js client, with descriptors loaded from the repository's .proto files, calls
 * the upstream-proxy over an insecure HTTP/2 channel: the service speaks real gRPC on the wire, not
 * only the Connect protocol our own clients use.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { loadSync, type MethodDefinition, type ServiceDefinition } from '@grpc/proto-loader';
import { principal, type Stack, startStack } from './stack.ts';

const PROTO_DIR = fileURLToPath(new URL('../../../proto', import.meta.url));

const definition = loadSync(['grpc/health/v1/health.proto', 'upstream/v1/upstream.proto'], {
  includeDirs: [PROTO_DIR],
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
});

function method(service: string, name: string): MethodDefinition<object, object> {
  const methods = definition[service] as ServiceDefinition | undefined;
  const found = methods?.[name];
  if (found === undefined) throw new Error(`${service}/${name} is not in the loaded protos`);
  return found;
}

const check = method('grpc.health.v1.Health', 'Check');
const listAccounts = method('upstream.v1.UpstreamService', 'ListAccounts');
const createConnection = method('upstream.v1.UpstreamService', 'CreateConnection');

let stack: Stack;
let client: grpc.Client;

before(async () => {
  stack = await startStack();
  client = new grpc.Client(new URL(stack.proxyUrl).host, grpc.credentials.createInsecure());
});

after(async () => {
  client?.close();
  await stack?.stop();
});

/** Calls a unary method with `metadata`, resolving with the decoded response. */
function unary<T>(
  m: MethodDefinition<object, object>,
  request: object,
  metadata = new grpc.Metadata(),
): Promise<T> {
  return new Promise((resolve, reject) => {
    const done = (err: grpc.ServiceError | null, value?: object) => {
      if (err) reject(err);
      else resolve(value as T);
    };
    client.makeUnaryRequest(m.path, m.requestSerialize, m.responseDeserialize, request, metadata, done);
  });
}

async function bearer(p: ReturnType<typeof principal>): Promise<grpc.Metadata> {
  const metadata = new grpc.Metadata();
  metadata.set('authorization', `Bearer ${await stack.signToken(p)}`);
  return metadata;
}

function isStatus(code: grpc.status, details: RegExp) {
  return (err: unknown) => {
    const e = err as grpc.ServiceError;
    assert.equal(grpc.status[e.code], grpc.status[code], e.message);
    assert.match(e.details, details);
    return true;
  };
}

describe('upstream-proxy over @grpc/grpc-js', () => {
  it('answers grpc.health.v1.Health/Check as SERVING, without a principal', async () => {
    assert.deepEqual(await unary(check, { service: '' }), { status: 'SERVING' });
    assert.deepEqual(await unary(check, { service: 'upstream-proxy' }), { status: 'SERVING' });
  });

  it('lists the calling workspace’s accounts for a principal token in the metadata', async () => {
    const admin = principal();
    const account = await stack.newSandboxAccount({ currency: 'EUR', time_zone: 'Europe/Berlin' });
    await unary(
      createConnection,
      {
        name: 'Over gRPC',
        currency: 'EUR',
        time_zone: 'Europe/Berlin',
        can_write: false,
        upstream_account_id: account.accountId,
        upstream_credential: account.credential,
      },
      await bearer(admin),
    );

    const res = await unary<{ accounts: Record<string, unknown>[] }>(listAccounts, {}, await bearer(admin));
    assert.equal(res.accounts.length, 1);
    const [listed] = res.accounts;
    assert.deepEqual(Object.keys(listed ?? {}).sort(), [
      'account_id',
      'can_write',
      'created_at',
      'credential_expires_at',
      'credential_status',
      'currency',
      'name',
      'time_zone',
      'upstream_account_id',
    ]);
    assert.equal(listed?.name, 'Over gRPC');
    assert.equal(listed?.can_write, false);
    assert.equal(listed?.upstream_account_id, account.accountId);
  });

  it('carries our status codes and messages in gRPC trailers', async () => {
    await assert.rejects(
      unary(listAccounts, {}),
      isStatus(grpc.status.UNAUTHENTICATED, /missing principal token/),
    );
    await assert.rejects(
      unary(
        createConnection,
        { name: 'x', currency: 'USD', time_zone: 'UTC', upstream_account_id: 'a', upstream_credential: 'c' },
        await bearer(principal({ role: 'viewer', scopes: ['read'] })),
      ),
      isStatus(grpc.status.PERMISSION_DENIED, /needs the admin role and the write scope/),
    );
  });
});
