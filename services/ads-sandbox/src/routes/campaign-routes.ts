/** The platform's campaign reads: list an account's campaigns and get one. */
import type { Pool } from '@adsmcp/runtime/db';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { list, refuseQuery, refuseUnknownParameters } from '../ad-requests.ts';
import { CAMPAIGN_STATUSES, type CampaignStatus, campaignJson } from '../campaigns.ts';
import { invalidRequest, notFound } from '../errors.ts';
import { PAGING_PARAMETERS, pageJson, parsePaging, type RawQuery, single } from '../paging.ts';
import { requestAccount } from '../platform.ts';
import { findCampaign, pageCampaigns } from '../store/campaign-store.ts';

export interface CampaignRouteDeps {
  pool: Pool;
  /** The platform guard (authentication, rate limit, faults). */
  guard: (req: FastifyRequest) => Promise<void>;
}

const CURSOR_KIND = 'campaigns';

/** parseStatusFilter validates an optional `status` filter against a resource's statuses. */
export function parseStatusFilter<T extends string>(query: RawQuery, statuses: readonly T[]): T | undefined {
  const status = single(query, 'status');
  if (status !== undefined && !(statuses as readonly string[]).includes(status)) {
    throw invalidRequest('status', `status must be one of ${list(statuses)}; got "${status}"`);
  }
  return status as T | undefined;
}

/** registerCampaignRoutes adds `GET /campaigns` and `GET /campaigns/{campaign_id}` to `app`. */
export function registerCampaignRoutes(app: FastifyInstance, deps: CampaignRouteDeps): void {
  const { pool, guard } = deps;

  app.get<{ Querystring: RawQuery }>('/campaigns', { onRequest: guard }, async (req) => {
    const account = requestAccount(req);
    refuseUnknownParameters(req.query, ['status', ...PAGING_PARAMETERS]);
    const status = parseStatusFilter<CampaignStatus>(req.query, CAMPAIGN_STATUSES);
    const page = await pageCampaigns(
      pool,
      { accountId: account.id, status },
      parsePaging(req.query, CURSOR_KIND),
    );
    return pageJson(CURSOR_KIND, page, (c) => campaignJson(c, account.currency));
  });

  app.get<{ Params: { campaign_id: string }; Querystring: RawQuery }>(
    '/campaigns/:campaign_id',
    { onRequest: guard },
    async (req) => {
      const account = requestAccount(req);
      refuseQuery(req.query);
      const campaign = await findCampaign(pool, account.id, req.params.campaign_id);
      if (campaign === undefined) throw notFound(`no campaign ${req.params.campaign_id} in this account`);
      return campaignJson(campaign, account.currency);
    },
  );
}
