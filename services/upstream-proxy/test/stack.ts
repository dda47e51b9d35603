/**
 * The upstream-proxy and the ads sandbox it talks to, both in-process on ephemeral ports over a
 * fresh database (one schema each), with a principal key pair to sign calls as the gateway does.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import {
  buildServer as buildSandbox,
  MIGRATIONS_DIR as SANDBOX_MIGRATIONS,
  SCHEMA as SANDBOX_SCHEMA,
} from '@adsmcp/ads-sandbox/server';
import { UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { createPool, migrate, type Pool } from '@adsmcp/runtime/db';
import { createLogger } from '@adsmcp/runtime/log';
import {
  createPrincipalSigner,
  createPrincipalVerifier,
  generatePrincipalKeys,
  type Principal,
} from '@adsmcp/runtime/principal';
import { callerKey, createServiceClient } from '@adsmcp/runtime/service-client';
import { stopTestServer, testDatabase } from '@adsmcp/testkit/postgres';
import { testPrincipal } from '@adsmcp/testkit/service-harness';
import { type CallOptions, type Client, createContextValues } from '@connectrpc/connect';
import { type CredentialCipher, createCredentialCipher } from '../src/domain/credential-cipher.ts';
import { buildServer, MIGRATIONS_DIR, SCHEMA, SERVICE_NAME } from '../src/server.ts';
import { createPlatformClient } from '../src/upstream/platform-client.ts';

const SANDBOX_ADMIN_TOKEN = 'stack-admin-token-0123456789';

export interface SandboxAccount {
  accountId: string;
  credential: string;
}

export interface Stack {
  /** The upstream-proxy's base URL (HTTP/2 cleartext). */
  proxyUrl: string;
  /** The proxy's own pool, on its schema. */
  pool: Pool;
  cipher: CredentialCipher;
  client: Client<typeof UpstreamService>;
  /** A principal token addressed to the upstream-proxy, as the gateway would sign it. */
  signToken(principal: Principal): Promise<string>;
  /** Call options that make a call on behalf of `principal`. */
  as(principal: Principal): CallOptions;
  /** Creates an account on the sandbox through its operator endpoint. */
  newSandboxAccount(account?: {
    name?: string;
    currency?: string;
    time_zone?: string;
  }): Promise<SandboxAccount>;
  stop(): Promise<void>;
}

/** A principal in a new workspace, an admin with read and write scopes unless overridden. */
export const principal = testPrincipal;

/** startStack starts the sandbox and the upstream-proxy; stop() closes both and the database. */
export async function startStack(): Promise<Stack> {
  const db = await testDatabase();
  const silent = createLogger(SERVICE_NAME, 'silent');

  const sandboxPool = createPool(db.url, SANDBOX_SCHEMA);
  await migrate(sandboxPool, SANDBOX_SCHEMA, SANDBOX_MIGRATIONS);
  const sandbox = buildSandbox({ pool: sandboxPool, adminToken: SANDBOX_ADMIN_TOKEN, logger: silent });
  await sandbox.listen({ port: 0, host: '127.0.0.1' });
  const sandboxUrl = `http://127.0.0.1:${(sandbox.server.address() as AddressInfo).port}`;

  const keys = await generatePrincipalKeys();
  const signer = await createPrincipalSigner(keys.privateKeyPem);
  const pool = createPool(db.url, SCHEMA);
  await migrate(pool, SCHEMA, MIGRATIONS_DIR);
  const cipher = createCredentialCipher(randomBytes(32));
  const proxy = buildServer({
    pool,
    verifier: await createPrincipalVerifier(keys.publicKeyPem, SERVICE_NAME),
    logger: silent,
    cipher,
    platform: createPlatformClient({ baseUrl: sandboxUrl }),
    budget: { ratePerSecond: 1000, burst: 1000 },
  });
  const proxyUrl = `http://127.0.0.1:${await proxy.listen(0)}`;

  return {
    proxyUrl,
    pool,
    cipher,
    client: createServiceClient(UpstreamService, proxyUrl, SERVICE_NAME, signer),
    signToken: (p) => signer.sign(p, SERVICE_NAME),
    as: (p) => ({ contextValues: createContextValues().set(callerKey, p) }),
    async newSandboxAccount(account = {}) {
      const res = await fetch(`${sandboxUrl}/_sandbox/accounts`, {
        method: 'POST',
        headers: { authorization: `Bearer ${SANDBOX_ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          name: 'Sandbox account',
          currency: 'USD',
          time_zone: 'America/New_York',
          ...account,
        }),
      });
      if (res.status !== 201)
        throw new Error(`sandbox refused the account: ${res.status} ${await res.text()}`);
      const body = (await res.json()) as { account_id: string; credential: string };
      return { accountId: body.account_id, credential: body.credential };
    },
    async stop() {
      await proxy.close(1000);
      await sandbox.close();
      await pool.end();
      await sandboxPool.end();
      await db.drop();
      await stopTestServer();
    },
  };
}
