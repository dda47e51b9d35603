/**
 * Paging as the services' lists do it (offset and limit, a total and the next offset) and as the
 * ad platform's lists do it (an `after` cursor while `has_more`), read in one way everywhere.
 */
import { isRecord } from './json.ts';

/** A list's page size when the caller gives none. */
export const LIST_LIMIT_DEFAULT = 20;
/** The largest offset a list accepts (the tools' schemas say the same). */
export const LIST_OFFSET_MAX = 100_000;

export interface Page {
  offset: number;
  limit: number;
}

/** pageOf is the page a list asks for with its defaults applied: offset 0 and limit 20 when unset. */
export function pageOf(req: { offset?: number | undefined; limit?: number | undefined }): Page {
  return { offset: req.offset ?? 0, limit: req.limit ?? LIST_LIMIT_DEFAULT };
}

/**
 * nextOffset is where the page after `page` starts, having returned `returned` of `total` rows;
 * undefined on the last page, or when the next would start past the largest offset a list accepts
 * (the caller could not ask for it).
 */
export function nextOffset(page: Pick<Page, 'offset'>, returned: number, total: number): number | undefined {
  const next = page.offset + returned;
  return returned > 0 && next < total && next <= LIST_OFFSET_MAX ? next : undefined;
}

/**
 * nextCursor reads an ad platform list answer's `paging`: the cursor to pass as `after` for the
 * next page while `has_more` is true, else undefined (the last page, or no paging at all).
 */
export function nextCursor(paging: unknown): string | undefined {
  return isRecord(paging) && paging.has_more === true && typeof paging.after === 'string'
    ? paging.after
    : undefined;
}
