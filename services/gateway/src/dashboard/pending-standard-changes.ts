/**
 * Pending standard changes on an ad account's page: the saves and archives an MCP client asked for
 * that would loosen a standard, each with what it would let through, who asked and when. A
 * workspace admin confirms or rejects each here; the changes service enforces who may, refuses a
 * confirmation once the standard moved since, and records each step in the audit log.
 */
import { type PendingStandardChange, StandardsService } from '@adsmcp/proto/changes/v1/standards_pb';
import type { Account } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { isUuid } from '@adsmcp/runtime/ids';
import type { Principal } from '@adsmcp/runtime/principal';
import { Code, ConnectError } from '@connectrpc/connect';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { type GatewayDeps, onBehalfOf } from '../deps.ts';
import { listUsersByIds } from '../store/identity-store.ts';
import type { SessionView } from '../store/session-store.ts';
import type { AccountPageHelpers } from './account-pages.ts';
import { actorHtml, type People, parseActor } from './change-actors.ts';
import { sessionPrincipal } from './change-pages.ts';
import { decisionRefusal } from './form-body.ts';
import { esc } from './html.ts';
import { timeHtml } from './local-time.ts';

function rowsHtml(
  accountId: string,
  pending: readonly PendingStandardChange[],
  people: People,
  csrf: string,
  isAdmin: boolean,
): string {
  return pending
    .map((c) => {
      const renamed =
        c.proposedName !== undefined && c.proposedName !== c.standardName ? ` as ${esc(c.proposedName)}` : '';
      const what =
        c.action === 'archive'
          ? `archive <strong>${esc(c.standardName)}</strong>`
          : `save <strong>${esc(c.standardName)}</strong>${renamed}`;
      const form = (decision: 'confirm' | 'reject', label: string, cls: string) =>
        `<form method="post" action="/dashboard/accounts/${esc(accountId)}/standard-changes/${esc(c.pendingId)}/${decision}" style="display:inline"><input type="hidden" name="csrf" value="${esc(csrf)}"><button type="submit" class="${cls}" id="${decision}-${esc(c.pendingId)}">${label}</button></form>`;
      const actions = isAdmin
        ? `${form('confirm', 'Confirm', 'danger')} ${form('reject', 'Reject', '')}`
        : '<span class="muted">Only a workspace admin can confirm or reject it.</span>';
      return `<tr data-pending="${esc(c.pendingId)}"><td>${what} <span class="muted">(asked at revision ${esc(c.baseRevision)})</span></td><td>${timeHtml(c.requestedAt)}<br>${actorHtml(c.requestedBy, people)}</td><td><ul class="loosenings">${c.loosenings
        .map((l) => `<li>${esc(l)}</li>`)
        .join('')}</ul></td><td>${actions}</td></tr>`;
    })
    .join('');
}

/** The account page's "Pending standard changes" section. */
export async function pendingStandardChangesHtml(
  deps: GatewayDeps,
  s: SessionView,
  p: Principal,
  accountId: string,
): Promise<string> {
  const { changes } = await deps
    .clientOf(StandardsService)
    .listPendingStandardChanges({ accountId }, onBehalfOf(p));
  const ids = [...new Set(changes.flatMap((c) => parseActor(c.requestedBy).userId ?? []))];
  const people: People = new Map(
    (await listUsersByIds(deps.pool, s.workspace_id, ids)).map((u) => [u.id.toLowerCase(), u.email]),
  );
  const intro = `<p class="muted">An MCP client asked to loosen these standards. Until a workspace admin confirms one here, the
    standard in force keeps applying to every change prepared, approved or applied. Confirming applies exactly the change listed,
    and is refused if the standard was saved again since it was asked for.</p>`;
  const body =
    changes.length === 0
      ? '<p class="muted" id="no-pending-standard-changes">No standard changes are waiting.</p>'
      : `<table id="pending-standards"><thead><tr><th>Change</th><th>Asked</th><th>Would loosen</th><th></th></tr></thead><tbody>${rowsHtml(
          accountId,
          changes,
          people,
          s.csrf_token,
          s.role === 'admin',
        )}</tbody></table>`;
  return `<section id="pending-standard-changes"><h2>Pending standard changes</h2>${intro}${body}</section>`;
}

/** The Confirm and Reject posts; a refusal shows the account page again with why. */
export function registerPendingStandardChanges(
  app: FastifyInstance,
  deps: GatewayDeps,
  h: AccountPageHelpers,
  account: {
    find(p: Principal, id: string): Promise<Account | undefined>;
    refuse(
      reply: FastifyReply,
      s: SessionView,
      account: Account | undefined,
      status: number,
      message: string,
    ): Promise<unknown>;
  },
): void {
  for (const decision of ['confirm', 'reject'] as const) {
    app.post<{ Params: { id: string; pendingId: string } }>(
      `/dashboard/accounts/:id/standard-changes/:pendingId/${decision}`,
      async (req, reply) => {
        const s = await h.checkedPost(req, reply);
        if (!s) return reply;
        const principal = sessionPrincipal(s);
        const found = await account.find(principal, req.params.id);
        if (!found) return account.refuse(reply, s, undefined, 404, 'No such ad account in this workspace.');
        const noSuch = 'No such pending standard change for this ad account.';
        if (!isUuid(req.params.pendingId)) return account.refuse(reply, s, found, 404, noSuch);
        const client = deps.clientOf(StandardsService);
        const request = { pendingId: req.params.pendingId };
        try {
          if (decision === 'confirm')
            await client.confirmPendingStandardChange(request, onBehalfOf(principal));
          else await client.rejectPendingStandardChange(request, onBehalfOf(principal));
        } catch (err) {
          if (ConnectError.from(err).code === Code.NotFound)
            return account.refuse(reply, s, found, 404, noSuch);
          const refusal = decisionRefusal(
            ConnectError.from(err),
            'Only a workspace admin can confirm or reject a standard change.',
          );
          return account.refuse(reply, s, found, refusal.status, refusal.message);
        }
        return reply.redirect(`/dashboard/accounts/${found.accountId}#pending-standard-changes`, 303);
      },
    );
  }
}
