/**
 * Cursor pagination of the platform's lists: `limit`, `order` (`asc` or `desc` by creation) and
 * one of `after` / `before`, an opaque cursor that names the resource kind and the creation
 * sequence number of the item it points at.
 */
import { invalidRequest } from './errors.ts';

/** A parsed query string: repeated parameters arrive as arrays. */
export type RawQuery = Record<string, string | string[] | undefined>;

export const DEFAULT_LIMIT = 25;
export const MAX_LIMIT = 500;
/** The query parameters of paging, for a list's allowed parameters. */
export const PAGING_PARAMETERS = ['limit', 'after', 'before', 'order'] as const;

export interface PageRequest {
  limit: number;
  order: 'asc' | 'desc';
  /** Items after (in `order`) the item with this sequence number. */
  afterSeq: number | undefined;
  /** Items before (in `order`) the item with this sequence number. */
  beforeSeq: number | undefined;
}

export interface PageOf<T> {
  items: T[];
  /** Whether items matching the filter come after the page's last item (in the query's order). */
  moreAfter: boolean;
  /** Whether items matching the filter come before the page's first item. */
  moreBefore: boolean;
}

/** encodeCursor returns the opaque cursor that points at the `kind` item with sequence number `seq`. */
export function encodeCursor(kind: string, seq: number): string {
  return Buffer.from(`${kind}:${seq}`, 'utf8').toString('base64url');
}

/** A cursor of another list (or none at all) is refused: its numbers mean nothing here. */
function decodeCursor(kind: string, field: string, cursor: string): number {
  const decoded = /^[A-Za-z0-9_-]{1,64}$/.test(cursor)
    ? Buffer.from(cursor, 'base64url').toString('utf8')
    : '';
  const prefix = `${kind}:`;
  const digits = decoded.startsWith(prefix) ? decoded.slice(prefix.length) : '';
  if (!/^[1-9][0-9]{0,14}$/.test(digits)) {
    throw invalidRequest(field, `${field} is not a valid cursor; use paging.${field} of an earlier page`);
  }
  return Number(digits);
}

/** single returns the value of a query parameter that may appear at most once. */
export function single(query: RawQuery, name: string): string | undefined {
  const value = query[name];
  if (Array.isArray(value)) throw invalidRequest(name, `${name} must be given at most once`);
  return value;
}

/** many returns every value of a repeatable query parameter; none when it is absent. */
export function many(query: RawQuery, name: string): string[] {
  const value = query[name];
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}

/** parseLimit validates the `limit` of any list or search: an integer from 1 to `max`, `fallback` when absent. */
export function parseLimit(query: RawQuery, max: number, fallback: number): number {
  const raw = single(query, 'limit');
  if (raw === undefined) return fallback;
  const limit = /^[0-9]{1,5}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(limit >= 1 && limit <= max)) {
    throw invalidRequest('limit', `limit must be an integer from 1 to ${max}; got "${raw}"`);
  }
  return limit;
}

/** parsePaging validates `limit`, `order`, `after` and `before` of a `kind` list. */
export function parsePaging(query: RawQuery, kind: string, maxLimit = MAX_LIMIT): PageRequest {
  const limit = parseLimit(query, maxLimit, Math.min(DEFAULT_LIMIT, maxLimit));

  const rawOrder = single(query, 'order');
  if (rawOrder !== undefined && rawOrder !== 'asc' && rawOrder !== 'desc') {
    throw invalidRequest('order', `order must be "asc" or "desc"; got "${rawOrder}"`);
  }

  const after = single(query, 'after');
  const before = single(query, 'before');
  if (after !== undefined && before !== undefined) {
    throw invalidRequest('before', 'after and before cannot be combined; give one cursor');
  }
  return {
    limit,
    order: rawOrder ?? 'asc',
    afterSeq: after === undefined ? undefined : decodeCursor(kind, 'after', after),
    beforeSeq: before === undefined ? undefined : decodeCursor(kind, 'before', before),
  };
}

/** pageJson is a page as the API returns it: `data` and the `paging` cursors of a `kind` list. */
export function pageJson<T extends { seq: number }, J>(kind: string, page: PageOf<T>, json: (item: T) => J) {
  const first = page.items[0];
  const last = page.items[page.items.length - 1];
  return {
    data: page.items.map(json),
    paging: {
      after: page.moreAfter && last !== undefined ? encodeCursor(kind, last.seq) : null,
      before: page.moreBefore && first !== undefined ? encodeCursor(kind, first.seq) : null,
      has_more: page.moreAfter,
    },
  };
}
