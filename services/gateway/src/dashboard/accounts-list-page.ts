/**
 * The workspace's ad accounts, as the upstream proxy lists them for the signed-in person: each
 * with its currency, its time zone (and the time there now) and whether changes may be written.
 */
import type { FastifyInstance } from 'fastify';
import { type GatewayDeps, onBehalfOf } from '../deps.ts';
import type { AccountPageHelpers } from './account-pages.ts';
import { sessionPrincipal } from './change-pages.ts';
import { esc, page } from './html.ts';
import { accountTimeText } from './local-time.ts';

export function registerAccountsListPage(
  app: FastifyInstance,
  deps: GatewayDeps,
  h: AccountPageHelpers,
): void {
  app.get('/dashboard/accounts', async (req, reply) => {
    const s = await h.session(req);
    if (!s) return reply.redirect('/dashboard/login', 303);
    const accounts = await deps.upstream.listAccounts({}, onBehalfOf(sessionPrincipal(s))).then(
      (r) => r.accounts,
      () => undefined,
    );
    const now = new Date();
    const body =
      accounts === undefined
        ? '<p class="error" role="alert">The ad accounts could not be loaded just now.</p>'
        : accounts.length === 0
          ? '<p class="muted">No ad accounts are connected.</p>'
          : `<table id="accounts"><thead><tr><th>Name</th><th>Currency</th><th>Time zone</th><th>Time there now</th><th>Writes</th></tr></thead><tbody>${accounts
              .map(
                (a) =>
                  `<tr data-account="${esc(a.accountId)}"><td><a href="/dashboard/accounts/${esc(a.accountId)}">${esc(a.name)}</a></td><td>${esc(a.currency)}</td><td>${esc(a.timeZone)}</td><td>${esc(accountTimeText(now, a.timeZone))}</td><td class="writes">${a.canWrite ? 'allowed' : 'read only'}</td></tr>`,
              )
              .join('')}</tbody></table>`;
    return reply
      .type('text/html')
      .send(page('Ad accounts', `<section><h2>Ad accounts</h2>${body}</section>`, h.user(s)));
  });
}
