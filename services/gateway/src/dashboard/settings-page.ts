/**
 * The workspace's settings: how long a prepared change nobody approved, and an approval nobody
 * followed with an apply request, stay usable. The changes service keeps and enforces them; this
 * page shows them to every member and lets an admin set them (the service refuses anyone else).
 */
import type { ExpirySettings } from '@adsmcp/proto/changes/v1/changes_pb';
import { ConnectError } from '@connectrpc/connect';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { type GatewayDeps, onBehalfOf } from '../deps.ts';
import { listUsersByIds } from '../store/identity-store.ts';
import type { SessionView } from '../store/session-store.ts';
import type { AccountPageHelpers } from './account-pages.ts';
import { actorHtml, parseActor } from './change-actors.ts';
import { sessionPrincipal } from './change-pages.ts';
import { workspaceControlsHtml } from './controls-page.ts';
import { decisionRefusal } from './form-body.ts';
import { esc, page } from './html.ts';
import { localTimeScript, timeHtml } from './local-time.ts';
import { signInFirst } from './sign-in-next.ts';

/** The form's fields, as the changes service names them, and how the page labels them. */
const FIELDS = [
  ['prepared_valid_hours', 'A prepared change nobody approved expires after (hours)'],
  ['approval_valid_hours', 'An approval not followed by an apply request expires after (hours)'],
] as const;

/** An hours field of the form as a number, or why it is not one (naming the field and the rule). */
export function parseHours(value: unknown, field: string): number | string {
  const text = typeof value === 'string' ? value.trim() : '';
  if (!/^\d{1,4}$/.test(text)) return `${field} must be a whole number of hours from 1 to 720`;
  return Number(text);
}

export async function settingsHtml(
  deps: GatewayDeps,
  s: SessionView,
  settings: ExpirySettings | undefined,
  message?: string,
): Promise<string> {
  const values: Record<string, number> = {
    prepared_valid_hours: settings?.preparedValidHours ?? 72,
    approval_valid_hours: settings?.approvalValidHours ?? 24,
  };
  const setter = parseActor(settings?.setBy ?? '').userId;
  const users = setter ? await listUsersByIds(deps.pool, s.workspace_id, [setter]) : [];
  const people = new Map(users.map((u) => [u.id.toLowerCase(), u.email]));
  const who = settings?.setAt
    ? `<p class="muted" id="expiry-set-by">Set ${timeHtml(settings.setAt)} by ${actorHtml(settings.setBy, people)}.</p>`
    : '<p class="muted" id="expiry-set-by">The defaults: nobody has set them in this workspace.</p>';
  const rows = FIELDS.map(
    ([name, label]) =>
      `<tr><th><label for="${name}">${esc(label)}</label></th><td>${
        s.role === 'admin'
          ? `<input id="${name}" name="${name}" type="number" min="1" max="720" step="1" required value="${esc(values[name])}">`
          : `<span id="${name}">${esc(values[name])}</span>`
      }</td></tr>`,
  ).join('');
  const form =
    s.role === 'admin'
      ? `<form method="post" action="/dashboard/settings/change-expiry" id="change-expiry-form">
         <input type="hidden" name="csrf" value="${esc(s.csrf_token)}"><table>${rows}</table>
         <p><button type="submit" id="save-expiry">Save</button></p></form>`
      : `<table>${rows}</table><p class="muted">Only a workspace admin can change these.</p>`;
  return `${message ? `<p class="error" role="alert">${esc(message)}</p>` : ''}
    <section id="change-expiry"><h2>How long changes stay usable</h2>
    <p>A change that nobody approved in time, or whose approval nobody followed with a request to apply it
    (<code>ads_apply_change</code>) in time, expires: it can no longer be approved or applied, and leaves the
    list of changes awaiting approval. Once an apply was requested, the approval is used and does not expire.
    From 1 to 720 hours each; a new setting applies at once to the changes already prepared, and is recorded in
    the audit log.</p>${form}${who}</section>${await workspaceControlsHtml(deps, s)}${localTimeScript}`;
}

export function registerSettingsPage(app: FastifyInstance, deps: GatewayDeps, h: AccountPageHelpers): void {
  const show = async (reply: FastifyReply, s: SessionView, status = 200, message?: string) => {
    const { settings } = await deps.changes.getExpirySettings({}, onBehalfOf(sessionPrincipal(s)));
    return reply
      .code(status)
      .type('text/html')
      .send(page('Settings', await settingsHtml(deps, s, settings, message), h.user(s)));
  };

  app.get('/dashboard/settings', async (req, reply) => {
    const s = await h.session(req);
    if (!s) return reply.redirect(signInFirst(req), 303);
    return show(reply, s);
  });

  app.post('/dashboard/settings/change-expiry', async (req, reply) => {
    const s = await h.checkedPost(req, reply);
    if (!s) return reply;
    const body = (req.body ?? {}) as Record<string, unknown>;
    const prepared = parseHours(body.prepared_valid_hours, 'prepared_valid_hours');
    const approval = parseHours(body.approval_valid_hours, 'approval_valid_hours');
    if (typeof prepared === 'string') return show(reply, s, 400, prepared);
    if (typeof approval === 'string') return show(reply, s, 400, approval);
    try {
      await deps.changes.setExpirySettings(
        { preparedValidHours: prepared, approvalValidHours: approval },
        onBehalfOf(sessionPrincipal(s)),
      );
    } catch (err) {
      const refusal = decisionRefusal(
        ConnectError.from(err),
        'Only a workspace admin can set how long changes stay usable.',
      );
      return show(reply, s, refusal.status, refusal.message);
    }
    return reply.redirect('/dashboard/settings', 303);
  });
}
