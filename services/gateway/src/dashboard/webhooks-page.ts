/**
 * The workspace's webhooks: a workspace admin registers a URL for some events (its signing secret
 * shown once, on the page that answers the registration), deletes one, and reads the delivery
 * log. The changes service keeps, checks and delivers them, and refuses anyone but an admin.
 */
import { WebhooksService } from '@adsmcp/proto/changes/v1/webhooks_pb';
import { isUuid } from '@adsmcp/runtime/ids';
import { Code, ConnectError } from '@connectrpc/connect';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { type GatewayDeps, onBehalfOf } from '../deps.ts';
import type { SessionView } from '../store/session-store.ts';
import type { AccountPageHelpers } from './account-pages.ts';
import { sessionPrincipal } from './change-pages.ts';
import { decisionRefusal } from './form-body.ts';
import { esc, page } from './html.ts';
import { localTimeScript, timeHtml } from './local-time.ts';
import { signInFirst } from './sign-in-next.ts';

/** The events a webhook may ask for, as the changes service names them, and how the page labels them. */
const EVENTS = [
  ['change.awaiting_approval', 'A change awaits approval'],
  ['change.approved', 'A change was approved'],
  ['change.rejected', 'A change was rejected'],
  ['change.applied', 'A change was applied'],
  ['change.failed', 'A change failed'],
  ['change.expired', 'A change expired'],
  ['proposal.awaiting_approval', "An optimizer's proposal awaits approval"],
  ['import.finished', 'A performance import finished (completed or failed)'],
] as const;

/** The subject of a delivery, linked to its page where the dashboard has one (an import has none). */
function subjectHtml(event: string, subjectId: string): string {
  if (event.startsWith('import.')) return `performance import ${esc(subjectId)}`;
  const pages = event.startsWith('proposal.') ? 'proposals' : 'changes';
  return `<a href="/dashboard/${pages}/${esc(subjectId)}">${esc(subjectId)}</a>`;
}

const ADMIN_ONLY = 'Only a workspace admin can manage webhooks.';

interface Shown {
  status?: number;
  message?: string;
  /** The secret of the webhook just registered: this page is the only place it is ever shown. */
  created?: { webhookId: string; secret: string };
  /** A refused registration's fields, kept in the form so that nothing typed is lost. */
  typed?: { url: string; events: string[]; format: string };
}

async function webhooksHtml(deps: GatewayDeps, s: SessionView, shown: Shown): Promise<string> {
  const client = deps.clientOf(WebhooksService);
  const as = onBehalfOf(sessionPrincipal(s));
  if (s.role !== 'admin')
    return `<section id="webhooks"><h2>Webhooks</h2><p class="muted">${ADMIN_ONLY}</p></section>`;
  const [{ webhooks }, { deliveries }] = await Promise.all([
    client.listWebhooks({}, as),
    client.listWebhookDeliveries({ limit: 50 }, as),
  ]);
  const csrf = `<input type="hidden" name="csrf" value="${esc(s.csrf_token)}">`;
  const secret = shown.created
    ? `<div class="notice" id="webhook-secret" role="status"><p><strong>The signing secret of the new webhook.</strong>
       Copy it now: it is not shown again. Receivers check <code>X-Adsmcp-Signature</code> with it (docs/webhooks.md).</p>
       <pre id="secret">${esc(shown.created.secret)}</pre></div>`
    : '';
  const rows = webhooks
    .map(
      (
        w,
      ) => `<tr data-webhook="${esc(w.webhookId)}"><td class="v">${esc(w.url)}</td><td>${esc(w.events.join(', '))}</td>
      <td>${esc(w.format)}</td><td>${timeHtml(w.createdAt)}</td><td>
      <form method="post" action="/dashboard/webhooks/${esc(w.webhookId)}/delete">${csrf}
      <button type="submit" class="danger">Delete</button></form></td></tr>`,
    )
    .join('');
  const list =
    webhooks.length === 0
      ? '<p class="muted" id="no-webhooks">No webhooks yet.</p>'
      : `<table id="webhook-list"><thead><tr><th>URL</th><th>Events</th><th>Format</th><th>Registered</th><th></th></tr></thead><tbody>${rows}</tbody></table>`;
  const typed = shown.typed;
  const checked = (name: string) => (typed?.events.includes(name) ? ' checked' : '');
  const checks = EVENTS.map(
    ([name, label]) =>
      `<label><input type="checkbox" name="event:${name}" value="on" style="width:auto"${checked(name)}> ${esc(label)} <code>${name}</code></label>`,
  ).join('');
  const selected = (format: string) => (typed?.format === format ? ' selected' : '');
  const form = `<form method="post" action="/dashboard/webhooks" id="webhook-form">${csrf}
    <label for="webhook-url">URL (https)</label><input id="webhook-url" name="url" type="url" required maxlength="2048" value="${esc(typed?.url ?? '')}">
    <fieldset><legend>Events</legend>${checks}</fieldset>
    <label for="webhook-format">Format</label><select id="webhook-format" name="format">
    <option value="json"${selected('json')}>JSON (signed adsmcp event)</option><option value="slack"${selected('slack')}>Slack-compatible message</option></select>
    <p><button type="submit" id="register-webhook">Register</button></p></form>`;
  const log = deliveries
    .map(
      (
        d,
      ) => `<tr class="delivery"><td>${timeHtml(d.at)}</td><td>${esc(d.event)}</td><td>${subjectHtml(d.event, d.subjectId)}</td>
      <td class="v">${esc(d.url)}</td><td>${esc(d.attempt)}</td><td class="outcome">${esc(d.outcome)}</td>
      <td>${d.responseStatus === 0 ? '' : esc(d.responseStatus)}</td><td class="v">${esc(d.error)}</td></tr>`,
    )
    .join('');
  const logTable =
    deliveries.length === 0
      ? '<p class="muted">Nothing delivered yet.</p>'
      : `<table id="delivery-log"><thead><tr><th>At</th><th>Event</th><th>Subject</th><th>URL</th><th>Attempt</th><th>Outcome</th><th>HTTP</th><th>Error</th></tr></thead><tbody>${log}</tbody></table>`;
  return `${shown.message ? `<p class="error" role="alert">${esc(shown.message)}</p>` : ''}${secret}
    <section id="webhooks"><h2>Webhooks</h2>
    <p>Each event is POSTed to the URL as JSON, signed with the webhook's secret (HMAC-SHA256 over the time and the body),
    and tried again with a growing wait until the receiver answers 2xx. Deliveries name the change and link its review page;
    they never carry a credential.</p>${list}</section>
    <section id="register"><h2>Register a webhook</h2>${form}</section>
    <section id="deliveries"><h2>Delivery log</h2>${logTable}</section>${localTimeScript}`;
}

/** Why the changes service refused, as a page message; the role message for a refusal of the caller. */
function refusal(err: unknown): { status: number; message: string } {
  const e = ConnectError.from(err);
  if (e.code === Code.Unimplemented)
    return { status: 503, message: 'Webhooks are not served by this deployment.' };
  return decisionRefusal(e, ADMIN_ONLY);
}

export function registerWebhooksPage(app: FastifyInstance, deps: GatewayDeps, h: AccountPageHelpers): void {
  const show = async (reply: FastifyReply, s: SessionView, shown: Shown = {}) => {
    let body: string;
    let status = shown.status ?? 200;
    try {
      body = await webhooksHtml(deps, s, shown);
    } catch (err) {
      const r = refusal(err);
      status = r.status;
      body = `<p class="error" role="alert">${esc(r.message)}</p>`;
    }
    return reply
      .code(status)
      .type('text/html')
      .send(page('Webhooks', body, h.user(s)));
  };

  app.get('/dashboard/webhooks', async (req, reply) => {
    const s = await h.session(req);
    if (!s) return reply.redirect(signInFirst(req), 303);
    return show(reply, s);
  });

  app.post('/dashboard/webhooks', async (req, reply) => {
    const s = await h.checkedPost(req, reply);
    if (!s) return reply;
    const body = (req.body ?? {}) as Record<string, unknown>;
    const events = EVENTS.map(([name]) => name).filter((name) => body[`event:${name}`] === 'on');
    const url = typeof body.url === 'string' ? body.url.trim() : '';
    const format = typeof body.format === 'string' ? body.format : 'json';
    try {
      const created = await deps
        .clientOf(WebhooksService)
        .createWebhook(
          { url, events, format, reviewBaseUrl: deps.publicUrl },
          onBehalfOf(sessionPrincipal(s)),
        );
      return show(reply, s, {
        status: 201,
        created: { webhookId: created.webhook?.webhookId ?? '', secret: created.secret },
      });
    } catch (err) {
      const r = refusal(err);
      return show(reply, s, { status: r.status, message: r.message, typed: { url, events, format } });
    }
  });

  app.post<{ Params: { id: string } }>('/dashboard/webhooks/:id/delete', async (req, reply) => {
    const s = await h.checkedPost(req, reply);
    if (!s) return reply;
    // An id that is not a UUID, or names no webhook of the workspace, is the page's 404.
    const noSuch = { status: 404, message: 'There is no such webhook in this workspace.' };
    if (!isUuid(req.params.id)) return show(reply, s, noSuch);
    try {
      await deps
        .clientOf(WebhooksService)
        .deleteWebhook({ webhookId: req.params.id }, onBehalfOf(sessionPrincipal(s)));
    } catch (err) {
      if (ConnectError.from(err).code === Code.NotFound) return show(reply, s, noSuch);
      const r = refusal(err);
      return show(reply, s, { status: r.status, message: r.message });
    }
    return reply.redirect('/dashboard/webhooks', 303);
  });
}
