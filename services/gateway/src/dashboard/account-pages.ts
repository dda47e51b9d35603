/**
 * An ad account's settings page: its standards (read only; agents and people save them with the
 * standards tools) and its spend guard, the daily budget and bid caps a workspace admin sets here
 * (the bid cap per click, or per thousand impressions).
 * The caps are not a tool argument: the agent they guard cannot raise them.
 */
import type { AccountStandard, SpendGuard } from '@adsmcp/proto/changes/v1/standards_pb';
import { StandardsService } from '@adsmcp/proto/changes/v1/standards_pb';
import type { Account } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { isUuid } from '@adsmcp/runtime/ids';
import type { Principal } from '@adsmcp/runtime/principal';
import { Code, ConnectError } from '@connectrpc/connect';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type GatewayDeps, onBehalfOf } from '../deps.ts';
import { insertAudit } from '../store/identity-store.ts';
import type { SessionView } from '../store/session-store.ts';
import { sessionPrincipal } from './change-pages.ts';
import { performanceHtml } from './charts.ts';
import { esc, page } from './html.ts';
import { pendingStandardChangesHtml, registerPendingStandardChanges } from './pending-standard-changes.ts';
import { moneyHtml } from './shown-values.ts';
import { signInFirst } from './sign-in-next.ts';

/** What the dashboard's routes share with this page: the session and the checked form post. */
export interface AccountPageHelpers {
  session(req: FastifyRequest): Promise<SessionView | undefined>;
  /** A POST from a signed-in person on our own page (origin and CSRF checked), or undefined after a 403. */
  checkedPost(req: FastifyRequest, reply: FastifyReply): Promise<SessionView | undefined>;
  user(s: SessionView): { email: string; workspace: string; csrf: string };
}

/** The largest cap accepted: the largest int64. */
const MAX_MICROS = 9_223_372_036_854_775_807n;

/** A cap from the form: empty for none, else a positive whole number of micros. */
export function parseCap(value: unknown, label: string): bigint | undefined {
  const text = String(value ?? '').trim();
  if (text === '') return undefined;
  if (!/^\d{1,19}$/.test(text) || BigInt(text) < 1n || BigInt(text) > MAX_MICROS) {
    throw new Error(`${label} must be a whole number of micros from 1 to ${MAX_MICROS}, or empty for no cap`);
  }
  return BigInt(text);
}

function standardsHtml(standards: readonly AccountStandard[]): string {
  if (standards.length === 0)
    return '<p class="muted">No standards or templates are saved for this account.</p>';
  return `<table id="standards"><thead><tr><th>Name</th><th>Kind</th><th>Revision</th><th>Guidance</th></tr></thead><tbody>${standards
    .map(
      (s) =>
        `<tr data-standard="${esc(s.standardId)}"><td>${esc(s.name)}</td><td>${esc(s.kind)}</td><td>${esc(s.revision)}</td><td>${esc(s.data?.guidance ?? '')}</td></tr>`,
    )
    .join('')}</tbody></table>`;
}

/** A cap in the account's currency with its exact micros beside it (a cap is where exactness matters). */
const capHtml = (v: bigint | undefined, currency: string) =>
  v === undefined ? 'no cap' : moneyHtml(v, currency, { exact: true });

function guardHtml(
  accountId: string,
  currency: string,
  guard: SpendGuard | undefined,
  csrf: string,
  isAdmin: boolean,
): string {
  const facts = `<table><tr><th>Daily budget cap</th><td id="cap-budget">${capHtml(guard?.maxDailyBudgetMicros, currency)}</td></tr>
    <tr><th>Bid cap (per click, or per thousand impressions)</th><td id="cap-bid">${capHtml(guard?.maxBidMicros, currency)}</td></tr>
    ${guard?.updatedAt ? `<tr><th>Set</th><td>${esc(guard.updatedAt)} by ${esc(guard.updatedBy)}</td></tr>` : ''}</table>`;
  if (!isAdmin) return `${facts}<p class="muted">Only a workspace admin can change the spend guard.</p>`;
  const value = (v: bigint | undefined) => (v === undefined ? '' : esc(v));
  return `${facts}
    <form method="post" action="/dashboard/accounts/${esc(accountId)}/spend-guard">
      <input type="hidden" name="csrf" value="${esc(csrf)}">
      <label for="max_daily_budget_micros">Daily budget cap (micros of the account currency; 1000000 is 1.00; empty for no cap)</label>
      <input id="max_daily_budget_micros" name="max_daily_budget_micros" inputmode="numeric" value="${value(guard?.maxDailyBudgetMicros)}">
      <label for="max_bid_micros">Bid cap (micros of the account currency per click, or per thousand impressions (CPM); empty for no cap)</label>
      <input id="max_bid_micros" name="max_bid_micros" inputmode="numeric" value="${value(guard?.maxBidMicros)}">
      <p><button type="submit" id="save-guard">Save spend guard</button></p>
    </form>`;
}

/** The account of the workspace, or undefined when it is not one of its accounts. */
async function workspaceAccount(deps: GatewayDeps, p: Principal, id: string): Promise<Account | undefined> {
  if (!isUuid(id)) return undefined;
  const { accounts } = await deps.upstream.listAccounts({}, onBehalfOf(p));
  return accounts.find((a) => a.accountId === id);
}

async function accountPage(
  deps: GatewayDeps,
  s: SessionView,
  account: Account,
  message?: string,
): Promise<string> {
  const p = sessionPrincipal(s);
  const standards = deps.clientOf(StandardsService);
  const [{ standards: list }, { guard }] = await Promise.all([
    standards.listAccountStandards({ accountId: account.accountId, limit: 100, offset: 0 }, onBehalfOf(p)),
    standards.getSpendGuard({ accountId: account.accountId }, onBehalfOf(p)),
  ]);
  return `<p><a href="/dashboard">← Dashboard</a></p>
    ${message ? `<p class="error" role="alert">${esc(message)}</p>` : ''}
    <section><h2>${esc(account.name)}</h2><table>
      <tr><th>Account id</th><td><code>${esc(account.accountId)}</code></td></tr>
      <tr><th>Currency</th><td>${esc(account.currency)}</td></tr><tr><th>Time zone</th><td>${esc(account.timeZone)}</td></tr></table></section>
    ${await performanceHtml(deps, p, account)}
    <section><h2>Spend guard</h2>
    <p class="muted">A change whose daily budget or bid is above a cap is refused when it is prepared and when it is applied.
    The bid cap is per click for click bids and per thousand impressions (a CPM) for impression bids: an ad group's bid
    per impression counts as its CPM, 1000 times the bid, while an ad batch's or a workbook's impression bid already is one.</p>
    ${guardHtml(account.accountId, account.currency, guard, s.csrf_token, s.role === 'admin')}</section>
    ${await pendingStandardChangesHtml(deps, s, p, account.accountId)}
    <section><h2>Standards</h2>${standardsHtml(list)}</section>`;
}

export function registerAccountPages(app: FastifyInstance, deps: GatewayDeps, h: AccountPageHelpers): void {
  const notFound = (reply: FastifyReply, s: SessionView) =>
    reply
      .code(404)
      .type('text/html')
      .send(page('Not found', '<p>No such ad account in this workspace.</p>', h.user(s)));

  app.get<{ Params: { id: string } }>('/dashboard/accounts/:id', async (req, reply) => {
    const s = await h.session(req);
    if (!s) return reply.redirect(signInFirst(req), 303);
    const account = await workspaceAccount(deps, sessionPrincipal(s), req.params.id);
    if (!account) return notFound(reply, s);
    return reply.type('text/html').send(page('Ad account', await accountPage(deps, s, account), h.user(s)));
  });

  registerPendingStandardChanges(app, deps, h, {
    find: (p, id) => workspaceAccount(deps, p, id),
    refuse: async (reply, s, account, status, message) =>
      account === undefined
        ? notFound(reply, s)
        : reply
            .code(status)
            .type('text/html')
            .send(page('Ad account', await accountPage(deps, s, account, message), h.user(s))),
  });

  app.post<{ Params: { id: string } }>('/dashboard/accounts/:id/spend-guard', async (req, reply) => {
    const s = await h.checkedPost(req, reply);
    if (!s) return reply;
    if (s.role !== 'admin')
      return reply
        .code(403)
        .type('text/html')
        .send(
          page('Forbidden', '<p class="error">Only a workspace admin can set a spend guard.</p>', h.user(s)),
        );
    const principal = sessionPrincipal(s);
    const account = await workspaceAccount(deps, principal, req.params.id);
    if (!account) return notFound(reply, s);
    const body = (req.body ?? {}) as Record<string, string>;
    const refuse = async (status: number, message: string) =>
      reply
        .code(status)
        .type('text/html')
        .send(page('Ad account', await accountPage(deps, s, account, message), h.user(s)));
    let caps: { maxDailyBudgetMicros?: bigint; maxBidMicros?: bigint };
    try {
      caps = {
        maxDailyBudgetMicros: parseCap(body.max_daily_budget_micros, 'The daily budget cap'),
        maxBidMicros: parseCap(body.max_bid_micros, 'The bid cap'),
      };
    } catch (err) {
      return refuse(400, (err as Error).message);
    }
    try {
      await deps
        .clientOf(StandardsService)
        .setSpendGuard({ accountId: account.accountId, ...caps }, onBehalfOf(principal));
    } catch (err) {
      const e = ConnectError.from(err);
      if (e.code === Code.InvalidArgument || e.code === Code.PermissionDenied)
        return refuse(e.code === Code.PermissionDenied ? 403 : 400, e.rawMessage);
      throw err;
    }
    await insertAudit(deps.pool, {
      workspaceId: s.workspace_id,
      actor: `user:${s.user_id}`,
      action: 'account.spend_guard_set',
      target: account.accountId,
      detail: {
        max_daily_budget_micros: caps.maxDailyBudgetMicros?.toString() ?? null,
        max_bid_micros: caps.maxBidMicros?.toString() ?? null,
      },
    });
    return reply.redirect(`/dashboard/accounts/${account.accountId}`, 303);
  });
}
