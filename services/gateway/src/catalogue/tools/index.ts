/** Every tool the gateway lists, in catalogue order. A tool appears here only when it works. */
import type { GatewayDeps } from '../../deps.ts';
import type { ToolDefinition } from '../catalogue.ts';
import { disconnectClient, getConnectionContext, listAccounts } from './connection-tools.ts';

export const allTools: readonly ToolDefinition<GatewayDeps>[] = [
  getConnectionContext,
  listAccounts,
  disconnectClient,
];
