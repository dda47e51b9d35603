/**
 * All the workspace's changes, filterable by status and ad account (by name) and paged, each
 * marked when it conflicts with another pending change to the same object.
 */
import { ChangeStatus, ChangeStatusSchema } from '@adsmcp/proto/changes/v1/changes_pb';
import type { Account } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { enumValue, enumWords } from '@adsmcp/runtime/enum-words';
import { isUuid } from '@adsmcp/runtime/ids';
import { LIST_OFFSET_MAX } from '@adsmcp/runtime/paging';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { statusWord } from '../catalogue/change-view.ts';
import { type GatewayDeps, onBehalfOf } from '../deps.ts';
import type { AccountPageHelpers } from './account-pages.ts';
import { loadPeople } from './change-actors.ts';
import { accountNames, changeListHtml, pendingChanges, sessionPrincipal } from './change-pages.ts';
import { emptyStateHtml, esc, page } from './html.ts';
import { staleReasons } from './inbox-page.ts';
import { accountsOrNone } from './listed.ts';
import { localTimeScript } from './local-time.ts';
import { PAGE_SIZE, pageNumber, pagerHtml, queryText } from './paging.ts';
import { signInFirst } from './sign-in-next.ts';

const STATUSES = enumWords(ChangeStatusSchema);
/** The filter for failed changes whose outcome is unknown (sent, no answer recorded, not settled). */
const OUTCOME_UNKNOWN = 'outcome_unknown';
/**
 * The last page the list shows: the one starting at the changes service's offset bound, as the
 * tools stop there. Past it the service would skip that many index entries on every view.
 */
export const LAST_PAGE = Math.floor(LIST_OFFSET_MAX / PAGE_SIZE) + 1;

function filtersHtml(status: string, accountId: string, accounts: readonly Account[]): string {
  const option = (value: string, label: string, chosen: string) =>
    `<option value="${esc(value)}"${value === chosen ? ' selected' : ''}>${esc(label)}</option>`;
  return `<form class="filters" method="get" action="/dashboard/changes">
    <label>Status <select name="status">${option('', 'any status', status)}${STATUSES.map((st) => option(st, st, status)).join('')}${option(OUTCOME_UNKNOWN, 'outcome unknown (may or may not have been applied)', status)}</select></label>
    <label>Ad account <select name="account">${option('', 'any account', accountId)}${accounts.map((a) => option(a.accountId, a.name, accountId)).join('')}</select></label>
    <button type="submit">Filter</button></form>`;
}

/**
 * Marks each prepared change whose object moved on the platform since it was prepared: it can no
 * longer be approved, and the list says so beside its status rather than leave it looking ready.
 */
function markStale(html: string, stale: ReadonlyMap<string, string>): string {
  let marked = html;
  for (const [id, reason] of stale) {
    marked = marked.replace(
      `<tr data-change="${esc(id)}"><td class="state">prepared`,
      // A function: a `$` in the reason is text, not a replacement pattern.
      () =>
        `<tr data-change="${esc(id)}" data-stale><td class="state">prepared<span class="mark stale">Stale: can no longer be approved — ${esc(reason)}</span>`,
    );
  }
  return marked;
}

/** The pager, with no link to a page past the last one the list shows. */
function pager(number: number, total: number, filters: Record<string, string>): string {
  const html = pagerHtml('/dashboard/changes', filters, number, total);
  return number >= LAST_PAGE ? html.replace(/<a rel="next"[^>]*>[^<]*<\/a>/, '') : html;
}

export function registerChangesListPage(
  app: FastifyInstance,
  deps: GatewayDeps,
  h: AccountPageHelpers,
): void {
  app.get('/dashboard/changes', (req, reply) => changesListPage(deps, h, req, reply));
}

/** The status filter of the query: a status, the outcome-unknown filter, or blank for any. */
function statusFilter(query: unknown): string {
  const statusText = queryText(query, 'status');
  return STATUSES.includes(statusText) || statusText === OUTCOME_UNKNOWN ? statusText : '';
}

async function changesListPage(
  deps: GatewayDeps,
  h: AccountPageHelpers,
  req: FastifyRequest,
  reply: FastifyReply,
) {
  const s = await h.session(req);
  if (!s) return reply.redirect(signInFirst(req), 303);
  const principal = sessionPrincipal(s);
  const status = statusFilter(req.query);
  const outcomeUnknown = status === OUTCOME_UNKNOWN;
  const accountText = queryText(req.query, 'account', 36);
  const accountId = isUuid(accountText) ? accountText.toLowerCase() : '';
  const number = pageNumber(req.query);
  if (number > LAST_PAGE) {
    const accounts = await accountsOrNone(deps, principal);
    return reply
      .code(400)
      .type('text/html')
      .send(pastLastPageHtml(status, accountId, accounts, h.user(s)));
  }
  const [{ changes, total }, pending, accounts] = await Promise.all([
    deps.changes.listChanges(
      {
        state:
          outcomeUnknown || status === '' ? ChangeStatus.UNSPECIFIED : enumValue(ChangeStatusSchema, status),
        outcomeUnknown,
        accountId,
        limit: PAGE_SIZE,
        offset: (number - 1) * PAGE_SIZE,
      },
      onBehalfOf(principal),
    ),
    pendingChanges(deps, principal),
    accountsOrNone(deps, principal),
  ]);
  const [people, stale] = await Promise.all([
    loadPeople(deps.pool, s.workspace_id, changes),
    staleReasons(
      deps,
      principal,
      changes.filter((c) => statusWord(c) === 'prepared'),
    ),
  ]);
  const accountName = accounts.find((a) => a.accountId.toLowerCase() === accountId)?.name ?? accountId;
  const list =
    changes.length === 0
      ? emptyStateHtml(
          'changes',
          [
            ['status', status === OUTCOME_UNKNOWN ? 'outcome unknown' : status],
            ['ad account', accountId ? accountName : ''],
          ],
          '/dashboard/changes',
        )
      : markStale(changeListHtml(changes, people, pending, accountNames(accounts)), stale);
  return reply.type('text/html').send(
    page(
      'Changes',
      `<p><a href="/dashboard">← Dashboard</a></p><section><h2>Changes</h2>${filtersHtml(status, accountId, accounts)}
        ${list}${pager(number, total, { status, account: accountId })}</section>${localTimeScript}`,
      h.user(s),
    ),
  );
}

/** The page asked for is past the last one the list shows: why, and the filters to narrow it. */
function pastLastPageHtml(
  status: string,
  accountId: string,
  accounts: readonly Account[],
  user: Parameters<typeof page>[2],
): string {
  return page(
    'Changes',
    `<p><a href="/dashboard/changes">← Changes</a></p><section><h2>Changes</h2>${filtersHtml(status, accountId, accounts)}
            <p class="error" role="alert">page must be at most ${esc(LAST_PAGE)}: the list pages through its newest ${esc(
              LIST_OFFSET_MAX + PAGE_SIZE,
            )} changes; filter by status or ad account to reach older ones.</p></section>`,
    user,
  );
}
