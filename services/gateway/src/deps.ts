/** What the gateway's routes and tools are built from; only main.ts creates these. */
import type { ChangesService } from '@adsmcp/proto/changes/v1/changes_pb';
import type { MarketingService } from '@adsmcp/proto/marketing/v1/marketing_pb';
import type { OptimizerService } from '@adsmcp/proto/optimizer/v1/optimizer_pb';
import type { UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import type { Pool } from '@adsmcp/runtime/db';
import type { Logger } from '@adsmcp/runtime/log';
import type { DescService } from '@bufbuild/protobuf';
import type { Client } from '@connectrpc/connect';
import type { AssetLinks } from './assets/asset-links.ts';

export interface GatewayDeps {
  pool: Pool;
  /** The gateway's public base URL (links to the dashboard in tool results). */
  publicUrl: string;
  logger: Logger;
  upstream: Client<typeof UpstreamService>;
  changes: Client<typeof ChangesService>;
  optimizer: Client<typeof OptimizerService>;
  marketing: Client<typeof MarketingService>;
  /**
   * The client of any internal service, found by its proto package (`marketing.v1.X` is served by
   * the marketing process): a service added to a process's proto package needs no wiring here.
   */
  clientOf: <T extends DescService>(service: T) => Client<T>;
  /**
   * Forgets what this gateway replica remembers of a credential's authentication, so that its
   * revocation takes effect at once; buildServer sets it.
   */
  forgetCredential?: (credentialId: string) => void;
  /** Issues temporary delivery links to campaign asset images; buildServer sets it. */
  assetLinks?: AssetLinks;
}

export { onBehalfOf } from '@adsmcp/runtime/service-client';
