/**
 * What the dashboard does around every one of its pages: form bodies, the headers that keep its
 * pages to themselves, one address per page, and the navigation filled in per person.
 */
import type { FastifyInstance } from 'fastify';
import type { GatewayDeps } from '../deps.ts';
import { unstorablePath } from '../storable-text.ts';
import type { DashboardContext } from './dashboard-context.ts';
import { FORM_TYPE, formTypeRefusal } from './form-body.ts';
import { esc, NAV_COUNT_MARK, page } from './html.ts';
import { inboxCount } from './inbox-page.ts';
import { LOCAL_TIME_SCRIPT_SRC } from './local-time.ts';

/** Registered before any dashboard route: the hooks run in the order they are added here. */
export function registerDashboardHooks(
  app: FastifyInstance,
  deps: GatewayDeps,
  { session }: Pick<DashboardContext, 'session'>,
): void {
  app.addContentTypeParser(FORM_TYPE, { parseAs: 'string' }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(String(body))));
  });
  // Every dashboard form (the OAuth consent forms too) is sent urlencoded; any other body is
  // refused here, as a page, before a parser could answer for the MCP endpoint.
  app.addHook('onRequest', async (req, reply) => {
    if (req.method !== 'POST' || !req.url.startsWith('/dashboard/')) return;
    const refusal = formTypeRefusal(req.headers['content-type']);
    if (refusal === undefined) return;
    return reply
      .code(415)
      .type('text/html')
      .send(page('Unsupported form encoding', `<p class="error" role="alert">${esc(refusal)}</p>`));
  });

  // A form field or query value PostgreSQL could not store (a NUL) is refused here, naming it,
  // rather than failing whichever statement it would reach.
  app.addHook('preHandler', async (req, reply) => {
    if (!req.url.startsWith('/dashboard')) return;
    const where = unstorablePath(req.query) ?? unstorablePath(req.body);
    if (where === undefined) return;
    return reply
      .code(400)
      .type('text/html')
      .send(page('Bad input', `<p class="error" role="alert">${esc(`${where.path} ${where.rule}`)}</p>`));
  });

  app.addHook('onSend', async (req, reply) => {
    if (!req.url.startsWith('/dashboard')) return;
    // A page may widen the policy it was given (the OAuth consent form redirects to its client).
    if (!reply.hasHeader('content-security-policy')) {
      reply.header(
        'content-security-policy',
        `default-src 'none'; script-src ${LOCAL_TIME_SCRIPT_SRC}; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; frame-ancestors 'none'`,
      );
    }
    reply.header('x-content-type-options', 'nosniff');
    // same-origin, not no-referrer: with no-referrer, browsers send "Origin: null" on our own form posts.
    reply.header('referrer-policy', 'same-origin');
    reply.header('cache-control', 'no-store');
  });

  // A dashboard address that ends in a slash is the page without it (before any route, since
  // `/dashboard/changes/` would otherwise be read as a change with an empty id).
  app.addHook('onRequest', async (req, reply) => {
    if (req.method !== 'GET' || !req.url.startsWith('/dashboard/')) return;
    const [path = '', query] = req.url.split(/\?(.*)/s, 2);
    const trimmed = path.replace(/\/+$/, '');
    if (trimmed === path || !/^\/dashboard(\/[^/]+)*$/.test(trimmed)) return;
    return reply.redirect(`${trimmed}${query ? `?${query}` : ''}`, 301);
  });

  // The navigation is the same on every page; what differs per person and page is filled in
  // here: the inbox's count, and which link is the page being read (aria-current).
  app.addHook('onSend', async (req, _reply, payload) => {
    if (typeof payload !== 'string' || !payload.includes(NAV_COUNT_MARK)) return payload;
    const s = await session(req).catch(() => undefined);
    const count = s === undefined ? undefined : await inboxCount(deps, s);
    const badge =
      count === undefined || count === 0
        ? ''
        : ` <span class="count">${count}<span class="sr-only"> awaiting you</span></span>`;
    const path = req.url.split('?')[0] ?? '';
    const current = [...payload.matchAll(/<li><a href="(\/dashboard[^"]*)">/g)]
      .map((m) => m[1] ?? '')
      .filter((href) => path === href || path.startsWith(`${href}/`))
      .sort((a, b) => b.length - a.length)[0];
    const marked =
      current === undefined
        ? payload
        : payload.replace(`<li><a href="${current}">`, () => `<li><a href="${current}" aria-current="page">`);
    return marked.replace(NAV_COUNT_MARK, () => badge);
  });
}
