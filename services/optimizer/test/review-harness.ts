/**
 * The optimizer service in-process for the review tests: its services' clients, signed as the
 * gateway signs, over a fresh migrated database (with the bus's tables), with a clock the test moves.
 */
import { OptimizerService } from '@adsmcp/proto/optimizer/v1/optimizer_pb';
import { ReviewService } from '@adsmcp/proto/optimizer/v1/reviews_pb';
import { SnapshotService } from '@adsmcp/proto/optimizer/v1/snapshot_pb';
import { migrateBus } from '@adsmcp/runtime/bus/outbox';
import { createPool, migrate, type Pool } from '@adsmcp/runtime/db';
import { createLogger } from '@adsmcp/runtime/log';
import {
  createPrincipalSigner,
  createPrincipalVerifier,
  generatePrincipalKeys,
} from '@adsmcp/runtime/principal';
import { createServiceClient } from '@adsmcp/runtime/service-client';
import { stopTestServer, testDatabase } from '@adsmcp/testkit/postgres';
import { as } from '@adsmcp/testkit/service-harness';
import type { Client } from '@connectrpc/connect';
import { buildServer, MIGRATIONS_DIR, SCHEMA, SERVICE_NAME } from '../src/server.ts';

export interface ReviewHarness {
  pool: Pool;
  optimizers: Client<typeof OptimizerService>;
  reviews: Client<typeof ReviewService>;
  /** Without an upstream-proxy: every snapshot read fails, as one that cannot reach the platform. */
  snapshots: Client<typeof SnapshotService>;
  as: typeof as;
  now(): Date;
  advance(ms: number): void;
  stop(): Promise<void>;
}

export async function startReviewHarness(): Promise<ReviewHarness> {
  let now = new Date('2026-03-01T10:00:00.000Z');
  const db = await testDatabase();
  const pool = createPool(db.url, SCHEMA);
  await migrate(pool, SCHEMA, MIGRATIONS_DIR);
  await migrateBus(pool, SCHEMA);
  const keys = await generatePrincipalKeys();
  const server = buildServer({
    pool,
    verifier: await createPrincipalVerifier(keys.publicKeyPem, SERVICE_NAME),
    logger: createLogger(SERVICE_NAME, 'silent'),
    clock: () => now,
  });
  const url = `http://127.0.0.1:${await server.listen(0)}`;
  const signer = await createPrincipalSigner(keys.privateKeyPem);
  return {
    pool,
    optimizers: createServiceClient(OptimizerService, url, SERVICE_NAME, signer),
    reviews: createServiceClient(ReviewService, url, SERVICE_NAME, signer),
    snapshots: createServiceClient(SnapshotService, url, SERVICE_NAME, signer),
    as,
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
