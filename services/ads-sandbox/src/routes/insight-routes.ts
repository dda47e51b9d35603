/** The platform's delivery insights of an ad group (its ads aggregated) and of one ad. */
import type { Pool } from '@adsmcp/runtime/db';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { notFound } from '../errors.ts';
import { defaultTimeRange, type InsightsQuery, parseInsightsQuery } from '../insight-requests.ts';
import { type EntityLabels, insightsResponse } from '../insight-rows.ts';
import { aggregate, type InsightEntity } from '../insights.ts';
import { localTime } from '../local-date.ts';
import type { RawQuery } from '../paging.ts';
import { requestAccount } from '../platform.ts';
import type { Account } from '../store/account-store.ts';
import { findAd } from '../store/ad-store.ts';
import { findAdGroupRef, listAdRefs } from '../store/insight-store.ts';

export interface InsightRouteDeps {
  pool: Pool;
  /** The platform guard (authentication, rate limit, faults). */
  guard: (req: FastifyRequest) => Promise<void>;
  /** The sandbox clock (ms since the epoch): it decides which local day is the current one. */
  now: () => number;
}

interface Scope {
  entities: InsightEntity[];
  labels: (entityId: string | undefined) => EntityLabels;
}

function respond(account: Account, q: InsightsQuery, scope: Scope, now: number) {
  const today = localTime(now, account.timeZone);
  const rows = aggregate({
    entities: scope.entities,
    ranges: q.ranges ?? [defaultTimeRange(today.date)],
    granularity: q.granularity,
    segments: q.segments,
    today,
  });
  return insightsResponse(rows, q, scope.labels, { currency: account.currency, timeZone: account.timeZone });
}

/** registerInsightRoutes adds `GET /ad_groups/{ad_group_id}/insights` and `GET /ads/{ad_id}/insights`. */
export function registerInsightRoutes(app: FastifyInstance, deps: InsightRouteDeps): void {
  const { pool, guard } = deps;

  app.get<{ Params: { ad_group_id: string }; Querystring: RawQuery }>(
    '/ad_groups/:ad_group_id/insights',
    { onRequest: guard },
    async (req) => {
      const account = requestAccount(req);
      const q = parseInsightsQuery(req.query, ['ad_group', 'ad']);
      const group = await findAdGroupRef(pool, account.id, req.params.ad_group_id);
      if (group === undefined) throw notFound(`no ad group ${req.params.ad_group_id} in this account`);
      const ads = await listAdRefs(pool, account.id, group.id);
      const names = new Map(ads.map((ad) => [ad.id, ad.name]));
      const scope: Scope =
        q.level === 'ad_group'
          ? {
              entities: [{ id: group.id, adIds: ads.map((ad) => ad.id) }],
              labels: () => ({ ids: { ad_group_id: group.id }, names: { ad_group_name: group.name } }),
            }
          : {
              entities: ads.map((ad) => ({ id: ad.id, adIds: [ad.id] })),
              labels: (id) => ({
                ids: { ad_group_id: group.id, ad_id: id ?? '' },
                names: { ad_group_name: group.name, ad_name: names.get(id ?? '') ?? '' },
              }),
            };
      return respond(account, q, scope, deps.now());
    },
  );

  app.get<{ Params: { ad_id: string }; Querystring: RawQuery }>(
    '/ads/:ad_id/insights',
    { onRequest: guard },
    async (req) => {
      const account = requestAccount(req);
      const q = parseInsightsQuery(req.query, ['ad']);
      const ad = await findAd(pool, account.id, req.params.ad_id);
      if (ad === undefined) throw notFound(`no ad ${req.params.ad_id} in this account`);
      const scope: Scope = {
        entities: [{ id: ad.id, adIds: [ad.id] }],
        labels: () => ({ ids: { ad_group_id: ad.adGroupId, ad_id: ad.id }, names: { ad_name: ad.name } }),
      };
      return respond(account, q, scope, deps.now());
    },
  );
}
