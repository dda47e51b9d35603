/** Every tool the gateway lists, in catalogue order. A tool appears here only when it works. */
import type { GatewayDeps } from '../../deps.ts';
import { buildCatalogue, type Catalogue, type ToolRow } from '../catalogue.ts';
import { GATEWAY_ROUTE_SHAPES, runRoute } from '../route-runner.ts';
import { adGroupTools } from './ad-group-tools.ts';
import { adTools } from './ad-tools.ts';
import { assetTools } from './asset-tools.ts';
import { audienceTools } from './audience-tools.ts';
import { batchTools } from './batch-tools.ts';
import { campaignTools } from './campaign-tools.ts';
import { changeTools } from './change-tools.ts';
import { competitorTools } from './competitor-tools.ts';
import { disconnectClient, getConnectionContext, listAccounts } from './connection-tools.ts';
import { conversionTools } from './conversion-tools.ts';
import { importTools } from './import-tools.ts';
import { insightTools } from './insight-tools.ts';
import { marketingContextTools } from './marketing-context-tools.ts';
import { marketingTools } from './marketing-tools.ts';
import { optimizerTools } from './optimizer-tools.ts';
import { planningTools } from './planning-tools.ts';
import { reportTools } from './report-tools.ts';
import { revertTools } from './revert-tools.ts';
import { reviewTools } from './review-tools.ts';
import { standardTools } from './standard-tools.ts';

export const allTools: readonly ToolRow<GatewayDeps>[] = [
  getConnectionContext,
  listAccounts,
  ...adTools,
  ...adGroupTools,
  ...campaignTools,
  ...planningTools,
  ...batchTools,
  ...insightTools,
  ...conversionTools,
  ...audienceTools,
  ...changeTools,
  ...revertTools,
  ...marketingTools,
  ...marketingContextTools,
  ...reportTools,
  ...importTools,
  ...assetTools,
  ...optimizerTools,
  ...standardTools,
  ...competitorTools,
  ...reviewTools,
  disconnectClient,
];

/** The gateway's catalogue: every tool, resolved and checked once, at start-up. */
export function gatewayCatalogue(): Catalogue<GatewayDeps> {
  return buildCatalogue(allTools, GATEWAY_ROUTE_SHAPES, runRoute);
}
