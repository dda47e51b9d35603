/**
 * Cursor pagination of the lists ordered by creation (pixels, conversion event settings, custom
 * audiences), with the rules `GET /ads` has: `limit`, `order` asc|desc, and one of the opaque
 * cursors `after` / `before` from an earlier page's `paging`.
 */
import { type RawQuery, single } from './ad-requests.ts';
import { invalidRequest } from './errors.ts';

export const PAGE_PARAMETERS = ['limit', 'after', 'before', 'order'] as const;
/** The page sizes of the platform's lists. */
export const LIST_LIMITS = { max: 500, default: 25 };

export interface SeqPageQuery {
  limit: number;
  order: 'asc' | 'desc';
  /** Rows after (in `order`) the row with this sequence number. */
  afterSeq: number | undefined;
  /** Rows before (in `order`) the row with this sequence number. */
  beforeSeq: number | undefined;
}

export interface SeqPage<T> {
  rows: T[];
  /** Whether matching rows come after the page's last row (in the query's order). */
  moreAfter: boolean;
  /** Whether matching rows come before the page's first row. */
  moreBefore: boolean;
}

/** encodeSeqCursor returns the cursor of a `kind` list that points at the row numbered `seq`. */
export function encodeSeqCursor(kind: string, seq: number): string {
  return Buffer.from(`${kind}:${seq}`, 'utf8').toString('base64url');
}

function decodeSeqCursor(kind: string, field: string, cursor: string): number {
  const decoded = /^[A-Za-z0-9_-]{1,64}$/.test(cursor)
    ? Buffer.from(cursor, 'base64url').toString('utf8')
    : '';
  const match = /^([a-z_]+):([1-9][0-9]{0,14})$/.exec(decoded);
  if (match?.[1] !== kind || match[2] === undefined) {
    throw invalidRequest(field, `${field} is not a valid cursor; use paging.${field} of an earlier page`);
  }
  return Number(match[2]);
}

/** parseSeqPage validates `limit`, `order`, `after` and `before` of a `kind` list's query. */
export function parseSeqPage(
  query: RawQuery,
  kind: string,
  limits: { max: number; default: number },
): SeqPageQuery {
  const rawLimit = single(query, 'limit');
  let limit = limits.default;
  if (rawLimit !== undefined) {
    limit = /^[0-9]{1,5}$/.test(rawLimit) ? Number(rawLimit) : Number.NaN;
    if (!(limit >= 1 && limit <= limits.max)) {
      throw invalidRequest('limit', `limit must be an integer from 1 to ${limits.max}; got "${rawLimit}"`);
    }
  }
  const order = single(query, 'order');
  if (order !== undefined && order !== 'asc' && order !== 'desc') {
    throw invalidRequest('order', `order must be "asc" or "desc"; got "${order}"`);
  }
  const after = single(query, 'after');
  const before = single(query, 'before');
  if (after !== undefined && before !== undefined) {
    throw invalidRequest('before', 'after and before cannot be combined; give one cursor');
  }
  return {
    limit,
    order: order ?? 'asc',
    afterSeq: after === undefined ? undefined : decodeSeqCursor(kind, 'after', after),
    beforeSeq: before === undefined ? undefined : decodeSeqCursor(kind, 'before', before),
  };
}

/** pageJson is a page as the API returns it: `data` and the cursors to its neighbours. */
export function pageJson<T extends { seq: number }, J>(
  kind: string,
  page: SeqPage<T>,
  toJson: (row: T) => J,
) {
  const first = page.rows[0];
  const last = page.rows[page.rows.length - 1];
  return {
    data: page.rows.map(toJson),
    paging: {
      after: page.moreAfter && last !== undefined ? encodeSeqCursor(kind, last.seq) : null,
      before: page.moreBefore && first !== undefined ? encodeSeqCursor(kind, first.seq) : null,
      has_more: page.moreAfter,
    },
  };
}
