/**
 * A saved marketing item and its rules: what a save, an archive and a list may ask for, and
 * which revision a change must name.
 */
import {
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  StaleRevisionError,
} from '@adsmcp/runtime/errors';
import { dataIssues, type ItemData, KINDS, type Kind, validateItemData } from './item-data.ts';
import { isUuid, list, oneOf, show, summarize, text } from './rules.ts';

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

const NAME_MAX = 200;
const COLLECTION_MAX = 200;
const TAGS_MAX = 30;
const TAG_MAX = 100;
const QUERY_MAX = 200;
export const OFFSET_MAX = 100_000;
export const LIMIT_MAX = 100;
export const LIMIT_DEFAULT = 20;

const nameRule = text(NAME_MAX, { min: 1 });
const collectionRule = text(COLLECTION_MAX);
const tagsRule = list(text(TAG_MAX, { min: 1 }), { max: TAGS_MAX, unique: true });
const kindRule = oneOf(KINDS);

function isKind(value: string): value is Kind {
  return (KINDS as readonly string[]).includes(value);
}

function refuse(issues: string[]): void {
  if (issues.length > 0) throw new InvalidArgumentError(summarize(issues));
}

function checkItemId(itemId: string, out: string[]): void {
  if (!isUuid(itemId)) out.push(`item_id must be a UUID (got ${show(itemId)})`);
}

function checkRevision(expected: number, out: string[]): void {
  if (!Number.isInteger(expected) || expected < 1) {
    out.push(`expected_revision must be an integer of at least 1 (got ${expected})`);
  }
}

/** A save as the caller asked for it. */
export interface SaveRequest {
  itemId?: string;
  expectedRevision?: number;
  kind: string;
  name: string;
  collection?: string;
  tags: readonly string[];
  data: unknown;
}

/** A save that meets every rule. */
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
 * validateSave checks every field of a save and returns it with the omitted collection as the
 * empty one; it throws an InvalidArgumentError naming every field and rule broken.
 */
export function validateSave(req: SaveRequest): ValidSave {
  const issues: string[] = [];
  if (req.itemId !== undefined) checkItemId(req.itemId, issues);
  if (req.expectedRevision !== undefined) checkRevision(req.expectedRevision, issues);
  if (req.expectedRevision !== undefined && req.itemId === undefined) {
    issues.push('expected_revision applies only to updating an existing item; send its item_id too');
  }
  kindRule(req.kind, 'kind', issues);
  nameRule(req.name, 'name', issues);
  if (req.collection !== undefined) collectionRule(req.collection, 'collection', issues);
  tagsRule(req.tags, 'tags', issues);
  if (req.data === undefined) issues.push('data is required');
  else if (issues.length > 0 && isKind(req.kind)) issues.push(...dataIssues(req.kind, req.data));
  refuse(issues);
  const kind = req.kind as Kind;
  const data = validateItemData(kind, req.data);
  return {
    ...(req.itemId === undefined ? {} : { itemId: req.itemId.toLowerCase() }),
    ...(req.expectedRevision === undefined ? {} : { expectedRevision: req.expectedRevision }),
    kind,
    name: req.name,
    collection: req.collection ?? '',
    tags: [...req.tags],
    data,
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

/** An archive that meets the argument rules. */
export interface ValidArchive {
  itemId: string;
  expectedRevision: number;
}

/** validateArchive checks item_id and expected_revision (both required). */
export function validateArchive(req: { itemId: string; expectedRevision: number }): ValidArchive {
  const issues: string[] = [];
  checkItemId(req.itemId, issues);
  checkRevision(req.expectedRevision, issues);
  refuse(issues);
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
  const issues: string[] = [];
  checkItemId(itemId, issues);
  refuse(issues);
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

/** A list query that meets the rules, with its defaults applied. */
export interface ListQuery {
  kind?: Kind;
  /** Text to find, case-insensitively, in the name or a text value of the data. */
  query?: string;
  collection?: string;
  tag?: string;
  offset: number;
  limit: number;
}

/** validateList checks a list's filters and page and applies the defaults (offset 0, limit 20). */
export function validateList(req: ListRequest): ListQuery {
  const issues: string[] = [];
  if (req.kind !== undefined) kindRule(req.kind, 'kind', issues);
  if (req.query !== undefined) text(QUERY_MAX)(req.query, 'query', issues);
  if (req.collection !== undefined) collectionRule(req.collection, 'collection', issues);
  if (req.tag !== undefined) text(TAG_MAX)(req.tag, 'tag', issues);
  const offset = req.offset ?? 0;
  const limit = req.limit ?? LIMIT_DEFAULT;
  if (!Number.isInteger(offset) || offset < 0 || offset > OFFSET_MAX) {
    issues.push(`offset must be an integer from 0 to ${OFFSET_MAX} (got ${offset})`);
  }
  if (!Number.isInteger(limit) || limit < 1 || limit > LIMIT_MAX) {
    issues.push(`limit must be an integer from 1 to ${LIMIT_MAX} (got ${limit})`);
  }
  refuse(issues);
  return {
    ...(req.kind !== undefined && isKind(req.kind) ? { kind: req.kind } : {}),
    ...(req.query !== undefined && req.query !== '' ? { query: req.query } : {}),
    ...(req.collection === undefined ? {} : { collection: req.collection }),
    ...(req.tag === undefined ? {} : { tag: req.tag }),
    offset,
    limit,
  };
}

/**
 * nextOffset is where the page after one of `count` items at `offset` starts, or undefined when
 * that page would be past the last match or past the largest offset a list accepts.
 */
export function nextOffset(offset: number, count: number, total: number): number | undefined {
  const next = offset + count;
  return count > 0 && next < total && next <= OFFSET_MAX ? next : undefined;
}
