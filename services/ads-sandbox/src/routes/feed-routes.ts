/** The platform's product feed endpoints: list, get and archive an account's feeds. */
import type { Pool } from '@adsmcp/runtime/db';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parseArchiveBody, refuseQuery, refuseUnknownParameters } from '../ad-requests.ts';
import { notFound } from '../errors.ts';
import { FEED_STATUSES, type FeedStatus, feedJson } from '../feeds.ts';
import { answerMutation } from '../mutation-route.ts';
import { PAGING_PARAMETERS, pageJson, parsePaging, type RawQuery } from '../paging.ts';
import { requestAccount } from '../platform.ts';
import { archiveFeed, findFeed, pageFeeds } from '../store/feed-store.ts';
import { parseStatusFilter } from './campaign-routes.ts';

export interface FeedRouteDeps {
  pool: Pool;
  /** The platform guard (authentication, rate limit, faults). */
  guard: (req: FastifyRequest) => Promise<void>;
}

const CURSOR_KIND = 'feeds';

type FeedParams = { Params: { feed_id: string }; Querystring: RawQuery };

const feedNotFound = (id: string) => notFound(`no product feed ${id} in this account`);

/** registerFeedRoutes adds `GET /feeds`, `GET /feeds/{feed_id}` and `POST /feeds/{feed_id}/archive`. */
export function registerFeedRoutes(app: FastifyInstance, deps: FeedRouteDeps): void {
  const { pool, guard } = deps;

  app.get<{ Querystring: RawQuery }>('/feeds', { onRequest: guard }, async (req) => {
    const account = requestAccount(req);
    refuseUnknownParameters(req.query, ['status', ...PAGING_PARAMETERS]);
    const status = parseStatusFilter<FeedStatus>(req.query, FEED_STATUSES);
    const page = await pageFeeds(
      pool,
      { accountId: account.id, status },
      parsePaging(req.query, CURSOR_KIND),
    );
    return pageJson(CURSOR_KIND, page, feedJson);
  });

  app.get<FeedParams>('/feeds/:feed_id', { onRequest: guard }, async (req) => {
    const account = requestAccount(req);
    refuseQuery(req.query);
    const feed = await findFeed(pool, account.id, req.params.feed_id);
    if (feed === undefined) throw feedNotFound(req.params.feed_id);
    return feedJson(feed);
  });

  // Archiving a feed leaves the ad groups that use it alone; they report it as a serving issue.
  app.post<FeedParams>('/feeds/:feed_id/archive', { onRequest: guard }, async (req, reply) => {
    refuseQuery(req.query);
    parseArchiveBody(req.body);
    const accountId = requestAccount(req).id;
    const feedId = req.params.feed_id;
    return answerMutation(pool, req, reply, {}, async (client) => {
      const feed = await findFeed(client, accountId, feedId, { lock: 'update' });
      if (feed === undefined) throw feedNotFound(feedId);
      const archived = feed.status === 'archived' ? feed : await archiveFeed(client, accountId, feedId);
      return { status: 200, body: feedJson(archived) };
    });
  });
}
