/** The optimizer service in-process over a fresh, migrated database, with a clock the test moves. */
import { OptimizerService } from '@adsmcp/proto/optimizer/v1/optimizer_pb';
import { type ServiceUnderTest, startServiceUnderTest, testPrincipal } from '@adsmcp/testkit/service-harness';
import { buildServer, MIGRATIONS_DIR, SCHEMA } from '../src/server.ts';

export interface TestService extends ServiceUnderTest<typeof OptimizerService> {
  /** The service's current time. */
  now(): Date;
  /** Moves the service's clock forward. */
  advance(ms: number): void;
}

export const principal = testPrincipal;

export async function startService(): Promise<TestService> {
  let now = new Date('2026-03-01T10:00:00.000Z');
  const svc = await startServiceUnderTest({
    service: OptimizerService,
    name: SCHEMA,
    migrations: MIGRATIONS_DIR,
    build: (deps) => buildServer({ ...deps, clock: () => now }),
  });
  return {
    ...svc,
    now: () => now,
    advance(ms) {
      now = new Date(now.getTime() + ms);
    },
  };
}
