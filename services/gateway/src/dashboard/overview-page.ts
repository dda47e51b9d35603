/**
 * The workspace overview at /dashboard: changes awaiting approval, the ad accounts and the MCP
 * connections, each connection revocable from here.
 */
import { ChangeStatus } from '@adsmcp/proto/changes/v1/changes_pb';
import type { FastifyInstance } from 'fastify';
import { type GatewayDeps, onBehalfOf } from '../deps.ts';
import { listCredentials } from '../store/identity-store.ts';
import { loadPeople } from './change-actors.ts';
import { accountNames, changeListHtml, sessionPrincipal } from './change-pages.ts';
import { mayRevoke, revokeConnection } from './connections-page.ts';
import type { DashboardContext } from './dashboard-context.ts';
import { esc, page } from './html.ts';
import { localTimeScript, timeHtml } from './local-time.ts';
import { signInFirst } from './sign-in-next.ts';

export function registerOverviewPage(app: FastifyInstance, deps: GatewayDeps, ctx: DashboardContext): void {
  registerOverview(app, deps, ctx);
  registerOverviewRevoke(app, deps, ctx);
}

function registerOverview(app: FastifyInstance, deps: GatewayDeps, { session }: DashboardContext): void {
  app.get('/dashboard', async (req, reply) => {
    const s = await session(req);
    if (!s) return reply.redirect(signInFirst(req), 303);
    const principal = sessionPrincipal(s);
    const [credentials, pending, accounts] = await Promise.all([
      listCredentials(deps.pool, s.workspace_id),
      deps.changes
        .listChanges(
          { state: ChangeStatus.PREPARED, accountId: '', limit: 50, offset: 0 },
          onBehalfOf(principal),
        )
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
}

function registerOverviewRevoke(
  app: FastifyInstance,
  deps: GatewayDeps,
  { checkedPost, user }: DashboardContext,
): void {
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
}
