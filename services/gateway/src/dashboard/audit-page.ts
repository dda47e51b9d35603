/**
 * The audit log: every prepare, approval, rejection and apply (with the platform's answer),
 * every token created and connection revoked, role and feature change, newest first, with who,
 * when and through which connection. Filterable by ad account, object and person; paged.
 */
import type { Change } from '@adsmcp/proto/changes/v1/changes_pb';
import type { Account } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { isUuid } from '@adsmcp/runtime/ids';
import type { FastifyInstance } from 'fastify';
import { type GatewayDeps, onBehalfOf } from '../deps.ts';
import { connectionsById, listAuditRows, listMembers } from '../store/dashboard-store.ts';
import type { SessionView } from '../store/session-store.ts';
import type { AccountPageHelpers } from './account-pages.ts';
import {
  type AuditEvent,
  type AuditFilter,
  changeEvents,
  gatewayEvents,
  matches,
  mergeByTime,
} from './audit-events.ts';
import { sessionPrincipal } from './change-pages.ts';
import { esc, page } from './html.ts';
import { accountTimeText, localTimeScript, timeHtml } from './local-time.ts';
import { pageNumber, pagerHtml, queryText } from './paging.ts';

/** How far back the log reads: the latest changes and gateway rows, each up to this many. */
export const AUDIT_WINDOW = 2000;
const CHANGES_PAGE = 200;
const EVENTS_PER_PAGE = 50;

/** The workspace's latest changes, up to AUDIT_WINDOW, or undefined when the service did not answer. */
async function recentChanges(deps: GatewayDeps, s: SessionView): Promise<Change[] | undefined> {
  const out: Change[] = [];
  try {
    for (let offset = 0; offset < AUDIT_WINDOW; offset += CHANGES_PAGE) {
      const r = await deps.changes.listChanges(
        { status: '', accountId: '', limit: CHANGES_PAGE, offset },
        onBehalfOf(sessionPrincipal(s)),
      );
      out.push(...r.changes);
      if (r.nextOffset === undefined || r.changes.length === 0) break;
    }
  } catch {
    return undefined;
  }
  return out;
}

function filtersHtml(
  f: AuditFilter,
  accounts: readonly Account[],
  members: readonly { id: string; email: string }[],
): string {
  const option = (value: string, label: string, chosen: string) =>
    `<option value="${esc(value)}"${value.toLowerCase() === chosen.toLowerCase() ? ' selected' : ''}>${esc(label)}</option>`;
  return `<form class="filters" method="get" action="/dashboard/audit">
    <label>Ad account <select name="account">${option('', 'any account', f.accountId)}${accounts.map((a) => option(a.accountId, a.name, f.accountId)).join('')}</select></label>
    <label>Object <input name="object" value="${esc(f.object)}" maxlength="200" placeholder="ad, connection, change id"></label>
    <label>Person <select name="person">${option('', 'anyone', f.personId)}${members.map((m) => option(m.id, m.email, f.personId)).join('')}</select></label>
    <button type="submit">Filter</button></form>`;
}

function eventRow(e: AuditEvent, accounts: ReadonlyMap<string, Account>): string {
  const account = e.accountId ? accounts.get(e.accountId.toLowerCase()) : undefined;
  const accountCell = e.accountId ? esc(account?.name ?? 'an account no longer connected') : '';
  const zone = account
    ? `<span class="muted" title="the account's time zone">${esc(accountTimeText(e.at, account.timeZone))}</span>`
    : '';
  const object = e.link ? `<a href="${esc(e.link)}">${esc(e.object || 'open')}</a>` : esc(e.object);
  return `<tr data-event="${esc(e.key)}"><td>${timeHtml(e.at)}${zone ? `<br>${zone}` : ''}</td><td class="what">${esc(e.what)}</td>
    <td class="who">${esc(e.who)}</td><td class="connection">${esc(e.connection ?? '')}</td><td class="account">${accountCell}</td>
    <td class="object">${object}</td><td class="detail">${esc(e.detail)}</td></tr>`;
}

export function registerAuditPage(app: FastifyInstance, deps: GatewayDeps, h: AccountPageHelpers): void {
  app.get('/dashboard/audit', async (req, reply) => {
    const s = await h.session(req);
    if (!s) return reply.redirect('/dashboard/login', 303);
    const accountId = queryText(req.query, 'account', 36);
    const personId = queryText(req.query, 'person', 36);
    const filter: AuditFilter = {
      accountId: isUuid(accountId) ? accountId : '',
      object: queryText(req.query, 'object'),
      personId: isUuid(personId) ? personId : '',
    };
    const number = pageNumber(req.query);
    const [members, connections, rows, changes, accountList] = await Promise.all([
      listMembers(deps.pool, s.workspace_id),
      connectionsById(deps.pool, s.workspace_id),
      listAuditRows(deps.pool, s.workspace_id, AUDIT_WINDOW),
      recentChanges(deps, s),
      deps.upstream.listAccounts({}, onBehalfOf(sessionPrincipal(s))).then(
        (r) => r.accounts,
        () => [] as Account[],
      ),
    ]);
    const ctx = { people: new Map(members.map((m) => [m.id.toLowerCase(), m.email])), connections };
    const events = mergeByTime(
      (changes ?? []).flatMap((c) => changeEvents(c, ctx)),
      gatewayEvents(rows, ctx),
    ).filter((e) => matches(e, filter));
    const accounts = new Map(accountList.map((a) => [a.accountId.toLowerCase(), a]));
    const shown = events.slice((number - 1) * EVENTS_PER_PAGE, number * EVENTS_PER_PAGE);
    const table =
      shown.length === 0
        ? '<p class="muted">No events match.</p>'
        : `<table id="audit"><thead><tr><th>When</th><th>What</th><th>Who</th><th>Connection</th><th>Ad account</th><th>Object</th><th>Detail</th></tr></thead><tbody>${shown
            .map((e) => eventRow(e, accounts))
            .join('')}</tbody></table>`;
    const unavailable =
      changes === undefined
        ? '<p class="error" role="status">The changes could not be loaded just now: prepares, approvals and applies are missing below.</p>'
        : '';
    return reply.type('text/html').send(
      page(
        'Audit log',
        `<section><h2>Audit log</h2><p class="muted">Times are in your time zone, with the ad account’s below. Connections are named; no credential is ever shown.</p>
        ${filtersHtml(filter, accountList, members)}${unavailable}${table}
        ${pagerHtml('/dashboard/audit', { account: filter.accountId, object: filter.object, person: filter.personId }, number, events.length, EVENTS_PER_PAGE)}</section>${localTimeScript}`,
        h.user(s),
      ),
    );
  });
}
