/**
 * The optimizer service in-process on an ephemeral port over a fresh database, with a principal
 * key pair to sign calls as the gateway does, and a clock the test moves.
 */
import { randomUUID } from 'node:crypto';
import { OptimizerService } from '@adsmcp/proto/optimizer/v1/optimizer_pb';
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
import { type CallOptions, type Client, createContextValues } from '@connectrpc/connect';
import { buildServer, MIGRATIONS_DIR, SCHEMA, SERVICE_NAME } from '../src/server.ts';

export interface TestService {
  /** The service's base URL (HTTP/2 cleartext). */
  url: string;
  /** The service's own pool, on its schema. */
  pool: Pool;
  client: Client<typeof OptimizerService>;
  /** Call options that make a call on behalf of `principal`. */
  as(principal: Principal): CallOptions;
  /** The service's current time. */
  now(): Date;
  /** Moves the service's clock forward. */
  advance(ms: number): void;
  stop(): Promise<void>;
}

/** A principal in a new workspace, an admin with read and write scopes unless overridden. */
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

/** startService migrates a fresh database and starts the service on it; stop() closes both. */
export async function startService(): Promise<TestService> {
  const db = await testDatabase();
  const pool = createPool(db.url, SCHEMA);
  await migrate(pool, SCHEMA, MIGRATIONS_DIR);
  const keys = await generatePrincipalKeys();
  let now = new Date('2026-03-01T10:00:00.000Z');
  const server = buildServer({
    pool,
    verifier: await createPrincipalVerifier(keys.publicKeyPem, SERVICE_NAME),
    logger: createLogger(SERVICE_NAME, 'silent'),
    clock: () => now,
  });
  const url = `http://127.0.0.1:${await server.listen(0)}`;
  const signer = await createPrincipalSigner(keys.privateKeyPem);
  return {
    url,
    pool,
    client: createServiceClient(OptimizerService, url, SERVICE_NAME, signer),
    as: (p) => ({ contextValues: createContextValues().set(callerKey, p) }),
    now: () => now,
    advance(ms) {
      now = new Date(now.getTime() + ms);
    },
    async stop() {
      await server.close(1000);
      await pool.end();
      await db.drop();
      await stopTestServer();
    },
  };
}
