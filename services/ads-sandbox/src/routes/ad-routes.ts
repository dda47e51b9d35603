/** The platform's ad endpoints: list, get, update and archive an account's ads. */
import type { Pool, Queryable } from '@adsmcp/runtime/db';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { requireFile } from '../ad-files.ts';
import {
  ADS_CURSOR_KIND,
  parseAdUpdate,
  parseArchiveBody,
  parseGetAdQuery,
  parseListAdsQuery,
  type RawQuery,
  refuseQuery,
} from '../ad-requests.ts';
import { type Ad, adJson, applyUpdate, archive } from '../ads.ts';
import { notFound } from '../errors.ts';
import { answerMutation } from '../mutation-route.ts';
import { pageJson } from '../paging.ts';
import { requestAccount } from '../platform.ts';
import { findAd, pageAds, saveAd } from '../store/ad-store.ts';

export interface AdRouteDeps {
  pool: Pool;
  /** The platform guard (authentication, rate limit, faults). */
  guard: (req: FastifyRequest) => Promise<void>;
}

type AdParams = { Params: { ad_id: string }; Querystring: RawQuery };

const adNotFound = (adId: string) => notFound(`no ad ${adId} in this account`);

/** registerAdRoutes adds `GET /ads`, `GET /ads/{ad_id}`, `POST /ads/{ad_id}` and its archive. */
export function registerAdRoutes(app: FastifyInstance, deps: AdRouteDeps): void {
  const { pool, guard } = deps;

  app.get<{ Querystring: RawQuery }>('/ads', { onRequest: guard }, async (req) => {
    const account = requestAccount(req);
    const q = parseListAdsQuery(req.query);
    const page = await pageAds(pool, { accountId: account.id, adGroupId: q.adGroupId, name: q.name }, q);
    return pageJson(ADS_CURSOR_KIND, page, (ad) => adJson(ad, q.include));
  });

  app.get<AdParams>('/ads/:ad_id', { onRequest: guard }, async (req) => {
    const account = requestAccount(req);
    const include = parseGetAdQuery(req.query);
    const ad = await findAd(pool, account.id, req.params.ad_id);
    if (ad === undefined) throw adNotFound(req.params.ad_id);
    return adJson(ad, include);
  });

  /**
   * Runs `change` on the (locked) ad, in the transaction of `db`, through the idempotency ledger
   * and answers with the ad.
   */
  async function mutateAd(
    req: FastifyRequest<AdParams>,
    reply: FastifyReply,
    body: unknown,
    change: (ad: Ad, db: Queryable) => Promise<{ ad: Ad; changed: boolean }> | { ad: Ad; changed: boolean },
  ): Promise<FastifyReply> {
    const account = requestAccount(req);
    const adId = req.params.ad_id;
    return answerMutation(pool, req, reply, body, async (client) => {
      const ad = await findAd(client, account.id, adId, { forUpdate: true });
      if (ad === undefined) throw adNotFound(adId);
      const next = await change(ad, client);
      const saved = next.changed ? await saveAd(client, next.ad) : ad;
      return { status: 200, body: adJson(saved) };
    });
  }

  app.post<AdParams>('/ads/:ad_id', { onRequest: guard }, async (req, reply) => {
    refuseQuery(req.query);
    const update = parseAdUpdate(req.body);
    return mutateAd(req, reply, req.body, async (ad, db) => {
      const next = applyUpdate(ad, update);
      // The image the ad has is kept without a look-up, even from before files were checked.
      const fileId = update.creative?.file_id;
      if (fileId !== undefined && fileId !== ad.creative.file_id) await requireFile(db, ad.accountId, fileId);
      return next;
    });
  });

  app.post<AdParams>('/ads/:ad_id/archive', { onRequest: guard }, async (req, reply) => {
    refuseQuery(req.query);
    parseArchiveBody(req.body);
    // An absent body and {} are the same request, for the ledger and for Idempotency-Key replays.
    return mutateAd(req, reply, {}, archive);
  });
}
