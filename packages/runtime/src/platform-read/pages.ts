/**
 * The ad platform's cursor-paged reads (lists and insights) as one async iterator: every page, the
 * `after` cursor followed while `has_more`, to the end. A read that would take more pages than its
 * cap is an error that says so, never a result silently cut short; a cursor the platform repeats
 * is an error too, never an endless loop.
 *
 * The platform's paging is its own (`paging: {after, before, has_more}`), so no client library
 * knows it; what reads one page is the caller's (the gateway reads as the caller, a service as
 * its worker), hence a function.
 */
import { isRecord } from '../json.ts';
import { nextCursor } from '../paging.ts';

/** One page as the platform answers it: its items and its paging. */
export interface PlatformPage {
  data: readonly unknown[];
  paging?: unknown;
}

/** Reads the page after `after` (the first page when undefined). */
export type ReadPage = (after: string | undefined) => Promise<PlatformPage>;

/** Refuses a read that needs more pages than it may take, or whose cursors go round in a circle. */
export class PagingLimitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PagingLimitError';
  }
}

export interface PagesOptions {
  /** The most pages the read may take; one more is refused. */
  maxPages: number;
  /** What is read, for the error: "the ads of ad account …". */
  what: string;
}

/**
 * pages yields each page's objects, page after page, following `after` to the last page. An item
 * that is not a JSON object is skipped (the platform's lists hold objects only).
 */
export async function* pages(
  readPage: ReadPage,
  { maxPages, what }: PagesOptions,
): AsyncGenerator<Record<string, unknown>[], void, undefined> {
  const seen = new Set<string>();
  let after: string | undefined;
  for (let n = 1; ; n++) {
    if (n > maxPages) {
      throw new PagingLimitError(
        `${what} take more than ${maxPages} pages of the ad platform; reading stopped there rather than return part of them`,
      );
    }
    const page = await readPage(after);
    yield page.data.filter(isRecord);
    const next = nextCursor(page.paging);
    if (next === undefined) return;
    if (seen.has(next)) {
      throw new PagingLimitError(`${what}: the ad platform gave the cursor ${next} twice; paging stopped`);
    }
    seen.add(next);
    after = next;
  }
}

/** items is every object of every page, in order. */
export async function* items(
  readPage: ReadPage,
  options: PagesOptions,
): AsyncGenerator<Record<string, unknown>, void, undefined> {
  for await (const page of pages(readPage, options)) yield* page;
}
