/**
 * The dashboard's review of prepared changes: what each would send, how it differs from the
 * object as it was when prepared, and Approve / Reject. Approval is recorded for the signed-in
 * person, and only for the digest they were shown.
 */

import type { Change } from '@adsmcp/proto/changes/v1/changes_pb';
import { diffRows } from '@adsmcp/runtime/change-diff';
import { isUuid } from '@adsmcp/runtime/ids';
import type { Principal } from '@adsmcp/runtime/principal';
import { Code, ConnectError } from '@connectrpc/connect';
import { type GatewayDeps, onBehalfOf } from '../deps.ts';
import { actorHtml, type People } from './change-actors.ts';
import { esc } from './html.ts';

function parse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

const fmt = (v: unknown) =>
  v === undefined ? '<span class="muted">(unset)</span>' : `<code>${esc(JSON.stringify(v))}</code>`;

/** A table of changes; `people` names who prepared each (see loadPeople). */
export function changeListHtml(changes: Change[], people: People): string {
  if (changes.length === 0) return '<p class="muted">No changes yet.</p>';
  return `<table><thead><tr><th>Status</th><th>Change</th><th>Prepared</th><th>Prepared by</th><th></th></tr></thead><tbody>${changes
    .map(
      (c) =>
        `<tr data-change="${esc(c.changeId)}"><td class="state">${esc(c.status)}</td><td>${esc(c.summary)}</td><td>${esc(c.preparedAt)}</td><td>${actorHtml(c.preparedBy, people)}</td><td><a href="/dashboard/changes/${esc(c.changeId)}">Review</a></td></tr>`,
    )
    .join('')}</tbody></table>`;
}

/** The review page of one change; `people` names who acted on it (see loadPeople). */
export function changeDetailHtml(
  c: Change,
  people: People,
  csrf: string,
  canDecide: boolean,
  message?: string,
): string {
  const body = parse(c.operation?.bodyJson ?? '');
  const before = parse(c.targetBeforeJson);
  const rows = c.operation?.path.endsWith('/archive')
    ? [{ field: 'status', before: (before as { status?: unknown } | undefined)?.status, after: 'archived' }]
    : diffRows(before, body);
  const decide =
    c.status === 'prepared' && canDecide
      ? `<form method="post" action="/dashboard/changes/${esc(c.changeId)}/approve" style="display:inline">
           <input type="hidden" name="csrf" value="${esc(csrf)}"><input type="hidden" name="digest" value="${esc(c.digest)}">
           <button type="submit" id="approve">Approve</button></form>
         <form method="post" action="/dashboard/changes/${esc(c.changeId)}/reject">
           <input type="hidden" name="csrf" value="${esc(csrf)}">
           <label for="reason">Reason for rejecting</label><input id="reason" name="reason" required maxlength="2000">
           <p><button class="danger" type="submit" id="reject">Reject</button></p></form>`
      : c.status === 'prepared'
        ? '<p class="muted">Your role can review changes but not approve or reject them.</p>'
        : '';
  const by = (at: string, actor: string) => (at ? `${esc(at)} by ${actorHtml(actor, people)}` : '');
  // Each fact as HTML, left out when empty.
  const facts: [string, string, string?][] = [
    ['Status', esc(c.status), 'status'],
    ['Account', esc(c.accountId)],
    ['Prepared', by(c.preparedAt, c.preparedBy), 'prepared-by'],
    ['Approved', by(c.approvedAt, c.approvedBy), 'approved-by'],
    [
      'Rejected',
      c.rejectedAt ? `${by(c.rejectedAt, c.rejectedBy)}: ${esc(c.rejectReason)}` : '',
      'rejected-by',
    ],
    ['Apply requested', by(c.applyRequestedAt, c.applyRequestedBy), 'apply-requested-by'],
    ['Applied', esc(c.appliedAt)],
    ['Error', esc(c.error)],
  ];
  return `<p><a href="/dashboard/changes">← All changes</a></p>
    ${message ? `<p class="error" role="alert">${esc(message)}</p>` : ''}
    <section><h2>${esc(c.summary)}</h2>
    <table>${facts
      .filter(([, v]) => v !== '')
      .map(([k, v, id]) => `<tr><th>${esc(k)}</th><td${id ? ` id="${id}"` : ''}>${v}</td></tr>`)
      .join('')}</table></section>
    <section><h2>What changes</h2>
    <table><thead><tr><th>Field</th><th>Before (when prepared)</th><th>After</th></tr></thead><tbody>${rows
      .map((r) => `<tr><td>${esc(r.field)}</td><td>${fmt(r.before)}</td><td>${fmt(r.after)}</td></tr>`)
      .join('')}</tbody></table></section>
    <section><h2>Exact request</h2>
    <p><code>${esc(c.operation?.method)} ${esc(c.operation?.path)}</code></p>
    <pre id="payload">${esc(JSON.stringify(body, null, 2))}</pre>
    <p class="muted">Digest <code id="digest">${esc(c.digest)}</code>: approval is recorded for exactly this payload.</p>
    ${decide}</section>`;
}

/** The principal for a dashboard session's calls. */
export function sessionPrincipal(s: {
  workspace_id: string;
  user_id: string;
  role: Principal['role'];
}): Principal {
  return {
    workspaceId: s.workspace_id,
    credentialId: `dashboard:${s.user_id}`,
    userId: s.user_id,
    role: s.role,
    scopes: s.role === 'viewer' ? ['read'] : ['read', 'write'],
    via: 'dashboard',
  };
}

export async function loadChange(deps: GatewayDeps, p: Principal, id: string): Promise<Change | undefined> {
  if (!isUuid(id)) return undefined;
  try {
    return (await deps.changes.getChange({ changeId: id }, onBehalfOf(p))).change;
  } catch (err) {
    if (ConnectError.from(err).code === Code.NotFound) return undefined;
    throw err;
  }
}
