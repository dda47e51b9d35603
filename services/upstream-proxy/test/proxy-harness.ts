/**
 * upstream-proxy servers over one fresh database, each in-process on an ephemeral port and
 * pointed at whatever platform a test starts, with connections stored directly (sealed as the
 * service seals them) and clients that sign as the gateway or as the changes worker.
 */

import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { createPool, migrate, type Pool } from '@adsmcp/runtime/db';
import { createLogger } from '@adsmcp/runtime/log';
import {
  createPrincipalSigner,
  createPrincipalVerifier,
  generatePrincipalKeys,
  type Principal,
  type PrincipalSigner,
} from '@adsmcp/runtime/principal';
import { callerKey, createServiceClient } from '@adsmcp/runtime/service-client';
import { stopTestServer, testDatabase } from '@adsmcp/testkit/postgres';
import { type CallOptions, type Client, Code, ConnectError, createContextValues } from '@connectrpc/connect';
import { loadConfig, trustedIssuers } from '../src/config.ts';
import { createCredentialCipher } from '../src/domain/credential-cipher.ts';
import { buildServer, CHANGES_ISSUER, MIGRATIONS_DIR, SCHEMA, SERVICE_NAME } from '../src/server.ts';
import { insertConnection } from '../src/store/connection-store.ts';
import { createPlatformClient } from '../src/upstream/platform-client.ts';

export { principal } from './stack.ts';

export interface ProxyOptions {
  platformUrl: string;
  /** Requests per second and burst of each account's budget (generous unless given). */
  ratePerSecond?: number;
  burst?: number;
  timeoutMs?: number;
  /** Trust the changes worker's key, as CHANGES_PUBLIC_KEY does. */
  trustChanges?: boolean;
}

export interface Replica {
  url: string;
  /** A client that signs as the gateway. */
  client: Client<typeof UpstreamService>;
  close(): Promise<void>;
}

export interface Harness {
  pool: Pool;
  /** Starts a proxy; every proxy of the harness shares its database. */
  proxy(opts: ProxyOptions): Promise<Replica>;
  /** A client of `proxy` that signs as the changes service's worker. */
  workerClient(proxy: Replica): Client<typeof UpstreamService>;
  /** Stores a connection for `workspaceId` and returns its account_id. */
  connect(workspaceId: string, opts?: { canWrite?: boolean; credential?: string }): Promise<string>;
  stop(): Promise<void>;
}

/** Call options that make a call on behalf of `principal`. */
export const as = (p: Principal): CallOptions => ({ contextValues: createContextValues().set(callerKey, p) });

/** Asserts that `call` fails with `code` and a message matching `message`; returns the error. */
export async function refused(call: Promise<unknown>, code: Code, message: RegExp): Promise<ConnectError> {
  let caught: ConnectError | undefined;
  await assert.rejects(call, (err: unknown) => {
    assert.ok(err instanceof ConnectError, String(err));
    assert.equal(Code[err.code], Code[code], err.rawMessage);
    assert.match(err.rawMessage, message);
    caught = err;
    return true;
  });
  return caught as ConnectError;
}

/** startHarness creates the database and the keys; stop() closes every proxy and drops the database. */
export async function startHarness(): Promise<Harness> {
  const db = await testDatabase();
  const pool = createPool(db.url, SCHEMA);
  await migrate(pool, SCHEMA, MIGRATIONS_DIR);
  const silent = createLogger(SERVICE_NAME, 'silent');
  const cipher = createCredentialCipher(randomBytes(32));
  const gatewayKeys = await generatePrincipalKeys();
  const changesKeys = await generatePrincipalKeys();
  const gatewaySigner = await createPrincipalSigner(gatewayKeys.privateKeyPem);
  const workerSigner: PrincipalSigner = await createPrincipalSigner(
    changesKeys.privateKeyPem,
    CHANGES_ISSUER,
  );
  const proxies = new Set<Replica>();

  return {
    pool,
    async proxy(opts) {
      // Through the service's own configuration, so CHANGES_PUBLIC_KEY is read as in production.
      const config = loadConfig({
        DATABASE_URL: db.url,
        PRINCIPAL_PUBLIC_KEY: gatewayKeys.publicKeyPem,
        UPSTREAM_URL: opts.platformUrl,
        UPSTREAM_CREDENTIAL_KEY: randomBytes(32).toString('base64'),
        UPSTREAM_RATE_PER_SECOND: String(opts.ratePerSecond ?? 1000),
        UPSTREAM_BURST: String(opts.burst ?? 1000),
        UPSTREAM_TIMEOUT_MS: String(opts.timeoutMs ?? 10_000),
        CHANGES_PUBLIC_KEY: opts.trustChanges ? changesKeys.publicKeyPem : '',
      });
      const server = buildServer({
        pool,
        verifier: await createPrincipalVerifier(trustedIssuers(config), SERVICE_NAME),
        logger: silent,
        cipher,
        platform: createPlatformClient({
          baseUrl: config.UPSTREAM_URL,
          timeoutMs: config.UPSTREAM_TIMEOUT_MS,
        }),
        budget: { ratePerSecond: config.UPSTREAM_RATE_PER_SECOND, burst: config.UPSTREAM_BURST },
      });
      const url = `http://127.0.0.1:${await server.listen(0)}`;
      const proxy: Replica = {
        url,
        client: createServiceClient(UpstreamService, url, SERVICE_NAME, gatewaySigner),
        close: async () => {
          proxies.delete(proxy);
          await server.close(500);
        },
      };
      proxies.add(proxy);
      return proxy;
    },
    workerClient(proxy) {
      return createServiceClient(UpstreamService, proxy.url, SERVICE_NAME, workerSigner);
    },
    async connect(workspaceId, opts = {}) {
      const accountId = randomUUID();
      await insertConnection(pool, {
        accountId,
        workspaceId,
        name: 'Test account',
        currency: 'USD',
        timeZone: 'UTC',
        canWrite: opts.canWrite ?? true,
        upstreamAccountId: `act_${randomBytes(4).toString('hex')}`,
        credentialCiphertext: cipher.seal(opts.credential ?? 'sbx_test-credential', {
          workspaceId,
          accountId,
        }),
      });
      return accountId;
    },
    async stop() {
      for (const p of [...proxies]) await p.close();
      await pool.end();
      await db.drop();
      await stopTestServer();
    },
  };
}
