/** Every tool the gateway lists, in catalogue order. A tool appears here only when it works. */
import type { GatewayDeps } from '../../deps.ts';
import type { ToolDefinition } from '../catalogue.ts';
import { adTools } from './ad-tools.ts';
import { changeTools } from './change-tools.ts';
import { disconnectClient, getConnectionContext, listAccounts } from './connection-tools.ts';
import { marketingTools } from './marketing-tools.ts';
import { optimizerTools } from './optimizer-tools.ts';

export const allTools: readonly ToolDefinition<GatewayDeps>[] = [
  getConnectionContext,
  listAccounts,
  ...adTools,
  ...changeTools,
  ...marketingTools,
  ...optimizerTools,
  disconnectClient,
];
