/**
 * The workspace's MCP connections (pasted tokens and OAuth grants): named, with their scopes,
 * when each was created and last used and when it expires, filterable and paged. A connection is
 * revoked with a CSRF-protected form and stops working at once (the gateway forgets it here, and
 * the identity trigger tells every other replica). A member revokes their own connections; only
 * a workspace admin revokes someone else's.
 */
import { isUuid } from '@adsmcp/runtime/ids';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { GatewayDeps } from '../deps.ts';
import {
  type ConnectionFilter,
  type ConnectionRow,
  findConnection,
  listConnectionsPage,
} from '../store/dashboard-store.ts';
import { insertAudit, revokeCredential } from '../store/identity-store.ts';
import type { SessionView } from '../store/session-store.ts';
import type { AccountPageHelpers } from './account-pages.ts';
import { emptyStateHtml, esc, page } from './html.ts';
import { localTimeScript, timeHtml } from './local-time.ts';
import { PAGE_SIZE, pageNumber, pagerHtml, queryText } from './paging.ts';
import { signInFirst } from './sign-in-next.ts';

const STATES = ['any', 'active', 'revoked', 'expired'] as const;

/** What a connection is now: active, revoked or expired. */
export function connectionState(c: ConnectionRow, now = new Date()): 'active' | 'revoked' | 'expired' {
  if (c.revoked_at) return 'revoked';
  return c.expires_at && c.expires_at <= now ? 'expired' : 'active';
}

/** Whether the signed-in person may revoke `c`: their own, or anyone's for an admin. */
export const mayRevoke = (s: SessionView, c: Pick<ConnectionRow, 'user_id'>) =>
  s.role === 'admin' || c.user_id === s.user_id;

/**
 * Revokes the connection `id` for the signed-in person, by the one rule of the dashboard (their
 * own, or anyone's for an admin), with its audit entry; or says why not (404 or 403).
 */
export async function revokeConnection(
  deps: GatewayDeps,
  s: SessionView,
  id: string,
): Promise<{ refused?: { status: 403 | 404; message: string } }> {
  const c = isUuid(id) ? await findConnection(deps.pool, s.workspace_id, id) : undefined;
  if (!c) return { refused: { status: 404, message: 'There is no such connection in this workspace.' } };
  if (!mayRevoke(s, c))
    return {
      refused: { status: 403, message: 'Only a workspace admin can revoke another person’s connection.' },
    };
  const revoked = await revokeCredential(deps.pool, c.id, s.workspace_id);
  deps.forgetCredential?.(c.id);
  if (revoked) {
    await insertAudit(deps.pool, {
      workspaceId: s.workspace_id,
      actor: `user:${s.user_id}`,
      action: 'credential.revoked',
      target: c.id,
      detail: { by: 'dashboard', name: c.name },
    });
  }
  return {};
}

function rowHtml(s: SessionView, c: ConnectionRow): string {
  const state = connectionState(c);
  const stateText = state === 'revoked' ? `revoked ${timeHtml(c.revoked_at)}` : esc(state);
  const action =
    state === 'active' && mayRevoke(s, c)
      ? `<form method="post" action="/dashboard/connections/${esc(c.id)}/revoke"><input type="hidden" name="csrf" value="${esc(s.csrf_token)}"><button class="danger" type="submit">Revoke</button></form>`
      : '';
  return `<tr data-connection="${esc(c.id)}"${state === 'active' ? '' : ' class="inactive"'}>
    <td class="name">${esc(c.name)}</td><td>${c.kind === 'oauth' ? 'OAuth' : 'token'}</td><td>${esc(c.user_email)}</td>
    <td>${esc(c.scopes.join(', '))}</td><td class="tool-groups">${c.tool_groups === null ? '<span class="muted">all</span>' : esc(c.tool_groups.join(', '))}</td><td>${timeHtml(c.created_at)}</td><td>${timeHtml(c.last_used_at)}</td>
    <td>${timeHtml(c.expires_at)}</td><td class="state">${stateText}</td><td>${action}</td></tr>`;
}

function filtersHtml(f: ConnectionFilter): string {
  const options = STATES.map(
    (st) =>
      `<option value="${st}"${f.state === st ? ' selected' : ''}>${st === 'any' ? 'any state' : st}</option>`,
  ).join('');
  return `<form class="filters" method="get" action="/dashboard/connections">
    <label>Name or person <input name="q" value="${esc(f.search)}" maxlength="200"></label>
    <label>State <select name="state">${options}</select></label>
    <button type="submit">Filter</button></form>`;
}

export function registerConnectionsPage(
  app: FastifyInstance,
  deps: GatewayDeps,
  h: AccountPageHelpers,
): void {
  app.get('/dashboard/connections', async (req, reply) => {
    const s = await h.session(req);
    if (!s) return reply.redirect(signInFirst(req), 303);
    const stateText = queryText(req.query, 'state');
    const number = pageNumber(req.query);
    const filter: ConnectionFilter = {
      search: queryText(req.query, 'q'),
      state: (STATES as readonly string[]).includes(stateText)
        ? (stateText as ConnectionFilter['state'])
        : 'any',
      limit: PAGE_SIZE,
      offset: (number - 1) * PAGE_SIZE,
    };
    const { rows, total } = await listConnectionsPage(deps.pool, s.workspace_id, filter);
    const table =
      rows.length === 0
        ? emptyStateHtml(
            'connections',
            [
              ['name or person', filter.search],
              ['state', filter.state === 'any' ? '' : filter.state],
            ],
            '/dashboard/connections',
          )
        : `<table id="connections"><thead><tr><th>Name</th><th>Kind</th><th>Person</th><th>Scopes</th><th>Tool groups</th><th>Created</th><th>Last used</th><th>Expires</th><th>State</th><th></th></tr></thead><tbody>${rows
            .map((c) => rowHtml(s, c))
            .join('')}</tbody></table>`;
    const who =
      s.role === 'admin'
        ? 'As a workspace admin you can revoke any connection.'
        : 'You can revoke your own connections; a workspace admin revokes anyone’s.';
    return reply.type('text/html').send(
      page(
        'Connections',
        `<section><h2>MCP connections</h2><p class="muted">${esc(who)} A revoked connection gets HTTP 401 from its next request. Tool groups are those a token was issued with; its MCP URL’s <code>?tools=</code> narrows within them.</p>
        ${filtersHtml(filter)}${table}${pagerHtml('/dashboard/connections', { q: filter.search, state: filter.state === 'any' ? '' : filter.state }, number, total)}</section>${localTimeScript}`,
        h.user(s),
      ),
    );
  });

  const refuse = (reply: FastifyReply, s: SessionView, status: number, message: string) =>
    reply
      .code(status)
      .type('text/html')
      .send(
        page(
          'Connections',
          `<p class="error" role="alert">${esc(message)}</p><p><a href="/dashboard/connections">Back to the connections</a></p>`,
          h.user(s),
        ),
      );

  app.post<{ Params: { id: string } }>('/dashboard/connections/:id/revoke', async (req, reply) => {
    const s = await h.checkedPost(req, reply);
    if (!s) return reply;
    const { refused } = await revokeConnection(deps, s, req.params.id);
    if (refused) return refuse(reply, s, refused.status, refused.message);
    return reply.redirect('/dashboard/connections', 303);
  });
}
