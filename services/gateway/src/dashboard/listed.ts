/**
 * Lists a dashboard page shows beside its own records (the ad accounts for names and time zones,
 * the optimizers for filters): a page still renders when the service listing them is down, with
 * the list empty, so each read answers [] on failure.
 */
import { type Optimizer, OptimizerService } from '@adsmcp/proto/optimizer/v1/optimizer_pb';
import type { Account } from '@adsmcp/proto/upstream/v1/upstream_pb';
import type { Principal } from '@adsmcp/runtime/principal';
import { type GatewayDeps, onBehalfOf } from '../deps.ts';

/** The workspace's ad accounts as the caller may list them, or none when they cannot be read. */
export function accountsOrNone(deps: GatewayDeps, principal: Principal): Promise<Account[]> {
  return deps.upstream.listAccounts({}, onBehalfOf(principal)).then(
    (r) => r.accounts,
    () => [],
  );
}

/** The workspace's optimizers (the first 100), or none when they cannot be read. */
export function optimizersOrNone(deps: GatewayDeps, principal: Principal): Promise<Optimizer[]> {
  return deps
    .clientOf(OptimizerService)
    .listOptimizers({ limit: 100 }, onBehalfOf(principal))
    .then(
      (r) => r.optimizers,
      () => [],
    );
}
