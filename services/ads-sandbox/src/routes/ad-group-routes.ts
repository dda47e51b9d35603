/** The platform's ad group endpoints: list, get, create, update, activate, pause and archive. */
import type { Pool } from '@adsmcp/runtime/db';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { adGroupNotFound, changeAdGroup, createAdGroup } from '../ad-group-actions.ts';
import { parseAdGroupCreate, parseAdGroupUpdate } from '../ad-group-requests.ts';
import {
  type AdGroup,
  type AdGroupStatus,
  adGroupArchived,
  adGroupJson,
  applyAdGroupUpdate,
} from '../ad-groups.ts';
import {
  parseArchiveBody,
  parseGetAdQuery,
  parseInclude,
  parseNameFilter,
  refuseQuery,
  refuseUnknownParameters,
} from '../ad-requests.ts';
import { invalidRequest } from '../errors.ts';
import { answerMutation } from '../mutation-route.ts';
import { PAGING_PARAMETERS, pageJson, parsePaging, type RawQuery, single } from '../paging.ts';
import { requestAccount } from '../platform.ts';
import { findAdGroup, pageAdGroups } from '../store/ad-group-store.ts';

export interface AdGroupRouteDeps {
  pool: Pool;
  /** The platform guard (authentication, rate limit, faults). */
  guard: (req: FastifyRequest) => Promise<void>;
}

const CURSOR_KIND = 'ad_groups';

type AdGroupParams = { Params: { ad_group_id: string }; Querystring: RawQuery };

function parseListQuery(query: RawQuery) {
  refuseUnknownParameters(query, ['campaign_id', 'name', ...PAGING_PARAMETERS, 'include']);
  const campaignId = single(query, 'campaign_id');
  if (campaignId === '') throw invalidRequest('campaign_id', 'campaign_id must not be empty');
  return {
    campaignId,
    name: parseNameFilter(query),
    page: parsePaging(query, CURSOR_KIND),
    include: parseInclude(query),
  };
}

/** A status move (activate, pause): refused on an archived ad group, a no-op when already there. */
function moveTo(status: AdGroupStatus): (g: AdGroup) => AdGroup {
  return (g) => {
    if (g.status === 'archived') throw adGroupArchived(g.id);
    return { ...g, status };
  };
}

/** Archiving is final, and archiving an archived ad group again changes nothing. */
const archive = (g: AdGroup): AdGroup => ({ ...g, status: 'archived' });

/** registerAdGroupRoutes adds the `/ad_groups` endpoints to `app`. */
export function registerAdGroupRoutes(app: FastifyInstance, deps: AdGroupRouteDeps): void {
  const { pool, guard } = deps;

  app.get<{ Querystring: RawQuery }>('/ad_groups', { onRequest: guard }, async (req) => {
    const account = requestAccount(req);
    const q = parseListQuery(req.query);
    const page = await pageAdGroups(
      pool,
      { accountId: account.id, campaignId: q.campaignId, name: q.name },
      q.page,
    );
    return pageJson(CURSOR_KIND, page, (g) => adGroupJson(g, q.include));
  });

  app.get<AdGroupParams>('/ad_groups/:ad_group_id', { onRequest: guard }, async (req) => {
    const account = requestAccount(req);
    const include = parseGetAdQuery(req.query);
    const group = await findAdGroup(pool, account.id, req.params.ad_group_id);
    if (group === undefined) throw adGroupNotFound(req.params.ad_group_id);
    return adGroupJson(group, include);
  });

  app.post<{ Querystring: RawQuery }>('/ad_groups', { onRequest: guard }, async (req, reply) => {
    refuseQuery(req.query);
    const input = parseAdGroupCreate(req.body);
    const accountId = requestAccount(req).id;
    return answerMutation(pool, req, reply, req.body, async (client) => ({
      status: 201,
      body: adGroupJson(await createAdGroup(client, accountId, input)),
    }));
  });

  /** Runs `change` on the (locked) ad group through the idempotency ledger and answers with it. */
  function mutateAdGroup(
    req: FastifyRequest<AdGroupParams>,
    reply: FastifyReply,
    body: unknown,
    change: (g: AdGroup) => AdGroup,
  ): Promise<FastifyReply> {
    const accountId = requestAccount(req).id;
    return answerMutation(pool, req, reply, body, async (client) => ({
      status: 200,
      body: adGroupJson(await changeAdGroup(client, accountId, req.params.ad_group_id, change)),
    }));
  }

  app.post<AdGroupParams>('/ad_groups/:ad_group_id', { onRequest: guard }, async (req, reply) => {
    refuseQuery(req.query);
    const update = parseAdGroupUpdate(req.body);
    return mutateAdGroup(req, reply, req.body, (g) => applyAdGroupUpdate(g, update));
  });

  const moves: [string, (g: AdGroup) => AdGroup][] = [
    ['activate', moveTo('active')],
    ['pause', moveTo('paused')],
    ['archive', archive],
  ];
  for (const [action, change] of moves) {
    app.post<AdGroupParams>(`/ad_groups/:ad_group_id/${action}`, { onRequest: guard }, async (req, reply) => {
      refuseQuery(req.query);
      parseArchiveBody(req.body);
      // An absent body and {} are the same request, for the ledger and for Idempotency-Key replays.
      return mutateAdGroup(req, reply, {}, change);
    });
  }
}
