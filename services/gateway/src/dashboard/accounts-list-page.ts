/**
 * The workspace's ad accounts, as the upstream proxy lists them for the signed-in person: each
 * with its currency, its time zone (and the time there now), whether changes may be written and
 * when its platform credential expires, with a warning from 14 days before.
 */
import type { FastifyInstance } from 'fastify';
import { type GatewayDeps, onBehalfOf } from '../deps.ts';
import type { AccountPageHelpers } from './account-pages.ts';
import { sessionPrincipal } from './change-pages.ts';
import { esc, page } from './html.ts';
import { accountTimeText, timeHtml } from './local-time.ts';
import { signInFirst } from './sign-in-next.ts';

/** The cell of a connection's platform credential: when it expires, and how it stands. */
function credentialCell(a: { credentialExpiresAt: string; credentialStatus: string }): string {
  if (a.credentialExpiresAt === '') return '<td class="credential">expiry unknown</td>';
  const standing =
    a.credentialStatus === 'expired'
      ? ' (expired)'
      : a.credentialStatus === 'expiring_soon'
        ? ' (expires soon)'
        : '';
  return `<td class="credential ${esc(a.credentialStatus)}">${timeHtml(a.credentialExpiresAt)}${standing}</td>`;
}

/**
 * The warning over the list: each account whose platform credential expires within 14 days or has
 * expired, so the credential is renewed on the platform before changes and reads stop working.
 */
function credentialWarning(accounts: { name: string; credentialStatus: string }[]): string {
  const due = accounts.filter(
    (a) => a.credentialStatus === 'expiring_soon' || a.credentialStatus === 'expired',
  );
  if (due.length === 0) return '';
  const items = due
    .map(
      (a) =>
        `<li>${esc(a.name)}: ${a.credentialStatus === 'expired' ? 'expired' : 'expires within 14 days'}</li>`,
    )
    .join('');
  return `<div class="notice" role="alert" id="credential-warning"><p>Renew the platform credential of these ad accounts on the ad platform and connect them again:</p><ul>${items}</ul></div>`;
}

export function registerAccountsListPage(
  app: FastifyInstance,
  deps: GatewayDeps,
  h: AccountPageHelpers,
): void {
  app.get('/dashboard/accounts', async (req, reply) => {
    const s = await h.session(req);
    if (!s) return reply.redirect(signInFirst(req), 303);
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
          : `${credentialWarning(accounts)}<table id="accounts"><thead><tr><th>Name</th><th>Currency</th><th>Time zone</th><th>Time there now</th><th>Writes</th><th>Platform credential</th></tr></thead><tbody>${accounts
              .map(
                (a) =>
                  `<tr data-account="${esc(a.accountId)}"><td><a href="/dashboard/accounts/${esc(a.accountId)}">${esc(a.name)}</a></td><td>${esc(a.currency)}</td><td>${esc(a.timeZone)}</td><td>${esc(accountTimeText(now, a.timeZone))}</td><td class="writes">${a.canWrite ? 'allowed' : 'read only'}</td>${credentialCell(a)}</tr>`,
              )
              .join('')}</tbody></table>`;
    return reply
      .type('text/html')
      .send(page('Ad accounts', `<section><h2>Ad accounts</h2>${body}</section>`, h.user(s)));
  });
}
