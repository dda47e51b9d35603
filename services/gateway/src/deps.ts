/** What the gateway's routes and tools are built from; only main.ts creates these. */
import type { UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import type { Pool } from '@adsmcp/runtime/db';
import type { Logger } from '@adsmcp/runtime/log';
import type { Principal } from '@adsmcp/runtime/principal';
import { callerKey } from '@adsmcp/runtime/service-client';
import { type CallOptions, type Client, createContextValues } from '@connectrpc/connect';

export interface GatewayDeps {
  pool: Pool;
  logger: Logger;
  upstream: Client<typeof UpstreamService>;
}

/** Call options that make a service call on behalf of `principal`. */
export function onBehalfOf(principal: Principal): CallOptions {
  return { contextValues: createContextValues().set(callerKey, principal) };
}
