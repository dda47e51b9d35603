import { AccountsService } from '@adsmcp/proto/changes/v1/accounts_pb';
import { AuditService } from '@adsmcp/proto/changes/v1/audit_pb';
import { BatchService } from '@adsmcp/proto/changes/v1/batches_pb';
import { ChangesService } from '@adsmcp/proto/changes/v1/changes_pb';
import { ControlsService } from '@adsmcp/proto/changes/v1/controls_pb';
import { RevertService } from '@adsmcp/proto/changes/v1/revert_pb';
import { StandardsService } from '@adsmcp/proto/changes/v1/standards_pb';
import { WebhooksService } from '@adsmcp/proto/changes/v1/webhooks_pb';
import { buildConnectServer, type ConnectServer } from '@adsmcp/runtime/connect-server';
import type { Pool } from '@adsmcp/runtime/db';
import type { Logger } from '@adsmcp/runtime/log';
import type { PrincipalVerifier } from '@adsmcp/runtime/principal';
import { accountsHandlers } from './handlers/accounts-handlers.ts';
import { auditHandlers } from './handlers/audit-handlers.ts';
import { batchHandlers } from './handlers/batch-handlers.ts';
import { changesHandlers } from './handlers/changes-handlers.ts';
import { controlsHandlers } from './handlers/controls-handlers.ts';
import { revertHandlers } from './handlers/revert-handlers.ts';
import { standardsHandlers } from './handlers/standards-handlers.ts';
import { type WebhookHandlerDeps, webhookHandlers } from './handlers/webhook-handlers.ts';
import type { Marketing } from './planning/campaign-assets.ts';
import type { Upstream } from './planning/platform-reads.ts';
import type { MarketingItems } from './planning/saved-ad-batch.ts';

export const SERVICE_NAME = 'changes';
/**
 * The issuer this service signs as (ISSUER), and the optimizer's, which may record approved
 * changes: who trusts whom is the trust table (@adsmcp/runtime/trust).
 */
export { CHANGES_ISSUER as ISSUER, OPTIMIZER_ISSUER } from '@adsmcp/runtime/trust';

export interface Deps {
  pool: Pool;
  /** Connections that plan a statement once, for the expired changes' deep pages (listChanges). */
  genericPlans?: Pool | undefined;
  verifier: PrincipalVerifier;
  logger: Logger;
  /** The upstream-proxy, signed for with this service's own key (see ISSUER): planning reads and approval re-reads. */
  upstream: Upstream;
  /**
   * The marketing service's assets, signed for with this service's own key: the campaign images a
   * change's creatives name, pinned at prepare and uploaded on apply. Unset, none can be used.
   */
  marketing?: Marketing;
  /** The marketing service's items: the saved ad batches, read on behalf of their caller. */
  items?: MarketingItems;
  /** Webhooks' secrets and allowed hosts; unset, WebhooksService is not served. */
  webhooks?: Omit<WebhookHandlerDeps, 'pool'>;
}

/** buildServer returns the changes service's Connect server, not yet listening. */
export function buildServer(deps: Deps): ConnectServer {
  return buildConnectServer({
    serviceName: SERVICE_NAME,
    verifier: deps.verifier,
    logger: deps.logger,
    routes: (router) => {
      const peers = { upstream: deps.upstream, marketing: deps.marketing };
      router.service(
        ChangesService,
        changesHandlers({ pool: deps.pool, genericPlans: deps.genericPlans, ...peers }),
      );
      router.service(StandardsService, standardsHandlers(deps.pool, deps.upstream));
      router.service(BatchService, batchHandlers({ pool: deps.pool, ...peers, items: deps.items }));
      router.service(RevertService, revertHandlers({ pool: deps.pool, ...peers }));
      if (deps.webhooks)
        router.service(WebhooksService, webhookHandlers({ pool: deps.pool, ...deps.webhooks }));
      router.service(ControlsService, controlsHandlers(deps.pool, deps.upstream));
      router.service(AuditService, auditHandlers(deps.pool));
      router.service(AccountsService, accountsHandlers({ pool: deps.pool, upstream: deps.upstream }));
    },
  });
}
