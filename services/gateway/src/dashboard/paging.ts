/** Filters and pages of the dashboard's growing lists, read from the query string. */
import { esc } from './html.ts';

export const PAGE_SIZE = 25;

/** A query-string value as one trimmed string (the first when repeated), at most `max` characters. */
export function queryText(query: unknown, name: string, max = 200): string {
  const raw = (query as Record<string, unknown> | undefined)?.[name];
  const value = Array.isArray(raw) ? raw[0] : raw;
  return typeof value === 'string' ? value.trim().slice(0, max) : '';
}

/** The 1-based page number asked for; anything else is page 1. */
export function pageNumber(query: unknown): number {
  const text = queryText(query, 'page', 9);
  return /^[1-9]\d{0,5}$/.test(text) ? Number(text) : 1;
}

/** Links to the previous and next pages, keeping the list's filters. */
export function pagerHtml(
  path: string,
  filters: Record<string, string>,
  page: number,
  total: number,
  size = PAGE_SIZE,
): string {
  const pages = Math.max(1, Math.ceil(total / size));
  const href = (n: number) => {
    const q = new URLSearchParams(Object.entries(filters).filter(([, v]) => v !== ''));
    if (n > 1) q.set('page', String(n));
    const text = q.toString();
    return `${path}${text ? `?${text}` : ''}`;
  };
  const prev = page > 1 ? `<a rel="prev" href="${esc(href(page - 1))}">← Previous</a>` : '';
  const next = page < pages ? `<a rel="next" href="${esc(href(page + 1))}">Next →</a>` : '';
  return `<p class="pager muted">Page ${esc(page)} of ${esc(pages)} (${esc(total)} in all) ${prev} ${next}</p>`;
}
