/**
 * Account controls in the dashboard: each ad account's spend envelope (the most its daily budgets
 * may rise in any rolling 24 hours, or "no envelope, no write") and freezes of an account's or the
 * whole workspace's writes, with who set them, when and why. The changes service keeps and
 * enforces them and refuses anyone but a workspace admin in person; every page shows a banner
 * while a freeze is in force.
 */
import {
  ControlsService,
  type Freeze,
  type GetEnvelopeUseResponse,
  type SpendEnvelope,
} from '@adsmcp/proto/changes/v1/controls_pb';
import type { Account } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { isUuid } from '@adsmcp/runtime/ids';
import type { Principal } from '@adsmcp/runtime/principal';
import { type Client, ConnectError } from '@connectrpc/connect';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type GatewayDeps, onBehalfOf } from '../deps.ts';
import { listUsersByIds } from '../store/identity-store.ts';
import type { SessionView } from '../store/session-store.ts';
import type { AccountPageHelpers } from './account-pages.ts';
import { actorHtml, type People, parseActor } from './change-actors.ts';
import { sessionPrincipal } from './change-pages.ts';
import { decisionRefusal, formText } from './form-body.ts';
import { esc, page } from './html.ts';
import { localTimeScript, timeHtml } from './local-time.ts';
import { signInFirst } from './sign-in-next.ts';

/** Where the page frame (html.ts) leaves room for the freeze banner, filled per request. */
export const FREEZE_BANNER_MARK = '<!--freeze-banner-->';

const ONLY_ADMIN = 'Only a workspace admin can change account controls.';

/** A form field the page refuses before asking the changes service, naming the field and the rule. */
class FormError extends Error {}

/** `micros` of `currency` as an amount a person reads, with the exact micros beside it. */
export function amountHtml(micros: bigint, currency: string): string {
  const units = micros / 1_000_000n;
  const cents = ((micros % 1_000_000n) / 10_000n).toString().padStart(2, '0');
  return `${esc(`${units}.${cents}`)} ${esc(currency)} <span class="muted">(${esc(micros)} micros)</span>`;
}

async function peopleOf(deps: GatewayDeps, workspaceId: string, actors: readonly string[]): Promise<People> {
  const ids = actors.map((a) => parseActor(a).userId).filter((id): id is string => id !== undefined);
  const users = ids.length === 0 ? [] : await listUsersByIds(deps.pool, workspaceId, ids);
  return new Map(users.map((u) => [u.id.toLowerCase(), u.email]));
}

function freezeLine(f: Freeze, people: People, accountName?: string): string {
  const what =
    f.accountId === ''
      ? 'The whole workspace is frozen'
      : `Ad account <a href="/dashboard/accounts/${esc(f.accountId)}/controls">${esc(accountName ?? f.accountId)}</a> is frozen`;
  return `<li data-freeze="${esc(f.freezeId)}">${what} since ${timeHtml(f.frozenAt)} by ${actorHtml(f.frozenBy, people)}: <q class="freeze-reason">${esc(f.reason)}</q></li>`;
}

/** The banner every page shows while a freeze is in force: what is frozen, since when, by whom, why. */
async function bannerHtml(deps: GatewayDeps, s: SessionView): Promise<string> {
  const p = sessionPrincipal(s);
  const { freezes } = await deps.clientOf(ControlsService).listFreezes({}, onBehalfOf(p));
  if (freezes.length === 0) return '';
  const people = await peopleOf(
    deps,
    s.workspace_id,
    freezes.map((f) => f.frozenBy),
  );
  return `<section class="notice" id="freeze-banner" role="status"><strong>Writes are frozen.</strong> Nothing can be prepared
    or applied for a frozen account; applies already queued wait, unsent, until it is unfrozen.<ul>${freezes
      .map((f) => freezeLine(f, people))
      .join('')}</ul></section>`;
}

function envelopeHtml(e: SpendEnvelope | undefined, currency: string): string {
  const used = e?.usedMicros ?? 0n;
  const rows: [string, string, string][] = [
    [
      'Envelope (most the daily budgets may rise in any 24 hours)',
      e?.envelopeMicros === undefined ? 'none' : amountHtml(e.envelopeMicros, currency),
      'envelope-amount',
    ],
    [
      'Without an envelope',
      e?.failClosed ? 'no write: every change that raises a daily budget is refused' : 'no limit',
      'envelope-fail-closed',
    ],
    ['Used in the last 24 hours', amountHtml(used, currency), 'envelope-used'],
    [
      'Left',
      e?.leftMicros === undefined ? 'no envelope' : amountHtml(e.leftMicros, currency),
      'envelope-left',
    ],
  ];
  return `<table>${rows.map(([k, v, id]) => `<tr><th>${esc(k)}</th><td id="${id}">${v}</td></tr>`).join('')}</table>`;
}

/**
 * What was typed into a refused form of the controls pages, kept in its field on the page that
 * says why (the form's own field names: `envelope_micros`, `fail_closed`, `reason`).
 */
type Typed = { form: 'envelope' | 'freeze'; body: Record<string, unknown> } | undefined;

/** A field's typed value in a refused `form`: undefined when another form (or none) was refused. */
function typedText(typed: Typed, form: 'envelope' | 'freeze', field: string): string | undefined {
  return typed?.form === form ? formText(typed.body[field]) : undefined;
}

/** The account's controls page. */
async function controlsHtml(
  deps: GatewayDeps,
  s: SessionView,
  account: Account,
  message?: string,
  typed?: Typed,
) {
  const p = sessionPrincipal(s);
  const { controls } = await deps
    .clientOf(ControlsService)
    .getAccountControls({ accountId: account.accountId }, onBehalfOf(p));
  const e = controls?.envelope;
  const freeze = controls?.freeze;
  const people = await peopleOf(deps, s.workspace_id, [e?.updatedBy ?? '', freeze?.frozenBy ?? '']);
  const admin = s.role === 'admin';
  const base = `/dashboard/accounts/${esc(account.accountId)}/controls`;
  const csrf = `<input type="hidden" name="csrf" value="${esc(s.csrf_token)}">`;
  const envelopeForm = admin
    ? `<form method="post" action="${base}/envelope" id="envelope-form">${csrf}
        <label for="envelope_micros">Envelope in micros of ${esc(account.currency)} (1000000 is 1.00; empty for none)</label>
        <input id="envelope_micros" name="envelope_micros" inputmode="numeric" value="${esc(typedText(typed, 'envelope', 'envelope_micros') ?? e?.envelopeMicros ?? '')}">
        <label><input type="checkbox" name="fail_closed" value="on" id="fail_closed" style="width:auto"${(typed?.form === 'envelope' ? typed.body.fail_closed === 'on' : e?.failClosed) ? ' checked' : ''}>
        No envelope, no write: without an envelope, refuse every change that raises a daily budget</label>
        <p><button type="submit" id="save-envelope">Save envelope</button></p></form>`
    : `<p class="muted">${ONLY_ADMIN}</p>`;
  const setBy = e?.updatedAt
    ? `<p class="muted" id="envelope-set-by">Set ${timeHtml(e.updatedAt)} by ${actorHtml(e.updatedBy, people)}.</p>`
    : '';
  const own = freeze !== undefined && freeze.accountId !== '';
  const freezeState =
    freeze === undefined
      ? '<p id="freeze-state">Writes are open.</p>'
      : `<ul id="freeze-state">${freezeLine(freeze, people, account.name)}</ul>`;
  const freezeForm = !admin
    ? `<p class="muted">${ONLY_ADMIN}</p>`
    : own
      ? `<form method="post" action="${base}/unfreeze">${csrf}<p><button type="submit" id="unfreeze">Unfreeze</button></p></form>`
      : `<form method="post" action="${base}/freeze">${csrf}
          <label for="freeze-reason">Reason (shown with every refusal and on every page)</label>
          <input id="freeze-reason" name="reason" required maxlength="500" value="${esc(typedText(typed, 'freeze', 'reason') ?? '')}">
          <p><button class="danger" type="submit" id="freeze">Freeze writes to this account</button></p></form>`;
  return `<p><a href="/dashboard/accounts/${esc(account.accountId)}">← ${esc(account.name)}</a></p>
    ${message ? `<p class="error" role="alert">${esc(message)}</p>` : ''}
    <section id="spend-envelope"><h2>Spend envelope</h2>
    <p class="muted">The sum of daily-budget increases and of new daily budgets over any rolling 24 hours may not pass the
    envelope. It is checked when a change is prepared, when it is approved and when it is applied; each apply reserves
    its share first, so applies at the same moment cannot pass it together. A decrease uses nothing.</p>
    ${envelopeHtml(e, account.currency)}${setBy}${envelopeForm}</section>
    <section id="account-freeze"><h2>Freeze</h2>
    <p class="muted">While frozen, changes to this account cannot be prepared or asked to be applied, and applies already
    queued wait unsent (their approval keeps running; one that expires meanwhile fails with nothing sent). Unfreezing
    sends them.</p>${freezeState}${freezeForm}</section>${localTimeScript}`;
}

/** What a change uses of its account's envelope, for its review page; undefined when unknown. */
export async function envelopeUseOf(
  deps: GatewayDeps,
  p: Principal,
  changeId: string,
  currency: string,
): Promise<{ use: GetEnvelopeUseResponse; currency: string } | undefined> {
  try {
    return {
      use: await deps.clientOf(ControlsService).getEnvelopeUse({ changeId }, onBehalfOf(p)),
      currency,
    };
  } catch {
    return undefined;
  }
}

/** The review page's section: what the change uses of the envelope, and what is left. */
export function envelopeUseHtml(e: { use: GetEnvelopeUseResponse; currency: string } | undefined): string {
  if (e === undefined) return '';
  const { use, currency } = e;
  const envelope = use.envelope;
  const uses =
    use.useMicros === 0n
      ? '<p id="envelope-use">This change raises no daily budget: it uses nothing of the spend envelope.</p>'
      : `<p id="envelope-use">This change raises daily budgets by ${amountHtml(use.useMicros, currency)}:</p><ul>${use.parts
          .map((part) => `<li><code>${esc(part)}</code></li>`)
          .join('')}</ul>`;
  const left =
    envelope?.envelopeMicros === undefined
      ? `<p id="envelope-left-now">The account has no spend envelope${envelope?.failClosed ? ' and is set to "no envelope, no write"' : ''}.</p>`
      : `<p id="envelope-left-now">Envelope ${amountHtml(envelope.envelopeMicros, currency)} in any 24 hours: ${amountHtml(envelope.usedMicros, currency)} used, ${amountHtml(envelope.leftMicros ?? 0n, currency)} left.</p>`;
  const refusal = use.refusal
    ? `<p class="error" role="alert" id="envelope-refusal">${esc(use.refusal)}</p>`
    : '';
  return `<section id="spend-envelope-use"><h2>Spend envelope</h2>${uses}${left}${refusal}</section>`;
}

/** The settings page's section: the workspace's freeze, and each account's controls page. */
export async function workspaceControlsHtml(
  deps: GatewayDeps,
  s: SessionView,
  typed?: Typed,
): Promise<string> {
  const p = sessionPrincipal(s);
  const [{ freezes }, { accounts }] = await Promise.all([
    deps.clientOf(ControlsService).listFreezes({}, onBehalfOf(p)),
    deps.upstream.listAccounts({}, onBehalfOf(p)),
  ]);
  const workspace = freezes.find((f) => f.accountId === '');
  const people = await peopleOf(
    deps,
    s.workspace_id,
    freezes.map((f) => f.frozenBy),
  );
  const csrf = `<input type="hidden" name="csrf" value="${esc(s.csrf_token)}">`;
  const form =
    s.role !== 'admin'
      ? `<p class="muted">${ONLY_ADMIN}</p>`
      : workspace !== undefined
        ? `<form method="post" action="/dashboard/settings/unfreeze">${csrf}<p><button type="submit" id="unfreeze-workspace">Unfreeze the workspace</button></p></form>`
        : `<form method="post" action="/dashboard/settings/freeze">${csrf}
            <label for="workspace-freeze-reason">Reason (shown with every refusal and on every page)</label>
            <input id="workspace-freeze-reason" name="reason" required maxlength="500" value="${esc(typedText(typed, 'freeze', 'reason') ?? '')}">
            <p><button class="danger" type="submit" id="freeze-workspace">Freeze writes to every account</button></p></form>`;
  const state =
    workspace === undefined
      ? '<p id="workspace-freeze-state">Writes are open in the workspace.</p>'
      : `<ul id="workspace-freeze-state">${freezeLine(workspace, people)}</ul>`;
  const links = accounts
    .map(
      (a) =>
        `<li><a href="/dashboard/accounts/${esc(a.accountId)}/controls">${esc(a.name)}</a>${
          freezes.some((f) => f.accountId === a.accountId)
            ? ' <span class="badge st-failed">frozen</span>'
            : ''
        }</li>`,
    )
    .join('');
  return `<section id="workspace-freeze"><h2>Freeze the workspace</h2>
    <p class="muted">Stops writes to every ad account of the workspace: prepares and apply requests are refused with the
    reason, queued applies wait unsent, and optimizer proposals are not sent. Unfreezing sends what waited.</p>
    ${state}${form}</section>
    <section id="account-controls"><h2>Account controls</h2>
    <p class="muted">Each ad account's spend envelope and freeze.</p><ul>${links}</ul></section>`;
}

/** The account of the workspace `id` names, or undefined. */
async function workspaceAccount(deps: GatewayDeps, p: Principal, id: string): Promise<Account | undefined> {
  if (!isUuid(id)) return undefined;
  const { accounts } = await deps.upstream.listAccounts({}, onBehalfOf(p));
  return accounts.find((a) => a.accountId === id.toLowerCase());
}

/** The envelope field of the form: empty for none, else a whole number of micros. */
export function parseEnvelope(value: unknown): bigint | undefined {
  const text = typeof value === 'string' ? value.trim() : '';
  if (text === '') return undefined;
  if (!/^\d{1,18}$/.test(text))
    throw new FormError(
      'envelope_micros must be a whole number of micros of the account currency (0 or more, at most 18 digits), or empty for none',
    );
  return BigInt(text);
}

export function registerControlsPages(app: FastifyInstance, deps: GatewayDeps, h: AccountPageHelpers): void {
  // The banner: every page the frame built, for the signed-in person's workspace.
  app.addHook('onSend', (req, _reply, payload) => withFreezeBanner(deps, h, req, payload));
  const c: ControlsPages = { app, deps, h, controls: deps.clientOf(ControlsService) };
  app.get<{ Params: { id: string } }>('/dashboard/accounts/:id/controls', async (req, reply) => {
    const s = await h.session(req);
    if (!s) return reply.redirect(signInFirst(req), 303);
    const account = await workspaceAccount(deps, sessionPrincipal(s), req.params.id);
    if (!account) return notFound(c, reply, s);
    return show(c, reply, s, account);
  });
  const { controls } = c;
  accountPost(c, 'envelope', async (p, account, body) => {
    const envelope = parseEnvelope(body.envelope_micros);
    await controls.setSpendEnvelope(
      { accountId: account.accountId, envelopeMicros: envelope, failClosed: body.fail_closed === 'on' },
      onBehalfOf(p),
    );
  });
  accountPost(c, 'freeze', (p, account, body) =>
    controls.freeze({ accountId: account.accountId, reason: String(body.reason ?? '') }, onBehalfOf(p)),
  );
  accountPost(c, 'unfreeze', (p, account) =>
    controls.unfreeze({ accountId: account.accountId }, onBehalfOf(p)),
  );
  workspacePost(c, 'freeze', (p, body) =>
    controls.freeze({ accountId: '', reason: String(body.reason ?? '') }, onBehalfOf(p)),
  );
  workspacePost(c, 'unfreeze', (p) => controls.unfreeze({ accountId: '' }, onBehalfOf(p)));
}

/** What the controls pages' routes share. */
interface ControlsPages {
  app: FastifyInstance;
  deps: GatewayDeps;
  h: AccountPageHelpers;
  controls: Client<typeof ControlsService>;
}

/** A page the frame built, with the freeze banner in its place. */
async function withFreezeBanner(
  deps: GatewayDeps,
  h: AccountPageHelpers,
  req: FastifyRequest,
  payload: unknown,
) {
  if (typeof payload !== 'string' || !payload.includes(FREEZE_BANNER_MARK)) return payload;
  const s = await h.session(req).catch(() => undefined);
  const banner = s === undefined ? '' : await bannerHtml(deps, s).catch(() => '');
  // A function, not a string: `$'` or `$&` in a freeze's reason would otherwise be read as a pattern.
  return payload.replace(FREEZE_BANNER_MARK, () => banner);
}

function notFound(c: ControlsPages, reply: FastifyReply, s: SessionView) {
  return reply
    .code(404)
    .type('text/html')
    .send(page('Not found', '<p>No such ad account in this workspace.</p>', c.h.user(s)));
}

async function show(
  c: ControlsPages,
  reply: FastifyReply,
  s: SessionView,
  account: Account,
  status = 200,
  message?: string,
  typed?: Typed,
) {
  return reply
    .code(status)
    .type('text/html')
    .send(page('Account controls', await controlsHtml(c.deps, s, account, message, typed), c.h.user(s)));
}

/** The form a post to `path` came from, with what was typed in it (unfreeze has no field). */
function typedIn(path: string, body: Record<string, unknown>): Typed {
  return path === 'envelope' || path === 'freeze' ? { form: path, body } : undefined;
}

/** A checked post about an account's controls: `act` calls the changes service, then back to the page. */
function accountPost(
  c: ControlsPages,
  path: string,
  act: (p: Principal, account: Account, body: Record<string, unknown>) => Promise<unknown>,
) {
  c.app.post<{ Params: { id: string } }>(`/dashboard/accounts/:id/controls/${path}`, async (req, reply) => {
    const s = await c.h.checkedPost(req, reply);
    if (!s) return reply;
    const p = sessionPrincipal(s);
    const account = await workspaceAccount(c.deps, p, req.params.id);
    if (!account) return notFound(c, reply, s);
    const body = (req.body ?? {}) as Record<string, unknown>;
    try {
      await act(p, account, body);
    } catch (err) {
      const typed = typedIn(path, body);
      if (err instanceof FormError) return show(c, reply, s, account, 400, err.message, typed);
      const refusal = decisionRefusal(ConnectError.from(err), ONLY_ADMIN);
      return show(c, reply, s, account, refusal.status, refusal.message, typed);
    }
    return reply.redirect(`/dashboard/accounts/${account.accountId}/controls`, 303);
  });
}

/** The workspace's freeze, from the settings page. */
function workspacePost(
  c: ControlsPages,
  path: string,
  act: (p: Principal, body: Record<string, unknown>) => Promise<unknown>,
) {
  c.app.post(`/dashboard/settings/${path}`, async (req: FastifyRequest, reply) => {
    const s = await c.h.checkedPost(req, reply);
    if (!s) return reply;
    const body = (req.body ?? {}) as Record<string, unknown>;
    try {
      await act(sessionPrincipal(s), body);
    } catch (err) {
      const refusal = decisionRefusal(ConnectError.from(err), ONLY_ADMIN);
      return reply
        .code(refusal.status)
        .type('text/html')
        .send(
          page(
            'Settings',
            `<p class="error" role="alert">${esc(refusal.message)}</p>${await workspaceControlsHtml(c.deps, s, typedIn(path, body))}`,
            c.h.user(s),
          ),
        );
    }
    return reply.redirect('/dashboard/settings', 303);
  });
}
