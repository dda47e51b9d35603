/**
 * The marketing service in-process on an ephemeral port over a fresh, migrated database, with a
 * principal key pair to sign calls as the gateway does.
 */
import { randomUUID } from 'node:crypto';
import { MarketingService } from '@adsmcp/proto/marketing/v1/marketing_pb';
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
import { type CallOptions, type Client, createClient, createContextValues } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { buildServer, MIGRATIONS_DIR, SERVICE_NAME } from '../src/server.ts';

export interface RunningService {
  url: string;
  /** The service's own pool, on its schema. */
  pool: Pool;
  /** A client that signs each call for the principal in its call options (see `as`). */
  client: Client<typeof MarketingService>;
  /** A client that sends no principal token at all. */
  anonymous: Client<typeof MarketingService>;
  as(principal: Principal): CallOptions;
  stop(): Promise<void>;
}

/** A principal in a new workspace: an admin with read and write scopes unless overridden. */
export function principal(overrides: Partial<Principal> = {}): Principal {
  return {
    workspaceId: randomUUID(),
    credentialId: randomUUID(),
    userId: randomUUID(),
    role: 'admin',
    scopes: ['read', 'write'],
    via: 'mcp',
    ...overrides,
  };
}

/** startService migrates a fresh database and serves the marketing service on it over gRPC. */
export async function startService(): Promise<RunningService> {
  const db = await testDatabase();
  const pool = createPool(db.url, SERVICE_NAME);
  await migrate(pool, SERVICE_NAME, MIGRATIONS_DIR);
  const keys = await generatePrincipalKeys();
  const server = buildServer({
    pool,
    verifier: await createPrincipalVerifier(keys.publicKeyPem, SERVICE_NAME),
    logger: createLogger(SERVICE_NAME, 'silent'),
  });
  const url = `http://127.0.0.1:${await server.listen(0)}`;
  const signer = await createPrincipalSigner(keys.privateKeyPem);
  return {
    url,
    pool,
    client: createServiceClient(MarketingService, url, SERVICE_NAME, signer),
    anonymous: createClient(MarketingService, createGrpcTransport({ baseUrl: url })),
    as: (p) => ({ contextValues: createContextValues().set(callerKey, p) }),
    async stop() {
      await server.close(1000);
      await pool.end();
      await db.drop();
      await stopTestServer();
    },
  };
}
