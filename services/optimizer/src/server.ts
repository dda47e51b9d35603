import { fileURLToPath } from 'node:url';
import { OptimizerService } from '@adsmcp/proto/optimizer/v1/optimizer_pb';
import { ReviewService } from '@adsmcp/proto/optimizer/v1/reviews_pb';
import { SnapshotService } from '@adsmcp/proto/optimizer/v1/snapshot_pb';
import { buildConnectServer, type ConnectServer } from '@adsmcp/runtime/connect-server';
import type { Pool } from '@adsmcp/runtime/db';
import type { Logger } from '@adsmcp/runtime/log';
import type { PrincipalVerifier } from '@adsmcp/runtime/principal';
import type { Assets } from './handlers/asset-checks.ts';
import { createOptimizerHandlers } from './handlers/optimizer-handlers.ts';
import { createReviewHandlers } from './handlers/review-handlers.ts';
import { createSnapshotHandlers } from './handlers/snapshot-handlers.ts';
import type { Upstream } from './work/snapshot-read.ts';

/** The service name: health reports it and principal tokens for this service are addressed to it. */
export const SERVICE_NAME = 'optimizer';
/** The service's Postgres schema. */
export const SCHEMA = 'optimizer';
/** The issuer the optimizer's worker signs as (who trusts it: the trust table, @adsmcp/runtime/trust). */
export { OPTIMIZER_ISSUER as ISSUER } from '@adsmcp/runtime/trust';
export const MIGRATIONS_DIR = fileURLToPath(new URL('../migrations', import.meta.url));

export interface Deps {
  pool: Pool;
  verifier: PrincipalVerifier;
  logger: Logger;
  /** The time; defaults to the system clock. */
  clock?: () => Date;
  /** The marketing service's campaign assets (MARKETING_URL), to check the assets variants name. */
  assets?: Assets;
  /** The upstream-proxy (UPSTREAM_PROXY_URL), where snapshots are read as the optimizer's worker. */
  upstream?: Upstream;
}

/** buildServer returns the optimizer service's Connect server, not yet listening. */
export function buildServer(deps: Deps): ConnectServer {
  const clock = deps.clock ?? (() => new Date());
  return buildConnectServer({
    serviceName: SERVICE_NAME,
    verifier: deps.verifier,
    logger: deps.logger,
    routes: (router) => {
      router.service(OptimizerService, createOptimizerHandlers({ pool: deps.pool, clock }));
      router.service(
        ReviewService,
        createReviewHandlers({
          pool: deps.pool,
          clock,
          ...(deps.assets === undefined ? {} : { assets: deps.assets }),
        }),
      );
      router.service(
        SnapshotService,
        createSnapshotHandlers({
          pool: deps.pool,
          clock,
          logger: deps.logger,
          ...(deps.upstream === undefined ? {} : { upstream: deps.upstream }),
        }),
      );
    },
  });
}
