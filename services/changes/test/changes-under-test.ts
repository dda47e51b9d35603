/**
 * The changes service in-process for its integration tests, as the stack runs it: its migrations
 * and the bus's tables on a fresh database, re-reading objects from the real platform of
 * `live-platform.ts`, accepting the gateway's tokens and those of the `peers` named.
 */
import { fileURLToPath } from 'node:url';
import {
  type Change,
  ChangeResolutionSchema,
  ChangeStatusSchema,
  ChangesService,
  type PrepareChangeRequestSchema,
} from '@adsmcp/proto/changes/v1/changes_pb';
import { migrateBus } from '@adsmcp/runtime/bus/outbox';
import { enumWord } from '@adsmcp/runtime/enum-words';
import { type ServiceUnderTest, startServiceUnderTest } from '@adsmcp/testkit/service-harness';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { buildServer, SERVICE_NAME } from '../src/server.ts';
import type { LivePlatform } from './live-platform.ts';

/** A change's status as tools name it (prepared, applied), so that an assertion reads as the product does. */
export function statusOf(c: Pick<Change, 'state'> | undefined): string | null | undefined {
  return c === undefined ? undefined : enumWord(ChangeStatusSchema, c.state);
}

/** How a person settled a change's unknown outcome, as tools name it (not_applied); null when nobody did. */
export function resolutionOf(c: Pick<Change, 'resolvedAs'> | undefined): string | null | undefined {
  return c === undefined ? undefined : enumWord(ChangeResolutionSchema, c.resolvedAs);
}

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

/**
 * A prepare request for a change that creates an object by POSTing `body` to `path`: nothing exists
 * yet to re-read before it is sent.
 */
export function creating(
  accountId: string,
  tool: string,
  objectType: string,
  path: string,
  body: Record<string, unknown>,
): MessageInitShape<typeof PrepareChangeRequestSchema> {
  return {
    accountId,
    tool,
    objectType,
    effect: 'create',
    operation: { method: 'POST', path, bodyJson: JSON.stringify(body) },
    targetPath: '',
  };
}
