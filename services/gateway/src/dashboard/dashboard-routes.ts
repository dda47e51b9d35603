/**
 * The dashboard: sign-in for people, and the workspace overview (its ad accounts and MCP
 * connections, each connection revocable). Pages are server-rendered; every POST carries the
 * session's CSRF token and must come from our own origin.
 */
import { randomBytes } from 'node:crypto';
import { ConnectError } from '@connectrpc/connect';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createOriginPolicy } from '../auth/origin.ts';
import { RateLimiter } from '../auth/rate-limiter.ts';
import { type GatewayDeps, onBehalfOf } from '../deps.ts';
import { hashPassword, hashToken, verifyPassword } from '../domain/credentials.ts';
import { findUserByEmail, insertAudit, listCredentials } from '../store/identity-store.ts';
import { deleteSession, findSession, insertSession, type SessionView } from '../store/session-store.ts';
import { registerAccountPages } from './account-pages.ts';
import { registerAccountsListPage } from './accounts-list-page.ts';
import { registerAuditPage } from './audit-page.ts';
import { loadPeople } from './change-actors.ts';
import {
  accountNames,
  changeDetailHtml,
  changeListHtml,
  loadChange,
  loadReview,
  sessionPrincipal,
} from './change-pages.ts';
import { registerChangesListPage } from './changes-list-page.ts';
import { mayRevoke, registerConnectionsPage, revokeConnection } from './connections-page.ts';
import { registerControlsPages } from './controls-page.ts';
import { registerFeaturesPage } from './features-page.ts';
import { decisionRefusal, FORM_TYPE, formTypeRefusal } from './form-body.ts';
import { esc, NAV_COUNT_MARK, page } from './html.ts';
import { inboxCount, registerInboxPage } from './inbox-page.ts';
import { LOCAL_TIME_SCRIPT_SRC, localTimeScript, timeHtml } from './local-time.ts';
import { registerMembersPage } from './members-page.ts';
import { registerProposalPages } from './proposal-pages.ts';
import { registerRevertRoute } from './revert-route.ts';
import { registerSettingsPage } from './settings-page.ts';
import { dashboardNext, signInFirst } from './sign-in-next.ts';
import { registerWebhooksPage } from './webhooks-page.ts';

export const SESSION_COOKIE = 'adsmcp_session';
const COOKIE = SESSION_COOKIE;
const SESSION_HOURS = 12;

/**
 * The value of cookie `name`, or undefined when it is absent or not validly percent-encoded (a
 * value we never set: another site on the same host, or a hand-edited cookie, means no session).
 */
export function readCookie(req: FastifyRequest, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k !== name) continue;
    try {
      return decodeURIComponent(v.join('='));
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** Where sign-in may continue besides the overview: the dashboard page that asked for it, or an OAuth consent page (nothing off-site). */
function afterSignIn(next: unknown): string | undefined {
  return dashboardNext(next);
}

export interface DashboardOptions {
  publicUrl: string;
  /** Further origins whose pages may post the dashboard's forms (ALLOWED_ORIGINS). */
  allowedOrigins?: readonly string[];
  /**
   * Ends the OAuth authorization server's sign-in in the browser (oauth-routes.ts): on sign-out,
   * and on a sign-in as another person than the one it holds (`keep`, the person signing in).
   */
  endOAuthSignIn?: (req: FastifyRequest, reply: FastifyReply, keep?: string) => Promise<void>;
}

export function registerDashboardRoutes(
  app: FastifyInstance,
  deps: GatewayDeps,
  opts: DashboardOptions,
): void {
  const origins = createOriginPolicy(opts.publicUrl, opts.allowedOrigins);
  const secure = opts.publicUrl.startsWith('https://');
  // Five failed sign-ins a minute per email and address. Each attempt is charged before its
  // password is hashed (that work is what a guesser would make us do) and given back when it
  // succeeds, so a person who signs in often is never locked out by their own sessions.
  const attempts = new RateLimiter(5 / 60, 5);
  // An unknown email is checked against this hash, so that answering takes as long as for a
  // member (the time must not tell which emails have an account).
  const noSuchUserHash = hashPassword(randomBytes(24).toString('base64url'));
  noSuchUserHash.catch(() => undefined);

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
        : payload.replace(`<li><a href="${current}">`, `<li><a href="${current}" aria-current="page">`);
    return marked.replace(NAV_COUNT_MARK, badge);
  });

  const session = async (req: FastifyRequest): Promise<SessionView | undefined> => {
    const token = readCookie(req, COOKIE);
    return token ? findSession(deps.pool, hashToken(token)) : undefined;
  };

  /** Refuses a form post with 403 and a message that says which check it failed. */
  const refuseForm = (reply: FastifyReply, message: string) =>
    reply
      .code(403)
      .type('text/html')
      .send(page('Forbidden', `<p class="error" role="alert">${esc(message)}</p>`));

  /** Why a form post did not come from one of our own pages (its Origin), or undefined when it did. */
  const foreignOrigin = (req: FastifyRequest): string | undefined => {
    const sent = req.headers.origin;
    if (sent === undefined || origins.allows(sent)) return undefined;
    return `This form was refused by the origin check: it was sent from ${sent}, not from this dashboard's own pages (${new URL(opts.publicUrl).origin}). Open the dashboard at its own address and try again.`;
  };

  /** A POST from a signed-in person on our own page, or undefined after answering 403. */
  const checkedPost = async (req: FastifyRequest, reply: FastifyReply): Promise<SessionView | undefined> => {
    const badOrigin = foreignOrigin(req);
    if (badOrigin !== undefined) {
      await refuseForm(reply, badOrigin);
      return undefined;
    }
    const s = await session(req);
    if (!s) {
      await refuseForm(reply, 'You are not signed in, or your session has ended. Sign in again and retry.');
      return undefined;
    }
    const body = (req.body ?? {}) as Record<string, string>;
    if (body.csrf !== s.csrf_token) {
      await refuseForm(
        reply,
        "This form has expired: its CSRF token is not your session's (the CSRF check failed). Reload the page and try again.",
      );
      return undefined;
    }
    return s;
  };

  const loginPage = (message?: string, email = '', next?: string) =>
    page(
      'Sign in',
      `<section class="login"><h2>Sign in</h2>${message ? `<p class="error" role="alert">${esc(message)}</p>` : ''}
      <form method="post" action="/dashboard/login">${next ? `<input type="hidden" name="next" value="${esc(next)}">` : ''}
        <label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required value="${esc(email)}">
        <label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
        <p><button type="submit">Sign in</button></p>
      </form></section>`,
    );

  app.get<{ Querystring: { next?: string } }>('/dashboard/login', async (req, reply) =>
    reply.type('text/html').send(loginPage(undefined, '', afterSignIn(req.query.next))),
  );

  app.post('/dashboard/login', async (req, reply) => {
    // Like every other form: signing in from another site's page would sign a person in unawares.
    const badOrigin = foreignOrigin(req);
    if (badOrigin !== undefined) return refuseForm(reply, badOrigin);
    const body = (req.body ?? {}) as Record<string, string>;
    const email = String(body.email ?? '')
      .trim()
      .toLowerCase();
    const password = String(body.password ?? '');
    const attemptKey = `${email}|${req.ip}`;
    const limit = attempts.take(attemptKey);
    if (!limit.allowed) {
      reply.header('retry-after', String(limit.retryAfterSeconds));
      return reply
        .code(429)
        .type('text/html')
        .send(
          loginPage(
            `Too many attempts. Try again in ${limit.retryAfterSeconds} seconds.`,
            email,
            afterSignIn(body.next),
          ),
        );
    }
    const user = email ? await findUserByEmail(deps.pool, email) : undefined;
    const passwordRight = await verifyPassword(password, user?.password_hash ?? (await noSuchUserHash));
    if (!user || !passwordRight) {
      return reply
        .code(401)
        .type('text/html')
        .send(loginPage('The email or password is not right.', email, afterSignIn(body.next)));
    }
    attempts.give(attemptKey);
    const token = randomBytes(32).toString('base64url');
    await insertSession(deps.pool, {
      tokenHash: hashToken(token),
      userId: user.id,
      csrfToken: randomBytes(24).toString('base64url'),
      expiresAt: new Date(Date.now() + SESSION_HOURS * 3_600_000),
    });
    await insertAudit(deps.pool, {
      workspaceId: user.workspace_id,
      actor: `user:${user.id}`,
      action: 'user.signed_in',
    });
    // A browser another person left signed in: OAuth clients that person approved no longer get
    // codes in their name from it (they ask the person now here).
    await opts.endOAuthSignIn?.(req, reply, user.id);
    reply.header(
      'set-cookie',
      `${COOKIE}=${token}; Path=/dashboard; HttpOnly; SameSite=Lax; Max-Age=${SESSION_HOURS * 3600}${secure ? '; Secure' : ''}`,
    );
    return reply.redirect(afterSignIn(body.next) ?? '/dashboard', 303);
  });

  app.post('/dashboard/logout', async (req, reply) => {
    const s = await checkedPost(req, reply);
    if (!s) return reply;
    const token = readCookie(req, COOKIE);
    if (token) await deleteSession(deps.pool, hashToken(token));
    // Signed out means signed out for OAuth clients too: the next authorization request from
    // this browser asks who is there again, even from a client the person approved before.
    await opts.endOAuthSignIn?.(req, reply);
    reply.header('set-cookie', `${COOKIE}=; Path=/dashboard; HttpOnly; SameSite=Lax; Max-Age=0`);
    return reply.redirect('/dashboard/login', 303);
  });

  app.get('/dashboard', async (req, reply) => {
    const s = await session(req);
    if (!s) return reply.redirect(signInFirst(req), 303);
    const principal = sessionPrincipal(s);
    const [credentials, pending, accounts] = await Promise.all([
      listCredentials(deps.pool, s.workspace_id),
      deps.changes
        .listChanges({ status: 'prepared', accountId: '', limit: 50, offset: 0 }, onBehalfOf(principal))
        .then(
          async (r) => ({
            changes: r.changes,
            people: await loadPeople(deps.pool, s.workspace_id, r.changes),
          }),
          () => undefined,
        ),
      deps.upstream.listAccounts({}, onBehalfOf(principal)).then(
        (r) => r.accounts,
        () => undefined,
      ),
    ]);
    const accountRows =
      accounts === undefined
        ? '<p class="error">The ad accounts could not be loaded just now.</p>'
        : accounts.length === 0
          ? '<p class="muted">No ad accounts are connected.</p>'
          : `<table><thead><tr><th>Name</th><th>Account id</th><th>Currency</th><th>Time zone</th><th>Writes</th></tr></thead><tbody>${accounts
              .map(
                (a) =>
                  `<tr><td class="name"><a href="/dashboard/accounts/${esc(a.accountId)}">${esc(a.name)}</a></td><td><code>${esc(a.accountId)}</code></td><td>${esc(a.currency)}</td><td>${esc(a.timeZone)}</td><td>${a.canWrite ? 'allowed' : 'read only'}</td></tr>`,
              )
              .join('')}</tbody></table>`;
    const pendingHtml =
      pending === undefined
        ? '<p class="error">Changes could not be loaded just now.</p>'
        : pending.changes.length === 0
          ? '<p class="empty" role="status">No change awaits approval.</p>'
          : changeListHtml(pending.changes, pending.people, [], accountNames(accounts ?? []));
    const credentialRows = credentials
      .map((c) => {
        const active = !c.revoked_at && !(c.expires_at && c.expires_at <= new Date());
        const state = c.revoked_at ? `revoked ${timeHtml(c.revoked_at)}` : active ? 'active' : 'expired';
        const action =
          active && mayRevoke(s, c)
            ? `<form method="post" action="/dashboard/credentials/${esc(c.credential_id)}/revoke"><input type="hidden" name="csrf" value="${esc(s.csrf_token)}"><button class="danger" type="submit">Revoke</button></form>`
            : '';
        return `<tr data-credential="${esc(c.credential_id)}"${active ? '' : ' class="inactive"'}><td class="name">${esc(c.credential_name)}</td><td>${esc(c.user_email)}</td><td>${esc(c.scopes.join(', '))}</td><td>${timeHtml(c.expires_at)}</td><td>${timeHtml(c.last_used_at)}</td><td class="state">${state}</td><td>${action}</td></tr>`;
      })
      .join('');
    return reply.type('text/html').send(
      page(
        'Dashboard',
        `<section><h2>Changes awaiting approval</h2>${pendingHtml}<p><a href="/dashboard/inbox">Your inbox</a> · <a href="/dashboard/changes">All changes</a> · <a href="/dashboard/proposals">Optimization proposals</a></p></section>
         <section><h2>Ad accounts</h2>${accountRows}</section>
         <section><h2>MCP connections</h2>
         <table><thead><tr><th>Name</th><th>User</th><th>Scopes</th><th>Expires</th><th>Last used</th><th>State</th><th></th></tr></thead><tbody>${credentialRows}</tbody></table></section>${localTimeScript}`,
        { email: s.email, workspace: s.workspace_name, csrf: s.csrf_token },
      ),
    );
  });

  const user = (s: SessionView) => ({ email: s.email, workspace: s.workspace_name, csrf: s.csrf_token });

  app.get<{ Params: { id: string } }>('/dashboard/changes/:id', async (req, reply) => {
    const s = await session(req);
    if (!s) return reply.redirect(signInFirst(req), 303);
    const review = await loadReview(deps, sessionPrincipal(s), req.params.id);
    if (!review)
      return reply
        .code(404)
        .type('text/html')
        .send(page('Not found', '<p>No such change in this workspace.</p>', user(s)));
    const people = await loadPeople(deps.pool, s.workspace_id, [review.change]);
    return reply
      .type('text/html')
      .send(
        page(
          'Review change',
          changeDetailHtml(review.change, people, s.csrf_token, s.role !== 'viewer', review),
          user(s),
        ),
      );
  });

  for (const decision of ['approve', 'reject'] as const) {
    app.post<{ Params: { id: string } }>(`/dashboard/changes/:id/${decision}`, async (req, reply) => {
      const s = await checkedPost(req, reply);
      if (!s) return reply;
      const principal = sessionPrincipal(s);
      const change = await loadChange(deps, principal, req.params.id);
      if (!change)
        return reply
          .code(404)
          .type('text/html')
          .send(page('Not found', '<p>No such change in this workspace.</p>', user(s)));
      const body = (req.body ?? {}) as Record<string, string>;
      try {
        if (decision === 'approve') {
          await deps.changes.approveChange(
            { changeId: change.changeId, digest: String(body.digest ?? '') },
            onBehalfOf(principal),
          );
        } else {
          await deps.changes.rejectChange(
            { changeId: change.changeId, reason: String(body.reason ?? '') },
            onBehalfOf(principal),
          );
        }
      } catch (err) {
        const refusal = decisionRefusal(ConnectError.from(err), `Your role cannot ${decision} changes.`);
        // The page shown again says why (a stale object, a decision made meanwhile) and offers
        // only what can still be done.
        const fresh = (await loadReview(deps, principal, change.changeId)) ?? { change, conflicts: [] };
        const people = await loadPeople(deps.pool, s.workspace_id, [fresh.change]);
        return reply
          .code(refusal.status)
          .type('text/html')
          .send(
            page(
              'Review change',
              changeDetailHtml(
                fresh.change,
                people,
                s.csrf_token,
                s.role !== 'viewer',
                fresh,
                refusal.message,
              ),
              user(s),
            ),
          );
      }
      await insertAudit(deps.pool, {
        workspaceId: s.workspace_id,
        actor: `user:${s.user_id}`,
        action: decision === 'approve' ? 'change.approved' : 'change.rejected',
        target: change.changeId,
        detail: { digest: change.digest },
      });
      return reply.redirect(`/dashboard/changes/${change.changeId}`, 303);
    });
  }

  // Settling a change whose apply outcome is unknown: the changes service enforces who may, and which.
  app.post<{ Params: { id: string } }>('/dashboard/changes/:id/resolve', async (req, reply) => {
    const s = await checkedPost(req, reply);
    if (!s) return reply;
    const principal = sessionPrincipal(s);
    const change = await loadChange(deps, principal, req.params.id);
    if (!change)
      return reply
        .code(404)
        .type('text/html')
        .send(page('Not found', '<p>No such change in this workspace.</p>', user(s)));
    const body = (req.body ?? {}) as Record<string, unknown>;
    const text = (v: unknown) => (typeof v === 'string' ? v : '');
    try {
      await deps.changes.resolveChange(
        { changeId: change.changeId, resolution: text(body.resolution), note: text(body.note) },
        onBehalfOf(principal),
      );
    } catch (err) {
      const refusal = decisionRefusal(
        ConnectError.from(err),
        'Your role cannot settle the outcome of changes.',
      );
      const fresh = (await loadReview(deps, principal, change.changeId)) ?? { change, conflicts: [] };
      const people = await loadPeople(deps.pool, s.workspace_id, [fresh.change]);
      return reply
        .code(refusal.status)
        .type('text/html')
        .send(
          page(
            'Review change',
            changeDetailHtml(fresh.change, people, s.csrf_token, s.role !== 'viewer', fresh, refusal.message),
            user(s),
          ),
        );
    }
    return reply.redirect(`/dashboard/changes/${change.changeId}`, 303);
  });

  registerProposalPages(app, deps, { session, checkedPost });

  // The overview's Revoke button: the same rule and answers as the connections page's.
  app.post<{ Params: { id: string } }>('/dashboard/credentials/:id/revoke', async (req, reply) => {
    const s = await checkedPost(req, reply);
    if (!s) return reply;
    const outcome = await revokeConnection(deps, s, req.params.id);
    if (outcome.refused)
      return reply
        .code(outcome.refused.status)
        .type('text/html')
        .send(
          page(
            outcome.refused.status === 404 ? 'Not found' : 'Forbidden',
            `<p class="error" role="alert">${esc(outcome.refused.message)}</p><p><a href="/dashboard">Back to the dashboard</a></p>`,
            user(s),
          ),
        );
    return reply.redirect('/dashboard', 303);
  });

  registerAccountPages(app, deps, { session, checkedPost, user });
  registerAccountsListPage(app, deps, { session, checkedPost, user });
  registerRevertRoute(app, deps, { session, checkedPost, user });
  registerChangesListPage(app, deps, { session, checkedPost, user });
  registerConnectionsPage(app, deps, { session, checkedPost, user });
  registerMembersPage(app, deps, { session, checkedPost, user });
  registerFeaturesPage(app, deps, { session, checkedPost, user });
  registerSettingsPage(app, deps, { session, checkedPost, user });
  registerControlsPages(app, deps, { session, checkedPost, user });
  registerAuditPage(app, deps, { session, checkedPost, user });
  registerInboxPage(app, deps, { session, checkedPost, user });
  registerWebhooksPage(app, deps, { session, checkedPost, user });

  // Any other dashboard address is a 404 page a person can read (not the MCP endpoint's JSON-RPC error), with the way back.
  app.route({
    method: ['GET', 'POST'],
    url: '/dashboard/*',
    handler: async (req, reply) => {
      const path = req.url.split('?')[0] ?? '';
      const s = await session(req).catch(() => undefined);
      return reply
        .code(404)
        .type('text/html')
        .send(
          page(
            'Not found',
            `<section><h2>Not found</h2><p>There is no dashboard page at <code>${esc(path.slice(0, 200))}</code>.</p><p><a href="/dashboard">Go to the overview</a></p></section>`,
            s ? user(s) : undefined,
          ),
        );
    },
  });
}
