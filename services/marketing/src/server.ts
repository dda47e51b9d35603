import { fileURLToPath } from 'node:url';
import { AssetService } from '@adsmcp/proto/marketing/v1/assets_pb';
import { CompetitorService } from '@adsmcp/proto/marketing/v1/competitors_pb';
import { ImportService } from '@adsmcp/proto/marketing/v1/imports_pb';
import { MarketingService } from '@adsmcp/proto/marketing/v1/marketing_pb';
import { ReportService } from '@adsmcp/proto/marketing/v1/reports_pb';
import { VariationService } from '@adsmcp/proto/marketing/v1/variations_pb';
import { buildConnectServer, type ConnectServer } from '@adsmcp/runtime/connect-server';
import type { Pool } from '@adsmcp/runtime/db';
import type { Logger } from '@adsmcp/runtime/log';
import type { PrincipalVerifier } from '@adsmcp/runtime/principal';
import { createAssetHandlers } from './handlers/asset-handlers.ts';
import { createCompetitorHandlers } from './handlers/competitor-handlers.ts';
import { createImportHandlers } from './handlers/import-handlers.ts';
import { createMarketingHandlers } from './handlers/marketing-handlers.ts';
import { createReportHandlers } from './handlers/report-handlers.ts';
import { createVariationHandlers } from './handlers/variation-handlers.ts';
import type { ImageFetch } from './images/remote-image.ts';
import type { Upstream } from './platform/report-reads.ts';

/** The service name: health reports it, principal tokens for this service are addressed to it, and it names the schema. */
export const SERVICE_NAME = 'marketing';
export const MIGRATIONS_DIR = fileURLToPath(new URL('../migrations', import.meta.url));

export interface Deps {
  pool: Pool;
  verifier: PrincipalVerifier;
  logger: Logger;
  /** How campaign images are fetched from a URL: the product's safe fetcher unless a test gives one. */
  fetch?: ImageFetch;
  /** The upstream-proxy (UPSTREAM_PROXY_URL), where performance reports read the ad platform as this service. */
  upstream?: Upstream;
}

/** buildServer returns the marketing service's Connect server, not yet listening. */
export function buildServer(deps: Deps): ConnectServer {
  return buildConnectServer({
    serviceName: SERVICE_NAME,
    verifier: deps.verifier,
    logger: deps.logger,
    routes: (router) => {
      router.service(MarketingService, createMarketingHandlers(deps));
      router.service(ReportService, createReportHandlers(deps));
      router.service(CompetitorService, createCompetitorHandlers(deps));
      router.service(AssetService, createAssetHandlers(deps));
      router.service(ImportService, createImportHandlers(deps));
      router.service(VariationService, createVariationHandlers());
    },
  });
}
