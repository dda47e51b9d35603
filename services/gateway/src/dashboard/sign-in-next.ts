/**
 * Where a person goes after signing in: back to the dashboard page that sent them to sign in
 * (a review page opened from an MCP client's URL elicitation, a webhook's link, a bookmark), so
 * the link someone followed is the page they see. Only this dashboard's own paths qualify: the
 * pattern admits no scheme, no host, no `//` and no backslash, so a crafted link cannot send a
 * person elsewhere after they signed in (an open redirect).
 */
import type { FastifyRequest } from 'fastify';

const OWN_PAGE = /^\/dashboard(?:\/[A-Za-z0-9_.~-]+)*(?:\?[A-Za-z0-9_.~=&%+-]*)?$/;
const LONGEST = 1_000;

/** `next` if it is one of the dashboard's own pages (not the sign-in page itself), else undefined. */
export function dashboardNext(next: unknown): string | undefined {
  if (typeof next !== 'string' || next.length > LONGEST || !OWN_PAGE.test(next)) return undefined;
  if (next.includes('/..') || /^\/dashboard\/log(?:in|out)(?:[/?]|$)/.test(next)) return undefined;
  return next;
}

/** The sign-in page, asked to come back to the page requested (a GET), when that is one of ours. */
export function signInFirst(req: FastifyRequest): string {
  const back = req.method === 'GET' ? dashboardNext(req.url) : undefined;
  return back === undefined || back === '/dashboard'
    ? '/dashboard/login'
    : `/dashboard/login?next=${encodeURIComponent(back)}`;
}
