/**
 * The audit log: the workspace's hash-chained log in the changes service (docs/audit.md), newest
 * first, with who, when and through which connection; whether the chain verifies; filterable by
 * ad account, object and person; paged by keyset on the row's seq. An admin exports the whole log
 * as JSON Lines.
 */
import { Readable } from 'node:stream';
import { AuditService, type ListAuditEventsResponse } from '@adsmcp/proto/changes/v1/audit_pb';
import type { Account } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { isUuid } from '@adsmcp/runtime/ids';
import type { Client } from '@connectrpc/connect';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type GatewayDeps, onBehalfOf } from '../deps.ts';
import { connectionsById, listMembers } from '../store/dashboard-store.ts';
import type { AccountPageHelpers } from './account-pages.ts';
import { type AuditEvent, actorsOf, auditEventOf, exportLine } from './audit-events.ts';
import { sessionPrincipal } from './change-pages.ts';
import { esc, htmlText, page } from './html.ts';
import { accountsOrNone } from './listed.ts';
import { accountTimeText, localTimeScript, timeHtml } from './local-time.ts';
import { queryText } from './paging.ts';
import { signInFirst } from './sign-in-next.ts';

const EVENTS_PER_PAGE = 50;
/** Rows per call while exporting. */
const EXPORT_BATCH = 500;

interface Filter {
  accountId: string;
  /** Part of the event's subject or details (a change id, a connection's name); case-insensitive. */
  object: string;
  personId: string;
}

/** The `before` query value: the seq of the last event of the page before, a positive integer. */
export function parseBefore(text: string): bigint | undefined {
  return /^[1-9]\d{0,18}$/.test(text) ? BigInt(text) : undefined;
}

/** Links to the newest events and to older ones, keeping the filters. */
function pager(f: Filter, before: bigint | undefined, next: bigint): string {
  const href = (seq?: bigint) => {
    const q = new URLSearchParams(
      Object.entries({ account: f.accountId, object: f.object, person: f.personId }).filter(
        ([, v]) => v !== '',
      ),
    );
    if (seq !== undefined) q.set('before', seq.toString());
    const text = q.toString();
    return `/dashboard/audit${text ? `?${text}` : ''}`;
  };
  const newest = before ? `<a rel="first" href="${esc(href())}">← Newest</a>` : '';
  const older = next > 0n ? `<a rel="next" href="${esc(href(next))}">Older →</a>` : '';
  const where = before ? 'Older events' : 'The newest events';
  return `<p class="pager muted">${where}, ${EVENTS_PER_PAGE} a page. ${newest} ${older}</p>`;
}

function filtersHtml(
  f: Filter,
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
  return `<tr data-event="${esc(e.seq.toString())}"><td>${timeHtml(e.at)}${zone ? `<br>${zone}` : ''}<br><span class="muted" title="the row's number in the log">row ${esc(e.seq.toString())}</span></td><td class="what">${esc(e.what)}</td>
    <td class="who">${esc(e.who)}</td><td class="connection">${esc(e.connection ?? '')}</td><td class="account">${accountCell}</td>
    <td class="object">${object}</td><td class="detail">${e.detailShown ? htmlText(e.detail) : esc(e.detail)}</td></tr>`;
}

/** Whether the chain verifies, in words: the first broken row by its number, time and kind. */
function chainHtml(
  v:
    | {
        ok: boolean;
        rows: bigint;
        brokenSeq: bigint;
        brokenAt: string;
        brokenKind: string;
        reason: string;
        wholeCheckedAt: string;
        wholeRows: bigint;
      }
    | undefined,
  admin: boolean,
): string {
  if (v === undefined)
    return '<p class="error" role="status" id="chain">The chain could not be checked just now.</p>';
  // The page checks the rows appended since the last check; an older row is checked again by a
  // whole check, whose date is shown so nobody reads "verifies" as more than it is.
  const whole = v.wholeCheckedAt
    ? ` Rows 1–${esc(v.wholeRows.toString())} were last verified from the first row ${timeHtml(new Date(v.wholeCheckedAt))}; the rows after them now.`
    : ' The whole chain has not been verified from its first row yet.';
  const again = admin
    ? ' <a href="/dashboard/audit?verify=whole" id="verify-whole">Verify the whole chain now</a>'
    : '';
  if (v.ok)
    return `<p class="muted" role="status" id="chain" data-chain="ok">Chain verifies: ${esc(v.rows.toString())} rows, each row’s hash covering the row and the one before.${whole}${again}</p>`;
  const when = v.brokenAt ? `, ${v.brokenAt}` : '';
  const kind = v.brokenKind ? ` (${v.brokenKind})` : '';
  return `<p class="error" role="alert" id="chain" data-chain="broken" data-broken-seq="${esc(v.brokenSeq.toString())}">Chain broken at row ${esc(v.brokenSeq.toString())}${esc(when)}${esc(kind)}: ${esc(v.reason)}. The rows before it verify; this row or the ones after it were changed outside this service.</p>`;
}

export function registerAuditPage(app: FastifyInstance, deps: GatewayDeps, h: AccountPageHelpers): void {
  const audit = deps.clientOf(AuditService);
  app.get('/dashboard/audit', (req, reply) => auditPage(deps, h, audit, req, reply));
  // The whole log, oldest first, a row a line with its hashes, so anyone can check the chain.
  app.get('/dashboard/audit/export.jsonl', (req, reply) => exportAuditLog(h, audit, req, reply));
}

type AuditClient = Client<typeof AuditService>;

/** The filters of the page's query, each blank when absent or not of its shape. */
function filterOf(query: unknown): Filter {
  const accountId = queryText(query, 'account', 36);
  const personId = queryText(query, 'person', 36);
  return {
    accountId: isUuid(accountId) ? accountId.toLowerCase() : '',
    object: queryText(query, 'object'),
    personId: isUuid(personId) ? personId.toLowerCase() : '',
  };
}

async function auditPage(
  deps: GatewayDeps,
  h: AccountPageHelpers,
  audit: AuditClient,
  req: FastifyRequest,
  reply: FastifyReply,
) {
  const s = await h.session(req);
  if (!s) return reply.redirect(signInFirst(req), 303);
  const principal = sessionPrincipal(s);
  const as = onBehalfOf(principal);
  const filter = filterOf(req.query);
  const before = parseBefore(queryText(req.query, 'before', 20));
  const [members, connections, accountList] = await Promise.all([
    listMembers(deps.pool, s.workspace_id),
    connectionsById(deps.pool, s.workspace_id),
    accountsOrNone(deps, principal),
  ]);
  const ctx = { people: new Map(members.map((m) => [m.id.toLowerCase(), m.email])), connections };
  const [listed, verified] = await Promise.all([
    listEvents(audit, as, filter, before, connections),
    audit
      .verifyAuditChain({ whole: s.role === 'admin' && queryText(req.query, 'verify', 10) === 'whole' }, as)
      .catch(() => undefined),
  ]);
  const shown = listed === undefined ? undefined : listed.events.map((r) => auditEventOf(r, ctx));
  const accounts = new Map(accountList.map((a) => [a.accountId.toLowerCase(), a]));
  const exportLink =
    s.role === 'admin' ? ' <a href="/dashboard/audit/export.jsonl" download>Export (JSON Lines)</a>' : '';
  return reply.type('text/html').send(
    page(
      'Audit log',
      `<section><h2>Audit log</h2><p class="muted">Times are in your time zone, with the ad account’s below. Connections are named; no credential is ever shown.${exportLink}</p>
        ${chainHtml(verified, s.role === 'admin')}
        ${filtersHtml(filter, accountList, members)}${eventsTableHtml(shown, accounts)}
        ${pager(filter, before, listed?.nextSeq ?? 0n)}</section>${localTimeScript}`,
      h.user(s),
    ),
  );
}

/** One page of the log's events that the filter matches; undefined when the log cannot be read. */
function listEvents(
  audit: AuditClient,
  as: ReturnType<typeof onBehalfOf>,
  filter: Filter,
  before: bigint | undefined,
  connections: Awaited<ReturnType<typeof connectionsById>>,
) {
  return audit
    .listAuditEvents(
      {
        beforeSeq: before ?? 0n,
        limit: EVENTS_PER_PAGE,
        accountId: filter.accountId,
        actorPrefixes: filter.personId ? actorsOf(filter.personId, connections) : [],
        text: filter.object,
        // A connection is found by its name, which its events name only by id.
        textSubjects: filter.object
          ? [...connections]
              .filter(([, c]) => c.name.toLowerCase().includes(filter.object.toLowerCase()))
              .map(([id]) => id)
              .slice(0, 100)
          : [],
      },
      as,
    )
    .catch(() => undefined);
}

/** The events shown, or why there are none; `shown` is undefined when the log could not be read. */
function eventsTableHtml(
  shown: readonly AuditEvent[] | undefined,
  accounts: ReadonlyMap<string, Account>,
): string {
  if (shown === undefined)
    return '<p class="error" role="status">The audit log could not be loaded just now; try again in a moment.</p>';
  if (shown.length === 0) return '<p class="muted">No events match.</p>';
  return `<table id="audit"><thead><tr><th>When</th><th>What</th><th>Who</th><th>Connection</th><th>Ad account</th><th>Object</th><th>Detail</th></tr></thead><tbody>${shown
    .map((e) => eventRow(e, accounts))
    .join('')}</tbody></table>`;
}

async function exportAuditLog(
  h: AccountPageHelpers,
  audit: AuditClient,
  req: FastifyRequest,
  reply: FastifyReply,
) {
  const s = await h.session(req);
  if (!s) return reply.redirect(signInFirst(req), 303);
  if (s.role !== 'admin')
    return reply
      .code(403)
      .type('text/html')
      .send(
        page(
          'Forbidden',
          '<p class="error" role="alert">Only a workspace admin can export the audit log.</p>',
          h.user(s),
        ),
      );
  const as = onBehalfOf(sessionPrincipal(s));
  // The first page is read before answering, so an unreachable log is a 503, not a cut-off file.
  let page1: ListAuditEventsResponse;
  try {
    page1 = await audit.listAuditEvents({ afterSeq: 0n, limit: EXPORT_BATCH }, as);
  } catch {
    return reply
      .code(503)
      .type('text/plain')
      .send('The audit log could not be read just now; try again in a moment.\n');
  }
  return reply
    .type('application/jsonl; charset=utf-8')
    .header('content-disposition', 'attachment; filename="audit-log.jsonl"')
    .header('cache-control', 'no-store')
    .send(Readable.from(exportLines(audit, as, page1)));
}

/** The log a line per row from `page1` on, reading the next page as the last is sent. */
async function* exportLines(
  audit: AuditClient,
  as: ReturnType<typeof onBehalfOf>,
  page1: ListAuditEventsResponse,
) {
  let res = page1;
  for (;;) {
    for (const r of res.events) yield exportLine(r);
    if (res.nextSeq === 0n) return;
    res = await audit.listAuditEvents({ afterSeq: res.nextSeq, limit: EXPORT_BATCH }, as);
  }
}
