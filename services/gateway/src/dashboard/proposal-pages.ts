/**
 * The dashboard's review of optimization proposals: each variant beside its base ad as the ad
 * platform has it now, the evidence from the run's snapshot, the rationale and hypothesis, and
 * Approve / Reject. Approval to publish is recorded only here, for the signed-in person and the
 * revision they were shown; the optimizer then publishes it as a change.
 */

import { OptimizerService } from '@adsmcp/proto/optimizer/v1/optimizer_pb';
import type { AdPerformance, Proposal } from '@adsmcp/proto/optimizer/v1/reviews_pb';
import { ProposalStatusSchema, ReviewService } from '@adsmcp/proto/optimizer/v1/reviews_pb';
import type { Account } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { enumValue, enumWord, enumWords } from '@adsmcp/runtime/enum-words';
import { isUuid } from '@adsmcp/runtime/ids';
import type { Principal } from '@adsmcp/runtime/principal';
import { Code, ConnectError } from '@connectrpc/connect';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type GatewayDeps, onBehalfOf } from '../deps.ts';
import { insertAudit, listUsersByIds } from '../store/identity-store.ts';
import type { SessionView } from '../store/session-store.ts';
import { actorHtml, type People, parseActor } from './change-actors.ts';
import { sessionPrincipal } from './change-pages.ts';
import { decisionRefusal, wholeNumberField } from './form-body.ts';
import { emptyStateHtml, esc, page, statusBadge } from './html.ts';
import { accountsOrNone, optimizersOrNone } from './listed.ts';
import { accountTimeText, localTimeScript, timeHtml } from './local-time.ts';
import { PAGE_SIZE, pageNumber, pagerHtml, queryText } from './paging.ts';
import { moneyHtml, spaceLegendHtml, textValueHtml } from './shown-values.ts';
import { signInFirst } from './sign-in-next.ts';

/** What the dashboard's routes share with these pages: the session and the checked form post. */
export interface ProposalPageHelpers {
  session(req: FastifyRequest): Promise<SessionView | undefined>;
  /** A POST from a signed-in person on our own page with the session's CSRF token, or undefined after a 403. */
  checkedPost(req: FastifyRequest, reply: FastifyReply): Promise<SessionView | undefined>;
}

const user = (s: SessionView) => ({ email: s.email, workspace: s.workspace_name, csrf: s.csrf_token });

/** The base ad as the platform has it now: its creative, or why it could not be read. */
interface LiveAd {
  name?: string;
  status?: string;
  title?: string;
  body?: string;
  targetUrl?: string;
  /** The platform file the ad's creative shows, when it has one. */
  fileId?: string;
  problem?: string;
}

async function liveAd(deps: GatewayDeps, principal: Principal, p: Proposal): Promise<LiveAd> {
  const adId = p.variant?.baseAdId ?? '';
  try {
    const res = await deps.upstream.call(
      {
        accountId: p.accountId,
        method: 'GET',
        path: `/ads/${encodeURIComponent(adId)}`,
        query: [],
        bodyJson: '',
        idempotencyKey: '',
      },
      onBehalfOf(principal),
    );
    if (res.status === 404) return { problem: 'The base ad is gone from the ad account.' };
    if (res.status < 200 || res.status > 299)
      return { problem: `The ad platform answered HTTP ${res.status}.` };
    const ad = JSON.parse(res.bodyJson) as Record<string, unknown>;
    const creative = (typeof ad.creative === 'object' && ad.creative !== null ? ad.creative : {}) as Record<
      string,
      unknown
    >;
    return {
      name: String(ad.name ?? ''),
      status: String(ad.status ?? ''),
      title: String(creative.title ?? ''),
      body: String(creative.body ?? ''),
      targetUrl: String(creative.target_url ?? ''),
      ...(typeof creative.file_id === 'string' && { fileId: creative.file_id }),
    };
  } catch {
    return { problem: 'The base ad could not be read from the ad platform just now.' };
  }
}

function evidenceHtml(e: AdPerformance | undefined, currency?: string): string {
  if (e === undefined) return '<p class="muted">No evidence was recorded for the base ad.</p>';
  // Amounts in the account's currency, the micros beside them: the evidence is what a decision rests on.
  const money = (micros: bigint | number | undefined) =>
    micros === undefined ? '—' : moneyHtml(micros, currency, { exact: true });
  const count = (n: bigint | number) => esc(Number(n).toLocaleString('en-US'));
  const rows: [string, string][] = [
    ['Impressions', count(e.impressions)],
    ['Clicks', count(e.clicks)],
    ['Conversions', count(e.conversions)],
    ['Spend', money(e.spendMicros)],
    ['CTR', e.ctr === undefined ? '—' : esc(`${(e.ctr * 100).toFixed(2)}%`)],
    ['CPC', money(e.cpcMicros)],
    ['CPA', money(e.cpaMicros)],
    ['Enough evidence', esc(e.meetsThresholds ? 'yes' : `no: ${e.belowThresholds.join('; ')}`)],
  ];
  return `<table data-evidence><tbody>${rows.map(([k, v]) => `<tr><th>${esc(k)}</th><td>${v}</td></tr>`).join('')}</tbody></table>`;
}

function comparisonHtml(p: Proposal, live: LiveAd, imagePath: string | undefined): string {
  const v = p.variant;
  const row = (label: string, now: string | undefined, proposed: string | undefined) =>
    `<tr><th>${esc(label)}</th><td data-live>${live.problem === undefined ? textValueHtml(now) : ''}</td><td data-proposed>${textValueHtml(proposed)}</td></tr>`;
  // The proposed image through a fresh delivery link (none shows for an unknown or archived asset).
  const image =
    v?.assetId === undefined
      ? ''
      : `<tr><th>Image</th><td data-live>${live.problem === undefined ? (live.fileId ? `file <code>${esc(live.fileId)}</code>` : 'none') : ''}</td><td data-proposed>${
          imagePath === undefined
            ? ''
            : `<img data-asset="${esc(v.assetId)}" src="${esc(imagePath)}" alt="Campaign asset ${esc(v.assetId)}" style="max-width:100%;max-height:320px"><br>`
        }<span class="muted">Campaign asset <code>${esc(v.assetId)}</code>, uploaded to the ad platform only when the published change is applied; no image above means the asset is unknown or archived, and publishing would fail</span></td></tr>`;
  const table = `<table data-comparison><thead><tr><th></th><th>Base ad now (${esc(v?.baseAdId)})</th><th>Proposed</th></tr></thead><tbody>
    ${row('Title', live.title, v?.title)}${row('Body', live.body, v?.body)}${row('Target URL', live.targetUrl, v?.targetUrl)}${image}
    </tbody></table>`;
  const base =
    live.problem === undefined
      ? `<p class="muted">Base ad: ${textValueHtml(live.name)} (${esc(live.status)})</p>`
      : `<p class="error">${esc(live.problem)}</p>`;
  return `${table}${base}${spaceLegendHtml(table + base)}`;
}

function decisionFormsHtml(p: Proposal, csrf: string, when: (at: string | undefined) => string): string {
  const hidden = `<input type="hidden" name="csrf" value="${esc(csrf)}"><input type="hidden" name="expected_revision" value="${esc(p.revision)}">`;
  return `<section><h2>Decision</h2>
    <p>Approving publishes this variant to the base ad as a change, within publish_hours${p.reviewExpiresAt ? `; approve before ${when(p.reviewExpiresAt)}` : ''}.</p>
    <form method="post" action="/dashboard/proposals/${esc(p.proposalId)}/approve">${hidden}<button id="approve" type="submit">Approve</button></form>
    <form method="post" action="/dashboard/proposals/${esc(p.proposalId)}/reject">${hidden}
      <label for="note">Why reject</label><input id="note" name="note" required>
      <p><button id="reject" class="danger" type="submit">Reject</button></p></form></section>`;
}

/** What a proposal's page shows beside the proposal: the base ad now, its account, the image. */
interface ProposalContext {
  live: LiveAd;
  account?: { name: string; timeZone: string; currency?: string };
  /** The optimizer's name, when the optimizer service lists it. */
  optimizerName?: string;
  /** Emails of the people who reviewed or approved it, by user id. */
  people?: People;
  /** The path of a fresh delivery link to the variant's image, when it names one. */
  imagePath?: string;
}

async function contextOf(deps: GatewayDeps, principal: Principal, p: Proposal): Promise<ProposalContext> {
  const ids = [p.reviewedBy, p.approvedBy].flatMap((by) => parseActor(by ?? '').userId ?? []);
  const [live, account, optimizerName, users] = await Promise.all([
    liveAd(deps, principal, p),
    accountOf(deps, principal, p.accountId),
    deps
      .clientOf(OptimizerService)
      .getOptimizer({ optimizerId: p.optimizerId }, onBehalfOf(principal))
      .then(
        (r) => r.optimizer?.name,
        () => undefined,
      ),
    listUsersByIds(deps.pool, principal.workspaceId, ids),
  ]);
  const assetId = p.variant?.assetId;
  const imagePath =
    assetId === undefined || deps.assetLinks === undefined
      ? undefined
      : deps.assetLinks.link(principal.workspaceId, assetId).path;
  const people: People = new Map(users.map((u) => [u.id.toLowerCase(), u.email]));
  return { live, account, imagePath, optimizerName, people };
}

export function proposalDetailHtml(
  p: Proposal,
  { live, account, imagePath, optimizerName, people = new Map() }: ProposalContext,
  csrf: string,
  canDecide: boolean,
  message?: string,
): string {
  const v = p.variant;
  // Times in the viewer's zone (by the page's script) and in the account's, whose day it runs on.
  const when = (at: string | undefined) =>
    at
      ? `${timeHtml(at)}${account ? ` <span class="muted">(${esc(accountTimeText(at, account.timeZone))})</span>` : ''}`
      : '';
  const facts: [string, string | undefined][] = [
    ['Status', statusBadge(proposalStatusWord(p), proposalStatusWord(p))],
    ['Ad account', esc(account?.name ?? 'an account not listed')],
    ['Revision', esc(String(p.revision))],
    ['Optimizer', esc(optimizerName ?? 'an optimizer no longer listed')],
    ['Run', p.runId ? `<a href="/dashboard/proposals?run=${esc(p.runId)}">${esc(p.runId)}</a>` : ''],
    ['Created', when(p.createdAt)],
    ['Review until', when(p.reviewExpiresAt)],
    ['Review note', esc(p.reviewNote)],
    ['Reviewed by', actorHtml(p.reviewedBy ?? '', people)],
    ['Approved by', actorHtml(p.approvedBy ?? '', people)],
    ['Approved at', when(p.approvedAt)],
    ['Publish by', when(p.publishBy)],
    ['Published at', when(p.publishedAt)],
    ['Cancelled', esc(p.cancelReason)],
  ];
  const change =
    p.changeId === undefined
      ? '<p class="muted">No change has been made yet.</p>'
      : `<p data-change-link>Change <a href="/dashboard/changes/${esc(p.changeId)}">${esc(p.changeId)}</a>: <span data-change-status>${esc(p.changeStatus ?? 'unknown')}</span>${p.changeError ? ` — <span class="error">${esc(p.changeError)}</span>` : ''}</p>`;
  return `<p><a href="/dashboard/proposals">← Proposals</a></p>
    ${message ? `<p class="notice" role="alert">${esc(message)}</p>` : ''}
    <section><h2 data-proposal-name>${textValueHtml(v?.name)}</h2>${spaceLegendHtml(textValueHtml(v?.name))}
    <table><tbody>${facts
      .filter(([, value]) => value !== undefined && value !== '')
      .map(
        ([k, value]) => `<tr><th>${esc(k)}</th><td${k === 'Status' ? ' id="status"' : ''}>${value}</td></tr>`,
      )
      .join('')}</tbody></table></section>
    <section><h2>Variant beside its base ad</h2>${comparisonHtml(p, live, imagePath)}</section>
    <section><h2>Rationale</h2><pre>${esc(v?.rationale)}</pre><h2>Hypothesis</h2><pre>${esc(v?.hypothesis)}</pre></section>
    <section><h2>Evidence (the run's snapshot)</h2>${evidenceHtml(p.evidence, account?.currency)}</section>
    <section><h2>Changes it produced</h2>${change}</section>
    ${canDecide && proposalStatusWord(p) === 'pending_review' ? decisionFormsHtml(p, csrf, when) : ''}`;
}

/** The statuses the list filters by, from the proto: one added there is offered with no list to update. */
const PROPOSAL_STATUSES = enumWords(ProposalStatusSchema);

/** A proposal's status word (enum-words.ts); a proposal always has one, so its absence is the optimizer's fault. */
export function proposalStatusWord(p: Proposal): string {
  const word = enumWord(ProposalStatusSchema, p.state);
  if (word === null) throw new Error(`the optimizer returned proposal ${p.proposalId} without a status`);
  return word;
}

/** The proposals list's filters, as read from the query string (invalid values are dropped). */
interface ProposalFilters {
  status: string;
  optimizer: string;
  account: string;
  run: string;
  /** Days (YYYY-MM-DD, UTC): created on or after `from`, on or before `to`. */
  from: string;
  to: string;
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;
/**
 * A calendar day whose next day has a four-digit year: `Date.parse` takes 2024-02-30 as March 1,
 * which the optimizer's database refuses, and 9999-12-31's next day is in year 10000.
 */
function validDay(text: string): boolean {
  if (!DAY.test(text) || text > '9999-12-30') return false;
  const at = Date.parse(`${text}T00:00:00Z`);
  return !Number.isNaN(at) && new Date(at).toISOString().startsWith(text);
}

function readProposalFilters(query: unknown): ProposalFilters {
  const uuid = (name: string) => {
    const text = queryText(query, name, 36);
    return isUuid(text) ? text.toLowerCase() : '';
  };
  const day = (name: string) => {
    const text = queryText(query, name, 10);
    return validDay(text) ? text : '';
  };
  const status = queryText(query, 'status');
  return {
    status: PROPOSAL_STATUSES.includes(status) ? status : '',
    optimizer: uuid('optimizer'),
    account: uuid('account'),
    run: uuid('run'),
    from: day('from'),
    to: day('to'),
  };
}

/** The day after `day` (YYYY-MM-DD), at midnight UTC: the end of a range that includes `day`. */
function dayAfter(day: string): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString();
}

/** The proposals list's filters: status, optimizer, ad account (by name), run and creation days. */
function proposalFiltersHtml(
  f: ProposalFilters,
  optimizers: readonly OptimizerChoice[],
  accounts: readonly Account[],
): string {
  const option = (value: string, label: string, chosen: string) =>
    `<option value="${esc(value)}"${value === chosen ? ' selected' : ''}>${esc(label)}</option>`;
  return `<form class="filters" method="get" action="/dashboard/proposals">
    <label>Status <select name="status">${option('', 'any status', f.status)}${PROPOSAL_STATUSES.map((st) => option(st, st.replace('_', ' '), f.status)).join('')}</select></label>
    <label>Ad account <select name="account">${option('', 'any account', f.account)}${accounts.map((a) => option(a.accountId.toLowerCase(), a.name, f.account)).join('')}</select></label>
    <label>Optimizer <select name="optimizer">${option('', 'any optimizer', f.optimizer)}${optimizers.map((o) => option(o.id, o.label, f.optimizer)).join('')}</select></label>
    <label>Run <input name="run" value="${esc(f.run)}" maxlength="36" size="12" placeholder="run id"></label>
    <label>Created from <input type="date" name="from" value="${esc(f.from)}"></label>
    <label>to <input type="date" name="to" value="${esc(f.to)}"> (UTC days)</label>
    <button type="submit">Filter</button></form>`;
}

/** An optimizer as the filter offers it: its name and its ad account's. */
interface OptimizerChoice {
  id: string;
  label: string;
}

export function proposalListHtml(
  proposals: readonly Proposal[],
  accounts: ReadonlyMap<string, Account> = new Map(),
  empty = '<p class="empty" role="status">No proposals match.</p>',
): string {
  if (proposals.length === 0) return empty;
  const row = (p: Proposal) => {
    const account = accounts.get(p.accountId.toLowerCase());
    const zone = account
      ? `<br><span class="muted" title="the account's time zone">${esc(accountTimeText(p.createdAt, account.timeZone))}</span>`
      : '';
    return `<tr data-proposal="${esc(p.proposalId)}"><td class="state">${statusBadge(proposalStatusWord(p), proposalStatusWord(p))}</td><td class="name">${textValueHtml(p.variant?.name)}</td>
      <td class="account">${esc(account?.name ?? 'an account no longer connected')}</td><td class="ad"><code>${esc(p.variant?.baseAdId)}</code></td>
      <td class="run"><a href="/dashboard/proposals?run=${esc(p.runId)}" title="${esc(p.runId)}">this run’s</a></td>
      <td class="created">${timeHtml(p.createdAt)}${zone}</td><td><a href="/dashboard/proposals/${esc(p.proposalId)}">Review</a></td></tr>`;
  };
  const table = `<table id="proposals"><thead><tr><th>Status</th><th>Proposal</th><th>Ad account</th><th>Base ad</th><th>Run</th><th>Created</th><th></th></tr></thead><tbody>${proposals
    .map(row)
    .join('')}</tbody></table>`;
  return `${table}${spaceLegendHtml(table)}`;
}

/** What an empty proposals list says: which filters are set, in words, and how to clear them. */
function proposalsEmptyHtml(
  f: ProposalFilters,
  optimizers: readonly OptimizerChoice[],
  accounts: ReadonlyMap<string, Account>,
): string {
  return emptyStateHtml(
    'proposals',
    [
      ['status', f.status.replace('_', ' ')],
      ['ad account', f.account ? (accounts.get(f.account)?.name ?? f.account) : ''],
      ['optimizer', f.optimizer ? (optimizers.find((o) => o.id === f.optimizer)?.label ?? f.optimizer) : ''],
      ['run', f.run],
      ['created from', f.from],
      ['created to', f.to],
    ],
    '/dashboard/proposals',
  );
}

/** The proposal's ad account, by name and zone, when the upstream proxy lists it. */
async function accountOf(deps: GatewayDeps, principal: Principal, accountId: string) {
  const accounts = await accountsOrNone(deps, principal);
  return accounts.find((a) => a.accountId.toLowerCase() === accountId.toLowerCase());
}

async function loadProposal(
  deps: GatewayDeps,
  principal: Principal,
  id: string,
): Promise<Proposal | undefined> {
  if (!isUuid(id)) return undefined;
  try {
    const { proposal } = await deps
      .clientOf(ReviewService)
      .getProposal({ proposalId: id }, onBehalfOf(principal));
    return proposal;
  } catch (err) {
    if (ConnectError.from(err).code === Code.NotFound) return undefined;
    throw err;
  }
}

type ProposalRequest = FastifyRequest<{ Params: { id: string } }>;

function notFound(reply: FastifyReply, s: SessionView) {
  return reply
    .code(404)
    .type('text/html')
    .send(page('Not found', '<p>No such proposal in this workspace.</p>', user(s)));
}

/** The proposals of one list page, the optimizers and the ad accounts its filters offer. */
async function loadProposalList(deps: GatewayDeps, principal: Principal, f: ProposalFilters, number: number) {
  return Promise.all([
    deps
      .clientOf(ReviewService)
      .listProposals(
        {
          state: f.status ? enumValue(ProposalStatusSchema, f.status) : undefined,
          optimizerId: f.optimizer || undefined,
          accountId: f.account || undefined,
          runId: f.run || undefined,
          createdAfter: f.from ? `${f.from}T00:00:00Z` : undefined,
          createdBefore: f.to ? dayAfter(f.to) : undefined,
          limit: PAGE_SIZE,
          offset: (number - 1) * PAGE_SIZE,
        },
        onBehalfOf(principal),
      )
      .catch(() => undefined),
    optimizersOrNone(deps, principal),
    accountsOrNone(deps, principal),
  ]);
}

/** GET /dashboard/proposals: the filtered, paged list. */
async function proposalListPage(
  deps: GatewayDeps,
  h: ProposalPageHelpers,
  req: FastifyRequest,
  reply: FastifyReply,
) {
  const s = await h.session(req);
  if (!s) return reply.redirect(signInFirst(req), 303);
  const f = readProposalFilters(req.query);
  const number = pageNumber(req.query);
  const [listed, optimizers, accountList] = await loadProposalList(deps, sessionPrincipal(s), f, number);
  const accounts = new Map(accountList.map((a) => [a.accountId.toLowerCase(), a]));
  const choices = optimizers.map((o) => ({
    id: o.optimizerId,
    label: `${o.name} — ${accounts.get(o.accountId.toLowerCase())?.name ?? 'an account no longer connected'}`,
  }));
  const body =
    listed === undefined
      ? '<p class="error">Proposals could not be loaded just now.</p>'
      : `${proposalListHtml(listed.proposals, accounts, proposalsEmptyHtml(f, choices, accounts))}${pagerHtml('/dashboard/proposals', { ...f }, number, listed.total)}`;
  return reply.type('text/html').send(
    page(
      'Optimization proposals',
      `<p><a href="/dashboard">← Dashboard</a></p><section><h2>Optimization proposals</h2><p class="muted">Times are in your time zone, with the ad account’s below.</p>
          ${proposalFiltersHtml(f, choices, accountList)}${body}</section>${localTimeScript}`,
      user(s),
    ),
  );
}

/** GET /dashboard/proposals/:id: one proposal with its evidence and, for a reviewer, its decision forms. */
async function proposalPage(
  deps: GatewayDeps,
  h: ProposalPageHelpers,
  req: ProposalRequest,
  reply: FastifyReply,
) {
  const s = await h.session(req);
  if (!s) return reply.redirect(signInFirst(req), 303);
  const principal = sessionPrincipal(s);
  const p = await loadProposal(deps, principal, req.params.id);
  if (!p) return notFound(reply, s);
  const context = await contextOf(deps, principal, p);
  return reply
    .type('text/html')
    .send(
      page(
        'Review proposal',
        `${proposalDetailHtml(p, context, s.csrf_token, s.role !== 'viewer')}${localTimeScript}`,
        user(s),
      ),
    );
}

/** The proposal page again with why the decision was not taken, answered with `status`. */
async function decisionRefusedPage(
  deps: GatewayDeps,
  s: SessionView,
  p: Proposal,
  reply: FastifyReply,
  status: number,
  message: string,
) {
  const context = await contextOf(deps, sessionPrincipal(s), p);
  return reply
    .code(status)
    .type('text/html')
    .send(
      page(
        'Review proposal',
        proposalDetailHtml(p, context, s.csrf_token, s.role !== 'viewer', message),
        user(s),
      ),
    );
}

/** Asks the optimizer to approve or reject the proposal at the revision the person reviewed. */
async function sendDecision(
  deps: GatewayDeps,
  principal: Principal,
  decision: 'approve' | 'reject',
  p: Proposal,
  expectedRevision: number,
  note: string,
): Promise<void> {
  const reviews = deps.clientOf(ReviewService);
  if (decision === 'approve') {
    await reviews.approveProposal({ proposalId: p.proposalId, expectedRevision }, onBehalfOf(principal));
  } else {
    await reviews.reviewProposal(
      { proposalId: p.proposalId, expectedRevision, decision: 'reject', note },
      onBehalfOf(principal),
    );
  }
}

/** POST /dashboard/proposals/:id/approve or /reject: the decision, recorded in the audit log. */
async function decideProposal(
  deps: GatewayDeps,
  h: ProposalPageHelpers,
  decision: 'approve' | 'reject',
  req: ProposalRequest,
  reply: FastifyReply,
) {
  const s = await h.checkedPost(req, reply);
  if (!s) return reply;
  const principal = sessionPrincipal(s);
  const p = await loadProposal(deps, principal, req.params.id);
  if (!p) return notFound(reply, s);
  const body = (req.body ?? {}) as Record<string, string>;
  const revision = wholeNumberField(body, 'expected_revision');
  if ('error' in revision) return decisionRefusedPage(deps, s, p, reply, 400, revision.error);
  const expectedRevision = revision.value;
  try {
    await sendDecision(deps, principal, decision, p, expectedRevision, String(body.note ?? '').trim());
  } catch (err) {
    const refusal = decisionRefusal(ConnectError.from(err), `Your role cannot ${decision} proposals.`);
    const fresh = (await loadProposal(deps, principal, p.proposalId)) ?? p;
    return decisionRefusedPage(deps, s, fresh, reply, refusal.status, refusal.message);
  }
  await insertAudit(deps.pool, {
    workspaceId: s.workspace_id,
    actor: `user:${s.user_id}`,
    action: decision === 'approve' ? 'proposal.approved' : 'proposal.rejected',
    target: p.proposalId,
    detail: { revision: expectedRevision },
  });
  return reply.redirect(`/dashboard/proposals/${p.proposalId}`, 303);
}

/** registerProposalPages adds the proposal list, the proposal page and its Approve and Reject forms. */
export function registerProposalPages(app: FastifyInstance, deps: GatewayDeps, h: ProposalPageHelpers): void {
  app.get('/dashboard/proposals', (req, reply) => proposalListPage(deps, h, req, reply));
  app.get<{ Params: { id: string } }>('/dashboard/proposals/:id', (req, reply) =>
    proposalPage(deps, h, req, reply),
  );
  for (const decision of ['approve', 'reject'] as const) {
    app.post<{ Params: { id: string } }>(`/dashboard/proposals/:id/${decision}`, (req, reply) =>
      decideProposal(deps, h, decision, req, reply),
    );
  }
}
