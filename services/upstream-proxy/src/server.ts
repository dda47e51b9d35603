import { fileURLToPath } from 'node:url';
import { UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { buildConnectServer, type ConnectServer } from '@adsmcp/runtime/connect-server';
import type { Pool } from '@adsmcp/runtime/db';
import type { Logger } from '@adsmcp/runtime/log';
import type { PrincipalVerifier } from '@adsmcp/runtime/principal';
import type { CredentialCipher } from './domain/credential-cipher.ts';
import { createUpstreamHandlers } from './handlers/upstream-handlers.ts';
import type { PlatformClient } from './upstream/platform-client.ts';
import type { RequestBudgetOptions } from './upstream/request-budget.ts';

/** The service name: health reports it and principal tokens for this service are addressed to it. */
export const SERVICE_NAME = 'upstream-proxy';
/** The service's Postgres schema. */
export const SCHEMA = 'upstream_proxy';
export const MIGRATIONS_DIR = fileURLToPath(new URL('../migrations', import.meta.url));
/** The issuer the changes service's worker signs as (what it may claim here: @adsmcp/runtime/trust). */
export { CHANGES_ISSUER } from '@adsmcp/runtime/trust';

export interface Deps {
  pool: Pool;
  verifier: PrincipalVerifier;
  logger: Logger;
  cipher: CredentialCipher;
  platform: PlatformClient;
  /** The per-account request budget to the platform, shared by every replica on this database. */
  budget: RequestBudgetOptions;
}

/** buildServer returns the upstream-proxy's Connect server, not yet listening. */
export function buildServer(deps: Deps): ConnectServer {
  return buildConnectServer({
    serviceName: SERVICE_NAME,
    verifier: deps.verifier,
    logger: deps.logger,
    routes: (router) => {
      router.service(UpstreamService, createUpstreamHandlers(deps));
    },
  });
}
