/**
 * The marketing context: the workspace's saved guidance (playbook items) and brand voice profiles
 * (brand items), and optionally one brief with the items its reference_ids name. It only reads
 * what the workspace saved; nothing is generated.
 */
import { InvalidArgumentError, NotFoundError } from '@adsmcp/runtime/errors';
import { isUuid } from '@adsmcp/runtime/ids';
import type { Kind } from './item-data.ts';
import { listQueryOf, type MarketingItem } from './marketing-item.ts';

/** The kinds a context lists, in the order it lists them. */
export const CONTEXT_KINDS: readonly Kind[] = ['playbook', 'brand'];

export interface ContextRequest {
  briefId?: string;
  offset?: number;
  limit?: number;
}

export interface ContextQuery {
  /** Lower case. */
  briefId?: string;
  offset: number;
  limit: number;
}

/** validateContext checks the brief_id and applies the page defaults of a list. */
export function validateContext(req: ContextRequest): ContextQuery {
  if (req.briefId !== undefined && !isUuid(req.briefId)) {
    throw new InvalidArgumentError(`brief_id must be a UUID (got ${JSON.stringify(req.briefId)})`);
  }
  const { offset, limit } = listQueryOf({
    ...(req.offset === undefined ? {} : { offset: req.offset }),
    ...(req.limit === undefined ? {} : { limit: req.limit }),
  });
  return { ...(req.briefId === undefined ? {} : { briefId: req.briefId.toLowerCase() }), offset, limit };
}

/** checkBrief refuses a brief_id that names no item of the workspace, or an item that is no brief. */
export function checkBrief(briefId: string, item: MarketingItem | undefined): MarketingItem {
  if (item === undefined)
    throw new NotFoundError(`brief_id ${briefId}: no marketing item of this workspace has that id`);
  if (item.kind !== 'brief') {
    throw new InvalidArgumentError(
      `brief_id ${briefId} is a ${item.kind} item, not a brief; pass the item_id of a brief (kind brief)`,
    );
  }
  return item;
}

/**
 * referenceIdsOf returns every entry of a brief's reference_ids in its order, UUIDs in lower
 * case. A save refuses a repeated id, but a brief saved before may hold one: it is listed each
 * time, as the brief lists it.
 */
export function referenceIdsOf(brief: MarketingItem): string[] {
  const ids = brief.data.reference_ids;
  if (!Array.isArray(ids)) return [];
  return ids
    .filter((id): id is string => typeof id === 'string')
    .map((id) => (isUuid(id) ? id.toLowerCase() : id));
}

/** The distinct item ids among `ids` that can name an item (UUIDs), to look them up once. */
export function lookupIds(ids: readonly string[]): string[] {
  return [...new Set(ids.filter((id) => isUuid(id)))];
}

export type ReferenceStatus = 'found' | 'archived' | 'missing';

export interface ResolvedReference {
  itemId: string;
  status: ReferenceStatus;
  item?: MarketingItem;
}

/**
 * resolveReferences pairs each referenced id with the item found for it, in order and repeats
 * included; an id with no item (or that is no UUID) is reported missing and an archived item
 * archived, so no reference is silently dropped.
 */
export function resolveReferences(
  ids: readonly string[],
  found: readonly MarketingItem[],
): ResolvedReference[] {
  const byId = new Map(found.map((item) => [item.itemId, item]));
  return ids.map((itemId) => {
    const item = byId.get(itemId);
    if (item === undefined) return { itemId, status: 'missing' };
    return { itemId, status: item.archivedAt === null ? 'found' : 'archived', item };
  });
}
