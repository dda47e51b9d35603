/**
 * A saved marketing item and its rules: which item a save, an archive or a read names, which
 * revision a change must name, and what an update may not change. The bounds of every argument
 * (kind, name, collection, tags, the data's shape, list filters and pages) are the tools' input
 * schemas, checked at the gateway.
 */

import {
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  StaleRevisionError,
} from '@adsmcp/runtime/errors';
import { isUuid } from '@adsmcp/runtime/ids';
import { pageOf } from '@adsmcp/runtime/paging';
import { quotedStart } from './code-points.ts';
import type { ItemData, Kind } from './item-data.ts';

export interface MarketingItem {
  workspaceId: string;
  itemId: string;
  kind: Kind;
  name: string;
  /** Empty when the item is in no collection. */
  collection: string;
  tags: string[];
  data: ItemData;
  revision: number;
  archivedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** The state of a stored item that decides whether a change to it may go ahead. */
export type ItemState = Pick<MarketingItem, 'itemId' | 'kind' | 'revision' | 'archivedAt'>;

const quoted = quotedStart;

function checkItemId(itemId: string): void {
  if (!isUuid(itemId)) throw new InvalidArgumentError(`item_id must be a UUID (got ${quoted(itemId)})`);
}

/** A save as the caller asked for it. */
export interface SaveRequest {
  itemId?: string;
  expectedRevision?: number;
  kind: string;
  name: string;
  collection?: string;
  tags: readonly string[];
  /** Undefined when the request carried none. */
  data: ItemData | undefined;
}

/** A save that names its item and carries data. */
export interface ValidSave {
  itemId?: string;
  expectedRevision?: number;
  kind: Kind;
  name: string;
  collection: string;
  tags: string[];
  data: ItemData;
}

/**
 * checkReferenceIds refuses a brief that lists one item twice in reference_ids (ids compared
 * without case, as UUIDs are): the marketing context lists each reference in the brief's order,
 * and a repeat is a mistake in the brief, not a second reference.
 */
function checkReferenceIds(ids: unknown): void {
  if (!Array.isArray(ids)) return;
  const first = new Map<string, number>();
  ids.forEach((id, i) => {
    if (typeof id !== 'string') return;
    const key = id.toLowerCase();
    const earlier = first.get(key);
    if (earlier !== undefined) {
      throw new InvalidArgumentError(
        `data.reference_ids[${i}] repeats data.reference_ids[${earlier}] (${quoted(id)}): list each referenced item once`,
      );
    }
    first.set(key, i);
  });
}

/**
 * validateSave checks what a save names: a UUID item_id, an expected_revision only with the
 * item_id it belongs to, and data to store. It returns the save with the omitted collection as
 * the empty one.
 */
export function validateSave(req: SaveRequest): ValidSave {
  if (req.itemId !== undefined) checkItemId(req.itemId);
  if (req.expectedRevision !== undefined && req.itemId === undefined) {
    throw new InvalidArgumentError(
      'expected_revision applies only to updating an existing item; send its item_id too',
    );
  }
  if (req.data === undefined) throw new InvalidArgumentError('data is required');
  if (req.kind === 'brief') checkReferenceIds(req.data.reference_ids);
  return {
    ...(req.itemId === undefined ? {} : { itemId: req.itemId.toLowerCase() }),
    ...(req.expectedRevision === undefined ? {} : { expectedRevision: req.expectedRevision }),
    // The gateway refused any other kind; the table's CHECK refuses one that skipped it.
    kind: req.kind as Kind,
    name: req.name,
    collection: req.collection ?? '',
    tags: [...req.tags],
    data: req.data,
  };
}

/**
 * planSave decides what a valid save does given the stored item it names (undefined when there
 * is none): `create` or `update`. It throws when the save may not go ahead: an update without
 * expected_revision, of an archived item, changing the kind, or naming a stale revision.
 */
export function planSave(save: ValidSave, current: ItemState | undefined): 'create' | 'update' {
  if (current === undefined) {
    if (save.itemId !== undefined && save.expectedRevision !== undefined) {
      throw new NotFoundError(
        `marketing item ${save.itemId} does not exist; to create it, send no expected_revision`,
      );
    }
    return 'create';
  }
  if (save.expectedRevision === undefined) {
    throw new InvalidArgumentError(
      `expected_revision is required when updating: marketing item ${current.itemId} exists, at revision ${current.revision}`,
    );
  }
  if (current.archivedAt !== null) {
    throw new FailedPreconditionError(
      `marketing item ${current.itemId} is archived and cannot be updated; save a new item instead`,
    );
  }
  if (save.kind !== current.kind) {
    throw new InvalidArgumentError(
      `kind cannot change from ${current.kind} to ${save.kind}; save a new item for a ${save.kind}`,
    );
  }
  if (save.expectedRevision !== current.revision) {
    throw new StaleRevisionError(current.revision, 'marketing item');
  }
  return 'update';
}

/** An archive that names its item. */
export interface ValidArchive {
  itemId: string;
  expectedRevision: number;
}

/** validateArchive checks that an archive names an item by its UUID. */
export function validateArchive(req: { itemId: string; expectedRevision: number }): ValidArchive {
  checkItemId(req.itemId);
  return { itemId: req.itemId.toLowerCase(), expectedRevision: req.expectedRevision };
}

/**
 * checkArchive throws unless the stored item may be archived with the given revision: it must
 * exist, not be archived already, and be at that revision.
 */
export function checkArchive(archive: ValidArchive, current: ItemState | undefined): void {
  if (current === undefined) throw new NotFoundError(`marketing item ${archive.itemId} does not exist`);
  if (current.archivedAt !== null) {
    throw new FailedPreconditionError(
      `marketing item ${current.itemId} is already archived (at revision ${current.revision})`,
    );
  }
  if (archive.expectedRevision !== current.revision) {
    throw new StaleRevisionError(current.revision, 'marketing item');
  }
}

/** validateItemId checks the item_id of a read and returns it in canonical (lower) case. */
export function validateItemId(itemId: string): string {
  checkItemId(itemId);
  return itemId.toLowerCase();
}

/** A list as the caller asked for it: every filter optional. */
export interface ListRequest {
  kind?: string;
  query?: string;
  collection?: string;
  tag?: string;
  offset?: number;
  limit?: number;
}

/** A list query with its defaults applied. */
export interface ListQuery {
  kind?: Kind;
  /** Text to find, case-insensitively, in the name or a text value of the data. */
  query?: string;
  collection?: string;
  tag?: string;
  offset: number;
  limit: number;
}

/** listQueryOf applies a list's defaults (offset 0, limit 20); an empty query filters nothing. */
export function listQueryOf(req: ListRequest): ListQuery {
  return {
    // The gateway refused any other kind; one that skipped it matches no item.
    ...(req.kind === undefined ? {} : { kind: req.kind as Kind }),
    ...(req.query !== undefined && req.query !== '' ? { query: req.query } : {}),
    ...(req.collection === undefined ? {} : { collection: req.collection }),
    ...(req.tag === undefined ? {} : { tag: req.tag }),
    ...pageOf(req),
  };
}
