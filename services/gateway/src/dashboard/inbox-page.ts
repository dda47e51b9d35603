/**
 * The approvals inbox: what awaits the signed-in person's decision first — changes to approve,
 * changes whose apply outcome someone must settle, and optimization proposals to review —
 * grouped by ad account and, within it, by the proposal or kind of work each belongs to. A change
 * whose object moved on the platform since it was prepared is marked stale (it can no longer be
 * approved), and one that expires soon says when.
 */
import { type Change, ChangeStatus } from '@adsmcp/proto/changes/v1/changes_pb';
import { type Proposal, ProposalStatus, ReviewService } from '@adsmcp/proto/optimizer/v1/reviews_pb';
import type { Account } from '@adsmcp/proto/upstream/v1/upstream_pb';
import type { Principal } from '@adsmcp/runtime/principal';
import type { FastifyInstance } from 'fastify';
import pLimit from 'p-limit';
import { statusWord } from '../catalogue/change-view.ts';
import { type GatewayDeps, onBehalfOf } from '../deps.ts';
import type { SessionView } from '../store/session-store.ts';
import type { AccountPageHelpers } from './account-pages.ts';
import { actorHtml, loadPeople, type People } from './change-actors.ts';
import { sessionPrincipal } from './change-pages.ts';
import { emptyStateHtml, esc, page, statusBadge } from './html.ts';
import { accountsOrNone, optimizersOrNone } from './listed.ts';
import { accountTimeText, localTimeScript, relativeText, timeHtml } from './local-time.ts';
import { proposalStatusWord } from './proposal-pages.ts';
import { summaryHtml, textValueHtml } from './shown-values.ts';
import { signInFirst } from './sign-in-next.ts';

/** The most items of each kind the inbox reads; past it the page says how many more there are. */
const INBOX_LIMIT = 100;
/** Live checks of the platform at once, so that a long inbox does not queue up the proxy. */
const LIVE_CHECKS_AT_ONCE = 4;
/** A change that expires within this many hours is marked as expiring. */
const EXPIRING_HOURS = 12;

/** A person who decides (admin or editor); a viewer's inbox is empty, since nothing awaits them. */
const decides = (s: SessionView) => s.role !== 'viewer';

/** How many items await `s`, for the navigation's badge; undefined when it cannot be read now. */
export async function inboxCount(deps: GatewayDeps, s: SessionView): Promise<number | undefined> {
  if (!decides(s)) return 0;
  const principal = sessionPrincipal(s);
  try {
    const [prepared, unknown, proposals] = await Promise.all([
      deps.changes.listChanges(
        { state: ChangeStatus.PREPARED, accountId: '', limit: 1, offset: 0 },
        onBehalfOf(principal),
      ),
      deps.changes.listChanges(
        { outcomeUnknown: true, accountId: '', limit: 1, offset: 0 },
        onBehalfOf(principal),
      ),
      deps
        .clientOf(ReviewService)
        .listProposals({ state: ProposalStatus.PENDING_REVIEW, limit: 1 }, onBehalfOf(principal))
        .then(
          (r) => r.total,
          () => 0,
        ),
    ]);
    return prepared.total + unknown.total + proposals;
  } catch {
    return undefined;
  }
}

/** Why each prepared change can no longer be approved, as the changes service's live check says. */
export async function staleReasons(
  deps: GatewayDeps,
  p: Principal,
  changes: readonly Change[],
): Promise<Map<string, string>> {
  const limit = pLimit(LIVE_CHECKS_AT_ONCE);
  const found = new Map<string, string>();
  await Promise.all(
    changes.map((c) =>
      limit(async () => {
        try {
          const { live } = await deps.changes.getChange(
            { changeId: c.changeId, checkLive: true },
            onBehalfOf(p),
          );
          if (live?.stale) found.set(c.changeId, live.reason || 'the object changed on the platform');
        } catch {
          // A check that fails says nothing either way; the change's own page checks again.
        }
      }),
    ),
  );
  return found;
}

/** What the inbox reads for a person. */
interface InboxData {
  prepared: Change[];
  preparedTotal: number;
  unknown: Change[];
  proposals: Proposal[];
  proposalsTotal: number;
  /** Changes that proposals published, by change id, so a change is shown under its proposal. */
  byChange: Map<string, Proposal>;
  optimizers: Map<string, string>;
  accounts: Map<string, Account>;
  stale: Map<string, string>;
  people: People;
}

async function loadInbox(deps: GatewayDeps, s: SessionView): Promise<InboxData> {
  const principal = sessionPrincipal(s);
  const reviews = deps.clientOf(ReviewService);
  const [prepared, unknown, pending, published, optimizers, accounts] = await Promise.all([
    deps.changes.listChanges(
      { state: ChangeStatus.PREPARED, accountId: '', limit: INBOX_LIMIT, offset: 0 },
      onBehalfOf(principal),
    ),
    deps.changes.listChanges(
      { outcomeUnknown: true, accountId: '', limit: INBOX_LIMIT, offset: 0 },
      onBehalfOf(principal),
    ),
    reviews
      .listProposals({ state: ProposalStatus.PENDING_REVIEW, limit: INBOX_LIMIT }, onBehalfOf(principal))
      .catch(() => ({
        proposals: [] as Proposal[],
        total: 0,
      })),
    reviews
      .listProposals({ state: ProposalStatus.PUBLISHED, limit: INBOX_LIMIT }, onBehalfOf(principal))
      .then(
        (r) => r.proposals,
        () => [] as Proposal[],
      ),
    optimizersOrNone(deps, principal),
    accountsOrNone(deps, principal),
  ]);
  const [stale, people] = await Promise.all([
    staleReasons(deps, principal, prepared.changes),
    loadPeople(deps.pool, s.workspace_id, [...prepared.changes, ...unknown.changes]),
  ]);
  const byChange = new Map<string, Proposal>();
  for (const p of published) if (p.changeId) byChange.set(p.changeId, p);
  return {
    prepared: prepared.changes,
    preparedTotal: prepared.total,
    unknown: unknown.changes,
    proposals: pending.proposals,
    proposalsTotal: pending.total,
    byChange,
    optimizers: new Map(optimizers.map((o) => [o.optimizerId, o.name])),
    accounts: new Map(accounts.map((a) => [a.accountId.toLowerCase(), a])),
    stale,
    people,
  };
}

/** The words a tool's name stands for in a group's heading ("ads_prepare_ad_batch" → "ad batch"). */
function toolGroup(tool: string): string {
  return (
    tool
      .replace(/^ads_/, '')
      .replace(/^prepare_/, '')
      .replaceAll('_', ' ') || 'changes'
  );
}

function changeRowHtml(c: Change, d: InboxData, now: Date): string {
  const account = d.accounts.get(c.accountId.toLowerCase());
  const marks: string[] = [];
  const stale = d.stale.get(c.changeId);
  if (stale !== undefined)
    marks.push(`<span class="mark stale">Stale: can no longer be approved — ${esc(stale)}</span>`);
  if (c.outcomeUnknown)
    marks.push('<span class="mark waiting">Outcome unknown: settle whether it was applied</span>');
  if (c.expiresAt) {
    const hours = (Date.parse(c.expiresAt) - now.getTime()) / 3_600_000;
    if (hours <= EXPIRING_HOURS)
      marks.push(`<span class="mark conflict">Expires ${esc(relativeText(c.expiresAt, now))}</span>`);
  }
  const zone = account
    ? `<br><span class="muted">${esc(accountTimeText(c.preparedAt, account.timeZone))}</span>`
    : '';
  const action = stale === undefined ? (c.outcomeUnknown ? 'Settle' : 'Review') : 'Review (stale)';
  return `<tr data-change="${esc(c.changeId)}"${stale === undefined ? '' : ' data-stale'}><td class="state">${statusBadge(c.outcomeUnknown ? 'failed' : statusWord(c), c.outcomeUnknown ? 'outcome unknown' : statusWord(c))}${marks.join('')}</td>
    <td class="summary"><div class="clamp">${summaryHtml(c.summary)}</div></td><td class="when">${timeHtml(c.preparedAt)}${zone}</td>
    <td>${actorHtml(c.preparedBy, d.people)}</td><td><a href="/dashboard/changes/${esc(c.changeId)}">${action}</a></td></tr>`;
}

function proposalRowHtml(p: Proposal, d: InboxData, now: Date): string {
  const account = d.accounts.get(p.accountId.toLowerCase());
  const expiring =
    p.reviewExpiresAt && (Date.parse(p.reviewExpiresAt) - now.getTime()) / 3_600_000 <= EXPIRING_HOURS
      ? `<span class="mark conflict">Review closes ${esc(relativeText(p.reviewExpiresAt, now))}</span>`
      : '';
  const zone = account
    ? `<br><span class="muted">${esc(accountTimeText(p.createdAt, account.timeZone))}</span>`
    : '';
  return `<tr data-proposal="${esc(p.proposalId)}"><td class="state">${statusBadge(proposalStatusWord(p))}${expiring}</td>
    <td class="name">${textValueHtml(p.variant?.name)}</td><td>${esc(d.optimizers.get(p.optimizerId) ?? 'an optimizer no longer listed')}</td>
    <td class="when">${timeHtml(p.createdAt)}${zone}</td><td><a href="/dashboard/proposals/${esc(p.proposalId)}">Review</a></td></tr>`;
}

const CHANGE_HEAD =
  '<thead><tr><th>Status</th><th>Change</th><th>Prepared</th><th>Prepared by</th><th><span class="sr-only">Open</span></th></tr></thead>';
const PROPOSAL_HEAD =
  '<thead><tr><th>Status</th><th>Proposal</th><th>Optimizer</th><th>Created</th><th><span class="sr-only">Open</span></th></tr></thead>';

export function inboxHtml(d: InboxData, now = new Date()): string {
  const changes = [
    ...d.unknown,
    ...d.prepared.filter((c) => !d.unknown.some((u) => u.changeId === c.changeId)),
  ];
  const accountIds = [
    ...new Set([
      ...changes.map((c) => c.accountId.toLowerCase()),
      ...d.proposals.map((p) => p.accountId.toLowerCase()),
    ]),
  ];
  if (accountIds.length === 0)
    return `${emptyStateHtml('changes or proposals await your decision', [], '')}<p><a href="/dashboard/changes">All changes</a> · <a href="/dashboard/proposals">All proposals</a></p>`;
  const sections = accountIds
    .map((id) => {
      const account = d.accounts.get(id);
      const mine = changes.filter((c) => c.accountId.toLowerCase() === id);
      const proposals = d.proposals.filter((p) => p.accountId.toLowerCase() === id);
      // Changes a proposal published go under it; the rest under the kind of work they are.
      const groups = new Map<string, Change[]>();
      for (const c of mine) {
        const from = d.byChange.get(c.changeId);
        const key = from ? `From proposal “${from.variant?.name ?? from.proposalId}”` : toolGroup(c.tool);
        groups.set(key, [...(groups.get(key) ?? []), c]);
      }
      const staleCount = mine.filter((c) => d.stale.has(c.changeId)).length;
      const heading = `${esc(account?.name ?? 'An ad account no longer connected')}${account ? ` <span class="muted">(${esc(account.currency)}, ${esc(account.timeZone)})</span>` : ''}`;
      const changeGroups = [...groups]
        .map(
          ([name, list]) =>
            `<div class="group"><h4>${esc(name)} <span class="muted">(${list.length})</span></h4><table class="inbox-changes">${CHANGE_HEAD}<tbody>${list
              .map((c) => changeRowHtml(c, d, now))
              .join('')}</tbody></table></div>`,
        )
        .join('');
      const proposalGroup =
        proposals.length === 0
          ? ''
          : `<div class="group"><h4>Optimization proposals to review <span class="muted">(${proposals.length})</span></h4><table class="inbox-proposals">${PROPOSAL_HEAD}<tbody>${proposals
              .map((p) => proposalRowHtml(p, d, now))
              .join('')}</tbody></table></div>`;
      return `<section data-inbox-account="${esc(id)}" aria-labelledby="acc-${esc(id)}"><h3 id="acc-${esc(id)}">${heading}</h3>
        <p class="muted">${mine.length} change${mine.length === 1 ? '' : 's'}${staleCount ? `, ${staleCount} stale` : ''}; ${proposals.length} proposal${proposals.length === 1 ? '' : 's'}.</p>${changeGroups}${proposalGroup}</section>`;
    })
    .join('');
  const more =
    d.preparedTotal > d.prepared.length || d.proposalsTotal > d.proposals.length
      ? `<p class="notice">The inbox shows the newest ${INBOX_LIMIT} of each kind: <a href="/dashboard/changes?status=prepared">all ${d.preparedTotal} prepared changes</a>, <a href="/dashboard/proposals?status=pending_review">all ${d.proposalsTotal} proposals to review</a>.</p>`
      : '';
  return `${more}${sections}`;
}

export function registerInboxPage(app: FastifyInstance, deps: GatewayDeps, h: AccountPageHelpers): void {
  app.get('/dashboard/inbox', async (req, reply) => {
    const s = await h.session(req);
    if (!s) return reply.redirect(signInFirst(req), 303);
    const intro = decides(s)
      ? '<p class="muted">What awaits your decision, by ad account. Times are in your time zone, with the account’s below.</p>'
      : '<p class="notice">Your role (viewer) reads changes and proposals but does not decide on them, so nothing awaits you here. <a href="/dashboard/changes">All changes</a> · <a href="/dashboard/proposals">All proposals</a></p>';
    let body = '';
    if (decides(s)) {
      try {
        body = inboxHtml(await loadInbox(deps, s));
      } catch {
        body =
          '<p class="error" role="alert">The inbox could not be loaded just now; reload the page to try again.</p>';
      }
    }
    return reply
      .type('text/html')
      .send(
        page(
          'Inbox',
          `<section aria-labelledby="inbox-title"><h2 id="inbox-title">Inbox</h2>${intro}</section>${body}${localTimeScript}`,
          h.user(s),
        ),
      );
  });
}
