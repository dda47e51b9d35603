/**
 * The custom audience mutations, each run inside the idempotency ledger's transaction on a locked
 * audience: replace the members, merge audiences into a new one, archive. Each answers with the
 * response the ledger records.
 */
import type { PoolClient } from '@adsmcp/runtime/db';
import {
  type Audience,
  audienceJson,
  type IdentifierType,
  mergedMatchedCount,
  operationJson,
  POLICY_REVISION,
  replaceMatchedCount,
} from './audiences.ts';
import { invalidRequest, notFound, PlatformHttpError } from './errors.ts';
import type { MutationResponse } from './idempotency.ts';
import { newId } from './ids.ts';
import {
  bumpAudience,
  findAudience,
  findAudiences,
  insertAudience,
  insertOperation,
  latestOperations,
  lockAudience,
} from './store/audience-store.ts';

/** Who mutates, and the sandbox clock's reading the mutation happens at. */
export interface MutationContext {
  client: PoolClient;
  accountId: string;
  at: number;
}

export interface ReplaceBody {
  file_id: string;
  expected_revision: number;
  filename?: string;
  mimetype?: string;
  file_size?: number;
  identifier_type?: IdentifierType;
  identifier_resolution?: 'auto';
}

export interface MergeBody {
  name: string;
  custom_audience_ids: string[];
}

/** What a replace assumes of a file when the request leaves it out. */
const DEFAULT_FILE_SIZE = 1_000_000;

export const audienceNotFound = (id: string) => notFound(`no custom audience ${id} in this account`);

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

/** The audience `id`, locked until the transaction ends so mutations of it take turns. */
async function lockedAudience(ctx: MutationContext, id: string): Promise<Audience> {
  if (!(await lockAudience(ctx.client, ctx.accountId, id))) throw audienceNotFound(id);
  const audience = await findAudience(ctx.client, ctx.accountId, id, ctx.at);
  if (audience === undefined) throw audienceNotFound(id);
  return audience;
}

/** replaceMembers checks the expected revision, bumps it and starts a replace operation. */
export async function replaceMembers(
  ctx: MutationContext,
  audienceId: string,
  body: ReplaceBody,
): Promise<MutationResponse> {
  const audience = await lockedAudience(ctx, audienceId);
  if (audience.status === 'archived') throw archivedAudience(audience.id);
  if (body.expected_revision !== audience.revision)
    throw staleRevision(body.expected_revision, audience.revision);
  await bumpAudience(ctx.client, ctx.accountId, audience.id, { archive: false, at: new Date(ctx.at) });
  const op = await insertOperation(ctx.client, {
    id: newId('op'),
    accountId: ctx.accountId,
    audienceId: audience.id,
    type: 'replace',
    revision: audience.revision + 1,
    matchedCount: replaceMatchedCount(
      body.file_id,
      body.file_size ?? DEFAULT_FILE_SIZE,
      body.identifier_type ?? 'email',
    ),
    createdAt: new Date(ctx.at),
  });
  return { status: 202, body: operationJson(op, ctx.at) };
}

/** The merge's sources, refusing (naming the item) one that is unknown or archived. */
async function mergeSources(ctx: MutationContext, ids: string[]): Promise<Audience[]> {
  const byId = new Map((await findAudiences(ctx.client, ctx.accountId, ids, ctx.at)).map((a) => [a.id, a]));
  return ids.map((id, i) => {
    const source = byId.get(id);
    const field = `custom_audience_ids.${i}`;
    if (source === undefined)
      throw invalidRequest(field, `${field}: no custom audience ${id} in this account`);
    if (source.status === 'archived')
      throw invalidRequest(field, `${field}: custom audience ${id} is archived`);
    return source;
  });
}

/** mergeAudiences creates a new audience from the sources' members and the operation filling it. */
export async function mergeAudiences(ctx: MutationContext, body: MergeBody): Promise<MutationResponse> {
  const sources = await mergeSources(ctx, body.custom_audience_ids);
  const id = newId('ca');
  await insertAudience(ctx.client, {
    id,
    accountId: ctx.accountId,
    name: body.name,
    status: 'active',
    policyRevision: POLICY_REVISION,
    initialMatchedCount: null,
    createdAt: new Date(ctx.at),
  });
  const op = await insertOperation(ctx.client, {
    id: newId('op'),
    accountId: ctx.accountId,
    audienceId: id,
    type: 'merge',
    revision: 0,
    matchedCount: mergedMatchedCount(sources.map((a) => a.matchedCount ?? 0)),
    createdAt: new Date(ctx.at),
  });
  const merged = await findAudience(ctx.client, ctx.accountId, id, ctx.at);
  if (merged === undefined) throw new Error(`merged audience ${id} vanished`);
  return {
    status: 201,
    body: {
      custom_audience: audienceJson(merged, { op, now: ctx.at }, false),
      operation: operationJson(op, ctx.at),
    },
  };
}

/** archiveAudience archives the audience, bumping its revision; an archived one stays as it is. */
export async function archiveAudience(ctx: MutationContext, audienceId: string): Promise<MutationResponse> {
  const audience = await lockedAudience(ctx, audienceId);
  if (audience.status !== 'archived') {
    await bumpAudience(ctx.client, ctx.accountId, audience.id, { archive: true, at: new Date(ctx.at) });
  }
  const archived = await findAudience(ctx.client, ctx.accountId, audience.id, ctx.at);
  if (archived === undefined) throw audienceNotFound(audience.id);
  const latest = (await latestOperations(ctx.client, [archived.id])).get(archived.id);
  return {
    status: 200,
    body: audienceJson(archived, latest === undefined ? undefined : { op: latest, now: ctx.at }, false),
  };
}
