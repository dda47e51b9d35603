/** MarketingService: proto <-> domain for the workspace's saved marketing items. */

import { randomUUID } from 'node:crypto';
import type {
  MarketingItemSchema,
  MarketingReferenceSchema,
  MarketingService,
} from '@adsmcp/proto/marketing/v1/marketing_pb';
import { principalOf } from '@adsmcp/runtime/connect-server';
import { inTransaction, type Pool } from '@adsmcp/runtime/db';
import { NotFoundError } from '@adsmcp/runtime/errors';
import { nextOffset } from '@adsmcp/runtime/paging';
import type { JsonObject, MessageInitShape } from '@bufbuild/protobuf';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import {
  checkBrief,
  lookupIds,
  type ResolvedReference,
  referenceIdsOf,
  resolveReferences,
  validateContext,
} from '../domain/marketing-context.ts';
import {
  checkArchive,
  listQueryOf,
  type MarketingItem,
  planSave,
  validateArchive,
  validateItemId,
  validateSave,
} from '../domain/marketing-item.ts';
import {
  archiveItem,
  findItem,
  findItems,
  insertItem,
  listContextItems,
  listItems,
  lockItem,
  updateItem,
} from '../store/item-store.ts';

export interface MarketingHandlerDeps {
  pool: Pool;
}

function toMessage(item: MarketingItem): MessageInitShape<typeof MarketingItemSchema> {
  return {
    itemId: item.itemId,
    kind: item.kind,
    name: item.name,
    collection: item.collection,
    tags: item.tags,
    // Item data is a JSON object: it arrived as one and pg parsed it from jsonb.
    data: item.data as JsonObject,
    revision: item.revision,
    archived: item.archivedAt !== null,
    createdAt: item.createdAt.toISOString(),
    updatedAt: item.updatedAt.toISOString(),
    ...(item.archivedAt === null ? {} : { archivedAt: item.archivedAt.toISOString() }),
  };
}

function toReference(ref: ResolvedReference): MessageInitShape<typeof MarketingReferenceSchema> {
  return {
    itemId: ref.itemId,
    status: ref.status,
    ...(ref.item === undefined ? {} : { item: toMessage(ref.item) }),
  };
}

// Each RPC's function takes its request and answer types from the generated service, so a moved
// function is checked exactly as its table entry was.
type Impl = ServiceImpl<typeof MarketingService>;
type Req<K extends keyof Impl> = Parameters<Impl[K]>[0];
type Res<K extends keyof Impl> = Promise<Awaited<ReturnType<Impl[K]>>>;

/** createMarketingHandlers builds the MarketingService implementation from its dependencies. */
export function createMarketingHandlers(deps: MarketingHandlerDeps): Impl {
  return {
    saveMarketingItem: (req, ctx) => saveMarketingItem(deps, req, ctx),
    getMarketingItem: (req, ctx) => getMarketingItem(deps, req, ctx),
    listMarketingItems: (req, ctx) => listMarketingItems(deps, req, ctx),
    archiveMarketingItem: (req, ctx) => archiveMarketingItem(deps, req, ctx),
    getMarketingContext: (req, ctx) => getMarketingContext(deps, req, ctx),
  };
}

async function saveMarketingItem(
  deps: MarketingHandlerDeps,
  req: Req<'saveMarketingItem'>,
  ctx: HandlerContext,
): Res<'saveMarketingItem'> {
  const principal = principalOf(ctx);
  const save = validateSave({
    ...(req.itemId === undefined ? {} : { itemId: req.itemId }),
    ...(req.expectedRevision === undefined ? {} : { expectedRevision: req.expectedRevision }),
    kind: req.kind,
    name: req.name,
    ...(req.collection === undefined ? {} : { collection: req.collection }),
    tags: req.tags,
    data: req.data,
  });
  const workspaceId = principal.workspaceId;
  return inTransaction(deps.pool, async (tx) => {
    const itemId = save.itemId ?? randomUUID();
    const current = save.itemId === undefined ? undefined : await lockItem(tx, workspaceId, itemId);
    const fields = { workspaceId, itemId, name: save.name, collection: save.collection, tags: save.tags };
    if (planSave(save, current) === 'create') {
      const created = await insertItem(tx, { ...fields, kind: save.kind, data: save.data });
      if (created !== undefined) return { item: toMessage(created), created: true };
      // Another save created this id since we looked: this save is now an update of it.
      planSave(save, await findItem(tx, workspaceId, itemId));
      throw new Error(`marketing item ${itemId} appeared but planSave allowed no create`);
    }
    const revision = current?.revision ?? 0;
    const updated = await updateItem(tx, { ...fields, data: save.data, revision });
    if (updated === undefined) throw new Error(`marketing item ${itemId} changed while locked`);
    return { item: toMessage(updated), created: false };
  });
}

async function getMarketingItem(
  deps: MarketingHandlerDeps,
  req: Req<'getMarketingItem'>,
  ctx: HandlerContext,
): Res<'getMarketingItem'> {
  const principal = principalOf(ctx);
  const itemId = validateItemId(req.itemId);
  const item = await findItem(deps.pool, principal.workspaceId, itemId);
  if (item === undefined) throw new NotFoundError(`marketing item ${itemId} does not exist`);
  return { item: toMessage(item) };
}

async function listMarketingItems(
  deps: MarketingHandlerDeps,
  req: Req<'listMarketingItems'>,
  ctx: HandlerContext,
): Res<'listMarketingItems'> {
  const principal = principalOf(ctx);
  const query = listQueryOf({
    ...(req.kind === undefined ? {} : { kind: req.kind }),
    ...(req.query === undefined ? {} : { query: req.query }),
    ...(req.collection === undefined ? {} : { collection: req.collection }),
    ...(req.tag === undefined ? {} : { tag: req.tag }),
    ...(req.offset === undefined ? {} : { offset: req.offset }),
    ...(req.limit === undefined ? {} : { limit: req.limit }),
  });
  const { items, total } = await listItems(deps.pool, principal.workspaceId, query);
  const next = nextOffset(query, items.length, total);
  return {
    items: items.map(toMessage),
    total,
    ...(next === undefined ? {} : { nextOffset: next }),
  };
}

async function archiveMarketingItem(
  deps: MarketingHandlerDeps,
  req: Req<'archiveMarketingItem'>,
  ctx: HandlerContext,
): Res<'archiveMarketingItem'> {
  const principal = principalOf(ctx);
  const archive = validateArchive({ itemId: req.itemId, expectedRevision: req.expectedRevision });
  const workspaceId = principal.workspaceId;
  return inTransaction(deps.pool, async (tx) => {
    checkArchive(archive, await lockItem(tx, workspaceId, archive.itemId));
    const archived = await archiveItem(tx, workspaceId, archive.itemId, archive.expectedRevision);
    if (archived === undefined) throw new Error(`marketing item ${archive.itemId} changed while locked`);
    return { item: toMessage(archived) };
  });
}

async function getMarketingContext(
  deps: MarketingHandlerDeps,
  req: Req<'getMarketingContext'>,
  ctx: HandlerContext,
): Res<'getMarketingContext'> {
  const principal = principalOf(ctx);
  const query = validateContext({
    ...(req.briefId === undefined ? {} : { briefId: req.briefId }),
    ...(req.offset === undefined ? {} : { offset: req.offset }),
    ...(req.limit === undefined ? {} : { limit: req.limit }),
  });
  const workspaceId = principal.workspaceId;
  const { items, total } = await listContextItems(deps.pool, workspaceId, query);
  const next = nextOffset(query, items.length, total);
  const page = {
    items: items.map(toMessage),
    total,
    ...(next === undefined ? {} : { nextOffset: next }),
  };
  if (query.briefId === undefined) return page;
  const brief = checkBrief(query.briefId, await findItem(deps.pool, workspaceId, query.briefId));
  const ids = referenceIdsOf(brief);
  const references = resolveReferences(ids, await findItems(deps.pool, workspaceId, lookupIds(ids)));
  return { ...page, brief: toMessage(brief), references: references.map(toReference) };
}
