/**
 * The platform's custom audience endpoints: list, replace members, merge, archive, and follow an
 * operation. Every mutation bumps the audience's revision; a replace names the revision it expects.
 */
import { randomBytes } from 'node:crypto';
import type { Pool, PoolClient } from '@adsmcp/runtime/db';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type RawQuery, refuseQuery, refuseUnknownParameters, single } from '../ad-requests.ts';
import {
  type Audience,
  audienceJson,
  IDENTIFIER_TYPES,
  type IdentifierType,
  INTENDED_USES,
  type IntendedUse,
  MAX_LIST_IDS,
  MAX_MERGE_SOURCES,
  MIN_MATCHED_FOR_USE,
  mergedMatchedCount,
  type Operation,
  operationJson,
  POLICY_REVISION,
  replaceMatchedCount,
} from '../audiences.ts';
import { invalidRequest, notFound, PlatformHttpError } from '../errors.ts';
import { applyMutation, type MutationResponse } from '../idempotency.ts';
import { LIST_LIMITS, PAGE_PARAMETERS, pageJson, parseSeqPage } from '../paging.ts';
import { requestAccount, requestPath } from '../platform.ts';
import {
  type AudienceFilter,
  bumpAudience,
  findAudience,
  findAudiences,
  findOperation,
  insertAudience,
  insertOperation,
  latestOperations,
  lockAudience,
  pageAudiences,
} from '../store/audience-store.ts';
import { idempotencyKey, sendOutcome } from './ad-routes.ts';

export interface AudienceRouteDeps {
  pool: Pool;
  /** The platform guard (authentication, rate limit, faults). */
  guard: (req: FastifyRequest) => Promise<void>;
  /** The sandbox clock (ms since the epoch): operations progress by it. */
  now: () => number;
}

type AudienceParams = { Params: { custom_audience_id: string }; Querystring: RawQuery };

const hex16 = (): string => randomBytes(8).toString('hex');
const audienceNotFound = (id: string) => notFound(`no custom audience ${id} in this account`);

interface ReplaceBody {
  file_id: string;
  expected_revision: number;
  filename?: string;
  mimetype?: string;
  file_size?: number;
  identifier_type?: IdentifierType;
  identifier_resolution?: 'auto';
}

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

/** What a replace assumes of a file when the request leaves it out. */
const DEFAULT_FILE_SIZE = 1_000_000;

interface MergeBody {
  name: string;
  custom_audience_ids: string[];
}

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
  const rawIds = query.custom_audience_ids;
  const ids = rawIds === undefined ? undefined : Array.isArray(rawIds) ? rawIds : [rawIds];
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

function staleRevision(expected: number, current: number): PlatformHttpError {
  return new PlatformHttpError(
    409,
    'revision_mismatch',
    `expected_revision ${expected} is not the audience's current revision ${current}; read the audience and retry with revision ${current}`,
    { field: 'expected_revision' },
  );
}

function archivedAudience(id: string): PlatformHttpError {
  return new PlatformHttpError(
    409,
    'audience_archived',
    `custom audience ${id} is archived and cannot change`,
  );
}

/** registerAudienceRoutes adds the `/custom_audiences` endpoints to `app`. */
export function registerAudienceRoutes(app: FastifyInstance, deps: AudienceRouteDeps): void {
  const { pool, guard, now } = deps;

  /** An audience as the API returns it at instant `at`, with its latest operation. */
  async function audienceWithOperation(
    db: PoolClient | Pool,
    audience: Audience,
    at: number,
    granular = false,
  ) {
    const latest = (await latestOperations(db, [audience.id])).get(audience.id);
    return audienceJson(audience, latest === undefined ? undefined : { op: latest, now: at }, granular);
  }

  /** Runs a mutation through the idempotency ledger, answering with what it returns. */
  async function mutate(
    req: FastifyRequest,
    reply: FastifyReply,
    body: unknown,
    execute: (client: PoolClient, accountId: string, at: number) => Promise<MutationResponse>,
  ): Promise<FastifyReply> {
    const account = requestAccount(req);
    const at = now();
    const outcome = await applyMutation(
      pool,
      {
        accountId: account.id,
        idempotencyKey: idempotencyKey(req),
        method: req.method,
        path: requestPath(req),
        body,
      },
      (client) => execute(client, account.id, at),
    );
    return sendOutcome(reply, outcome);
  }

  /** The locked, active audience a mutation works on. */
  async function lockedAudience(
    client: PoolClient,
    accountId: string,
    id: string,
    at: number,
  ): Promise<Audience> {
    if (!(await lockAudience(client, accountId, id))) throw audienceNotFound(id);
    const audience = await findAudience(client, accountId, id, at);
    if (audience === undefined) throw audienceNotFound(id);
    return audience;
  }

  app.get<{ Querystring: RawQuery }>('/custom_audiences', { onRequest: guard }, async (req) => {
    const account = requestAccount(req);
    refuseUnknownParameters(req.query, [
      'intended_use',
      'custom_audience_ids',
      'policy_revision',
      'matched_count_granularity',
      ...PAGE_PARAMETERS,
    ]);
    const { filter, granular } = parseListFilter(req.query);
    const at = now();
    const page = await pageAudiences(
      pool,
      account.id,
      filter,
      at,
      parseSeqPage(req.query, 'ca', LIST_LIMITS),
    );
    const latest = await latestOperations(
      pool,
      page.rows.map((a) => a.id),
    );
    return pageJson('ca', page, (a) => {
      const op = latest.get(a.id);
      return audienceJson(a, op === undefined ? undefined : { op, now: at }, granular);
    });
  });

  app.post<AudienceParams & { Body: ReplaceBody }>(
    '/custom_audiences/:custom_audience_id/replace',
    { onRequest: guard, schema: replaceSchema },
    async (req, reply) => {
      refuseQuery(req.query);
      const body = req.body;
      return mutate(req, reply, body, async (client, accountId, at) => {
        const audience = await lockedAudience(client, accountId, req.params.custom_audience_id, at);
        if (audience.status === 'archived') throw archivedAudience(audience.id);
        if (body.expected_revision !== audience.revision)
          throw staleRevision(body.expected_revision, audience.revision);
        await bumpAudience(client, accountId, audience.id, { archive: false, at: new Date(at) });
        const op = await insertOperation(client, {
          id: `op_${hex16()}`,
          accountId,
          audienceId: audience.id,
          type: 'replace',
          revision: audience.revision + 1,
          matchedCount: replaceMatchedCount(
            body.file_id,
            body.file_size ?? DEFAULT_FILE_SIZE,
            body.identifier_type ?? 'email',
          ),
          createdAt: new Date(at),
        });
        return { status: 202, body: operationJson(op, at) };
      });
    },
  );

  app.post<{ Body: MergeBody; Querystring: RawQuery }>(
    '/custom_audiences/merge',
    { onRequest: guard, schema: mergeSchema },
    async (req, reply) => {
      refuseQuery(req.query);
      const body = req.body;
      return mutate(req, reply, body, async (client, accountId, at) => {
        const sources = await findAudiences(client, accountId, body.custom_audience_ids, at);
        const byId = new Map(sources.map((a) => [a.id, a]));
        body.custom_audience_ids.forEach((id, i) => {
          const source = byId.get(id);
          const field = `custom_audience_ids.${i}`;
          if (source === undefined)
            throw invalidRequest(field, `${field}: no custom audience ${id} in this account`);
          if (source.status === 'archived')
            throw invalidRequest(field, `${field}: custom audience ${id} is archived`);
        });
        const id = `ca_${hex16()}`;
        await insertAudience(client, {
          id,
          accountId,
          name: body.name,
          status: 'active',
          policyRevision: POLICY_REVISION,
          initialMatchedCount: null,
          createdAt: new Date(at),
        });
        const op: Operation = await insertOperation(client, {
          id: `op_${hex16()}`,
          accountId,
          audienceId: id,
          type: 'merge',
          revision: 0,
          matchedCount: mergedMatchedCount(sources.map((a) => a.matchedCount ?? 0)),
          createdAt: new Date(at),
        });
        const merged = await findAudience(client, accountId, id, at);
        if (merged === undefined) throw new Error(`merged audience ${id} vanished`);
        return {
          status: 201,
          body: {
            custom_audience: audienceJson(merged, { op, now: at }, false),
            operation: operationJson(op, at),
          },
        };
      });
    },
  );

  app.post<AudienceParams>(
    '/custom_audiences/:custom_audience_id/archive',
    { onRequest: guard },
    async (req, reply) => {
      refuseQuery(req.query);
      if (
        req.body !== undefined &&
        (typeof req.body !== 'object' || req.body === null || Object.keys(req.body).length > 0)
      ) {
        throw invalidRequest(undefined, 'the body must be empty or {}');
      }
      // An absent body and {} are the same request, for the ledger and for Idempotency-Key replays.
      return mutate(req, reply, {}, async (client, accountId, at) => {
        const audience = await lockedAudience(client, accountId, req.params.custom_audience_id, at);
        if (audience.status !== 'archived') {
          await bumpAudience(client, accountId, audience.id, { archive: true, at: new Date(at) });
        }
        const archived = await findAudience(client, accountId, audience.id, at);
        if (archived === undefined) throw audienceNotFound(audience.id);
        return { status: 200, body: await audienceWithOperation(client, archived, at) };
      });
    },
  );

  app.get<{ Params: { custom_audience_id: string; operation_id: string }; Querystring: RawQuery }>(
    '/custom_audiences/:custom_audience_id/operations/:operation_id',
    { onRequest: guard },
    async (req) => {
      const account = requestAccount(req);
      refuseQuery(req.query);
      const { custom_audience_id: audienceId, operation_id: operationId } = req.params;
      const op = await findOperation(pool, account.id, audienceId, operationId);
      if (op === undefined) {
        throw notFound(`no operation ${operationId} of custom audience ${audienceId} in this account`);
      }
      return operationJson(op, now());
    },
  );
}
