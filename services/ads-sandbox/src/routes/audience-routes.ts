/**
 * The platform's custom audience endpoints: list, replace members, merge, archive, and follow an
 * operation. Every mutation bumps the audience's revision; a replace names the revision it expects.
 */
import type { Pool } from '@adsmcp/runtime/db';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { parseArchiveBody, refuseQuery, refuseUnknownParameters } from '../ad-requests.ts';
import {
  archiveAudience,
  type MergeBody,
  type MutationContext,
  mergeAudiences,
  type ReplaceBody,
  replaceMembers,
} from '../audience-mutations.ts';
import {
  audienceJson,
  IDENTIFIER_TYPES,
  INTENDED_USES,
  type IntendedUse,
  MAX_LIST_IDS,
  MAX_MERGE_SOURCES,
  MIN_MATCHED_FOR_USE,
  operationJson,
} from '../audiences.ts';
import { invalidRequest, notFound } from '../errors.ts';
import type { MutationResponse } from '../idempotency.ts';
import { answerMutation } from '../mutation-route.ts';
import { many, PAGING_PARAMETERS, pageJson, parsePaging, type RawQuery, single } from '../paging.ts';
import { requestAccount } from '../platform.ts';
import {
  type AudienceFilter,
  findAudience,
  findOperation,
  latestOperations,
  pageAudiences,
} from '../store/audience-store.ts';

export interface AudienceRouteDeps {
  pool: Pool;
  /** The platform guard (authentication, rate limit, faults). */
  guard: (req: FastifyRequest) => Promise<void>;
  /** The sandbox clock (ms since the epoch): operations progress by it. */
  now: () => number;
}

/** The kind of the audience list's cursors. */
const CURSOR_KIND = 'ca';

type AudienceParams = { Params: { custom_audience_id: string }; Querystring: RawQuery };

const text255 = { type: 'string', minLength: 1, maxLength: 255 } as const;

const replaceSchema = {
  body: {
    type: 'object',
    required: ['file_id', 'expected_revision'],
    additionalProperties: false,
    properties: {
      file_id: text255,
      expected_revision: { type: 'integer', minimum: 0 },
      filename: text255,
      mimetype: { ...text255, pattern: '^[\\w.+-]+/[\\w.+-]+$' },
      file_size: { type: 'integer', minimum: 1, maximum: 500_000_000 },
      identifier_type: { type: 'string', enum: IDENTIFIER_TYPES },
      identifier_resolution: { type: 'string', enum: ['auto'] },
    },
  },
} as const;

const mergeSchema = {
  body: {
    type: 'object',
    required: ['name', 'custom_audience_ids'],
    additionalProperties: false,
    properties: {
      name: { type: 'string', minLength: 3, maxLength: 1000, pattern: '\\S' },
      custom_audience_ids: {
        type: 'array',
        minItems: 1,
        maxItems: MAX_MERGE_SOURCES,
        uniqueItems: true,
        items: { type: 'string', minLength: 1, maxLength: 100 },
      },
    },
  },
} as const;

function parseListFilter(query: RawQuery): { filter: AudienceFilter; granular: boolean } {
  const use = single(query, 'intended_use');
  if (use !== undefined && !(INTENDED_USES as readonly string[]).includes(use)) {
    throw invalidRequest(
      'intended_use',
      `intended_use must be one of ${INTENDED_USES.join(', ')}; got "${use}"`,
    );
  }
  const ids = query.custom_audience_ids === undefined ? undefined : many(query, 'custom_audience_ids');
  if (ids !== undefined && ids.length > MAX_LIST_IDS) {
    throw invalidRequest('custom_audience_ids', `custom_audience_ids may list at most ${MAX_LIST_IDS} ids`);
  }
  if (ids?.some((id) => id === ''))
    throw invalidRequest('custom_audience_ids', 'custom_audience_ids must not be empty');
  const policyRevision = single(query, 'policy_revision');
  if (policyRevision !== undefined && [...policyRevision].length !== 64) {
    throw invalidRequest('policy_revision', 'policy_revision must be exactly 64 characters');
  }
  const granularity = single(query, 'matched_count_granularity');
  if (granularity !== undefined && granularity !== 'granular') {
    throw invalidRequest(
      'matched_count_granularity',
      `matched_count_granularity must be "granular"; got "${granularity}"`,
    );
  }
  return {
    filter: {
      ids,
      policyRevision,
      minMatched: use === undefined ? undefined : MIN_MATCHED_FOR_USE[use as IntendedUse],
    },
    granular: granularity === 'granular',
  };
}

/** registerAudienceRoutes adds the `/custom_audiences` endpoints to `app`. */
export function registerAudienceRoutes(app: FastifyInstance, deps: AudienceRouteDeps): void {
  const { guard } = deps;
  app.get<{ Querystring: RawQuery }>('/custom_audiences', { onRequest: guard }, async (req) =>
    listAudiences(deps, req),
  );
  // One audience, as the list shows it (granular count included): what a change about it re-reads.
  app.get<AudienceParams>('/custom_audiences/:custom_audience_id', { onRequest: guard }, async (req) =>
    getAudience(deps, req),
  );
  app.post<AudienceParams & { Body: ReplaceBody }>(
    '/custom_audiences/:custom_audience_id/replace',
    { onRequest: guard, schema: replaceSchema },
    async (req, reply) => {
      refuseQuery(req.query);
      return mutate(deps, req, reply, req.body, (ctx) =>
        replaceMembers(ctx, req.params.custom_audience_id, req.body),
      );
    },
  );
  app.post<{ Body: MergeBody; Querystring: RawQuery }>(
    '/custom_audiences/merge',
    { onRequest: guard, schema: mergeSchema },
    async (req, reply) => {
      refuseQuery(req.query);
      return mutate(deps, req, reply, req.body, (ctx) => mergeAudiences(ctx, req.body));
    },
  );
  app.post<AudienceParams>(
    '/custom_audiences/:custom_audience_id/archive',
    { onRequest: guard },
    async (req, reply) => {
      refuseQuery(req.query);
      parseArchiveBody(req.body);
      // An absent body and {} are the same request, for the ledger and for Idempotency-Key replays.
      return mutate(deps, req, reply, {}, (ctx) => archiveAudience(ctx, req.params.custom_audience_id));
    },
  );
  app.get<OperationParams>(
    '/custom_audiences/:custom_audience_id/operations/:operation_id',
    { onRequest: guard },
    async (req) => getOperation(deps, req),
  );
}

type OperationParams = {
  Params: { custom_audience_id: string; operation_id: string };
  Querystring: RawQuery;
};

/** Runs a mutation through the idempotency ledger, answering with what it returns. */
async function mutate(
  deps: AudienceRouteDeps,
  req: FastifyRequest,
  reply: FastifyReply,
  body: unknown,
  execute: (ctx: MutationContext) => Promise<MutationResponse>,
): Promise<FastifyReply> {
  const accountId = requestAccount(req).id;
  const at = deps.now();
  return answerMutation(deps.pool, req, reply, body, (client) => execute({ client, accountId, at }));
}

/** GET /custom_audiences: a page of the account's audiences, each with its latest operation. */
async function listAudiences(deps: AudienceRouteDeps, req: FastifyRequest<{ Querystring: RawQuery }>) {
  const { pool } = deps;
  const account = requestAccount(req);
  refuseUnknownParameters(req.query, [
    'intended_use',
    'custom_audience_ids',
    'policy_revision',
    'matched_count_granularity',
    ...PAGING_PARAMETERS,
  ]);
  const { filter, granular } = parseListFilter(req.query);
  const at = deps.now();
  const page = await pageAudiences(pool, account.id, filter, at, parsePaging(req.query, CURSOR_KIND));
  const latest = await latestOperations(
    pool,
    page.items.map((a) => a.id),
  );
  return pageJson(CURSOR_KIND, page, (a) => {
    const op = latest.get(a.id);
    return audienceJson(a, op === undefined ? undefined : { op, now: at }, granular);
  });
}

/** GET /custom_audiences/:custom_audience_id. */
async function getAudience(deps: AudienceRouteDeps, req: FastifyRequest<AudienceParams>) {
  const { pool } = deps;
  const account = requestAccount(req);
  refuseUnknownParameters(req.query, ['matched_count_granularity']);
  const { granular } = parseListFilter(req.query);
  const at = deps.now();
  const id = req.params.custom_audience_id;
  const audience = await findAudience(pool, account.id, id, at);
  if (audience === undefined) throw notFound(`no custom audience ${id} in this account`);
  const op = (await latestOperations(pool, [audience.id])).get(audience.id);
  return audienceJson(audience, op === undefined ? undefined : { op, now: at }, granular);
}

/** GET /custom_audiences/:custom_audience_id/operations/:operation_id. */
async function getOperation(deps: AudienceRouteDeps, req: FastifyRequest<OperationParams>) {
  const account = requestAccount(req);
  refuseQuery(req.query);
  const { custom_audience_id: audienceId, operation_id: operationId } = req.params;
  const op = await findOperation(deps.pool, account.id, audienceId, operationId);
  if (op === undefined) {
    throw notFound(`no operation ${operationId} of custom audience ${audienceId} in this account`);
  }
  return operationJson(op, deps.now());
}
