/**
 * The changes service in-process for its integration tests, as the stack runs it: its migrations
 * and the bus's tables on a fresh database, re-reading objects from the real platform of
 * `live-platform.ts`, accepting the gateway's tokens and those of the `peers` named.
 */
import { fileURLToPath } from 'node:url';
import { ChangesService } from '@adsmcp/proto/changes/v1/changes_pb';
import { migrateBus } from '@adsmcp/runtime/bus/outbox';
import { type ServiceUnderTest, startServiceUnderTest } from '@adsmcp/testkit/service-harness';
import { buildServer, SERVICE_NAME } from '../src/server.ts';
import type { LivePlatform } from './live-platform.ts';

export type ChangesUnderTest = ServiceUnderTest<typeof ChangesService>;

export function startChangesService(
  platform: LivePlatform,
  opts: { peers?: readonly string[] } = {},
): Promise<ChangesUnderTest> {
  return startServiceUnderTest({
    service: ChangesService,
    name: SERVICE_NAME,
    migrations: fileURLToPath(new URL('../migrations', import.meta.url)),
    prepare: (p) => migrateBus(p, SERVICE_NAME),
    ...(opts.peers === undefined ? {} : { peers: opts.peers }),
    build: (deps) => buildServer({ ...deps, upstream: platform.upstream }),
  });
}
