/** The marketing service in-process over a fresh, migrated database (see the testkit harness). */
import { MarketingService } from '@adsmcp/proto/marketing/v1/marketing_pb';
import { type ServiceUnderTest, startServiceUnderTest, testPrincipal } from '@adsmcp/testkit/service-harness';
import { buildServer, MIGRATIONS_DIR, SERVICE_NAME } from '../src/server.ts';

export type RunningService = ServiceUnderTest<typeof MarketingService>;
export const principal = testPrincipal;

export function startService(): Promise<RunningService> {
  return startServiceUnderTest({
    service: MarketingService,
    name: SERVICE_NAME,
    migrations: MIGRATIONS_DIR,
    build: buildServer,
  });
}
