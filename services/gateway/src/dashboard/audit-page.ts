/**
 * The audit log: every prepare, approval, rejection and apply (with the platform's answer),
 * every token created and connection revoked, role and feature change, newest first, with who,
 * when and through which connection. Filterable by ad account, object and person; paged.
 */
import type { Account } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { isUuid } from '@adsmcp/runtime/ids';
import type { FastifyInstance } from 'fastify';
import { type GatewayDeps, onBehalfOf } from '../deps.ts';
import { connectionsById, listAuditRowsBefore, listMembers } from '../store/dashboard-store.ts';
import type { AccountPageHelpers } from './account-pages.ts';
import {
  type AuditCursor,
  type AuditEvent,
  type AuditFilter,
  type AuditSource,
  auditPage,
  changeEventOf,
  gatewayEvents,
  matches,
  RECORDED_BY_CHANGES,
} from './audit-events.ts';
import { sessionPrincipal } from './change-pages.ts';
import { esc, htmlText, page } from './html.ts';
import { accountTimeText, localTimeScript, timeHtml } from './local-time.ts';
import { queryText } from './paging.ts';

const EVENTS_PER_PAGE = 50;

/** The `before` query value: an event's time (microseconds, UTC) and key, `~` between. */
const CURSOR = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z)~([cg]:[0-9a-z:_-]{1,80})$/;

export function parseCursor(text: string): AuditCursor | undefined {
  const m = CURSOR.exec(text);
  return m?.[1] && m[2] ? { at: m[1], key: m[2] } : undefined;
}

const cursorText = (c: AuditCursor) => `${c.at}~${c.key}`;

/** Links to the newest events and to older ones, keeping the filters. */
function pager(f: AuditFilter, cursor: AuditCursor | undefined, next: AuditCursor | undefined): string {
  const href = (before?: AuditCursor) => {
    const q = new URLSearchParams(
      Object.entries({ account: f.accountId, object: f.object, person: f.personId }).filter(
        ([, v]) => v !== '',
      ),
    );
    if (before) q.set('before', cursorText(before));
    const text = q.toString();
    return `/dashboard/audit${text ? `?${text}` : ''}`;
  };
  const newest = cursor ? `<a rel="first" href="${esc(href())}">← Newest</a>` : '';
  const older = next ? `<a rel="next" href="${esc(href(next))}">Older →</a>` : '';
  const where = cursor ? 'Older events' : 'The newest events';
  return `<p class="pager muted">${where}, ${EVENTS_PER_PAGE} a page. ${newest} ${older}</p>`;
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
    <td class="object">${object}</td><td class="detail">${e.detailShown ? htmlText(e.detail) : esc(e.detail)}</td></tr>`;
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
    const cursor = parseCursor(queryText(req.query, 'before', 140));
    const [members, connections, accountList] = await Promise.all([
      listMembers(deps.pool, s.workspace_id),
      connectionsById(deps.pool, s.workspace_id),
      deps.upstream.listAccounts({}, onBehalfOf(sessionPrincipal(s))).then(
        (r) => r.accounts,
        () => [] as Account[],
      ),
    ]);
    const ctx = { people: new Map(members.map((m) => [m.id.toLowerCase(), m.email])), connections };
    const person = filter.personId.toLowerCase();
    // A person acts in the dashboard as themself, or through one of their connections.
    const actors = person
      ? [
          `user:${person}`,
          ...[...connections]
            .filter(([, c]) => c.userId.toLowerCase() === person)
            .map(([id]) => `credential:${id}`),
        ]
      : undefined;
    let changesFailed = false;
    const fromChanges: AuditSource = (after, limit) =>
      deps.changes
        .listChangeEvents(
          {
            accountId: filter.accountId,
            userId: person,
            limit,
            beforeAt: after?.at ?? '',
            beforeKey: after?.key ?? '',
          },
          onBehalfOf(sessionPrincipal(s)),
        )
        .then(
          (r) => r.events.map((e) => changeEventOf(e, ctx)),
          () => {
            changesFailed = true;
            return [];
          },
        );
    const fromGateway: AuditSource = async (after, limit) =>
      gatewayEvents(
        await listAuditRowsBefore(deps.pool, s.workspace_id, {
          beforeAt: after?.at,
          beforeKey: after?.key,
          skip: RECORDED_BY_CHANGES,
          actors,
          limit,
        }),
        ctx,
      );
    const { events: shown, next } = await auditPage(
      [fromChanges, fromGateway],
      cursor,
      EVENTS_PER_PAGE,
      (e) => matches(e, filter),
    );
    const accounts = new Map(accountList.map((a) => [a.accountId.toLowerCase(), a]));
    const table =
      shown.length === 0
        ? '<p class="muted">No events match.</p>'
        : `<table id="audit"><thead><tr><th>When</th><th>What</th><th>Who</th><th>Connection</th><th>Ad account</th><th>Object</th><th>Detail</th></tr></thead><tbody>${shown
            .map((e) => eventRow(e, accounts))
            .join('')}</tbody></table>`;
    const unavailable = changesFailed
      ? '<p class="error" role="status">The changes could not be loaded just now: prepares, approvals and applies are missing below.</p>'
      : '';
    return reply.type('text/html').send(
      page(
        'Audit log',
        `<section><h2>Audit log</h2><p class="muted">Times are in your time zone, with the ad account’s below. Connections are named; no credential is ever shown.</p>
        ${filtersHtml(filter, accountList, members)}${unavailable}${table}
        ${pager(filter, cursor, next)}</section>${localTimeScript}`,
        h.user(s),
      ),
    );
  });
}
