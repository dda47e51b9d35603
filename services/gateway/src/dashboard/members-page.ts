/**
 * The workspace's members and their roles. A workspace admin changes a member's role here
 * (admin, editor or viewer); the last admin cannot be demoted. A new role applies to the
 * member's MCP connections from their next request (the identity trigger makes every gateway
 * forget what it remembered of the workspace).
 */
import { isUuid } from '@adsmcp/runtime/ids';
import type { Role } from '@adsmcp/runtime/principal';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { GatewayDeps } from '../deps.ts';
import { listMembers, type MemberRow, setMemberRole } from '../store/dashboard-store.ts';
import { insertAudit } from '../store/identity-store.ts';
import type { SessionView } from '../store/session-store.ts';
import type { AccountPageHelpers } from './account-pages.ts';
import { esc, page } from './html.ts';
import { localTimeScript, timeHtml } from './local-time.ts';
import { signInFirst } from './sign-in-next.ts';

const ROLES: readonly Role[] = ['admin', 'editor', 'viewer'];

const ROLE_WORDS: Record<Role, string> = {
  admin: 'manages members, connections and spend guards; approves changes',
  editor: 'prepares and approves changes',
  viewer: 'reads only',
};

function roleCell(s: SessionView, m: MemberRow): string {
  if (s.role !== 'admin') return `<td class="role">${esc(m.role)}</td>`;
  const options = ROLES.map(
    (r) => `<option value="${r}"${r === m.role ? ' selected' : ''}>${r}</option>`,
  ).join('');
  return `<td class="role"><form method="post" action="/dashboard/members/${esc(m.id)}/role">
    <input type="hidden" name="csrf" value="${esc(s.csrf_token)}">
    <select name="role" aria-label="Role of ${esc(m.email)}">${options}</select> <button type="submit">Change role</button></form></td>`;
}

async function membersBody(deps: GatewayDeps, s: SessionView, message?: string): Promise<string> {
  const members = await listMembers(deps.pool, s.workspace_id);
  const rows = members
    .map(
      (m) =>
        `<tr data-member="${esc(m.id)}" data-role="${esc(m.role)}"><td>${esc(m.email)}${m.id === s.user_id ? ' <span class="muted">(you)</span>' : ''}</td>${roleCell(s, m)}<td>${timeHtml(m.created_at)}</td></tr>`,
    )
    .join('');
  const legend = ROLES.map((r) => `<li><b>${r}</b>: ${esc(ROLE_WORDS[r])}</li>`).join('');
  const note =
    s.role === 'admin'
      ? 'A workspace always keeps at least one admin.'
      : 'Only a workspace admin can change roles.';
  return `${message ? `<p class="error" role="alert">${esc(message)}</p>` : ''}<section><h2>Members and roles</h2>
    <table id="members"><thead><tr><th>Person</th><th>Role</th><th>Joined</th></tr></thead><tbody>${rows}</tbody></table>
    <ul class="muted">${legend}</ul><p class="muted">${esc(note)}</p></section>${localTimeScript}`;
}

export function registerMembersPage(app: FastifyInstance, deps: GatewayDeps, h: AccountPageHelpers): void {
  app.get('/dashboard/members', async (req, reply) => {
    const s = await h.session(req);
    if (!s) return reply.redirect(signInFirst(req), 303);
    return reply.type('text/html').send(page('Members', await membersBody(deps, s), h.user(s)));
  });

  const refuse = async (reply: FastifyReply, s: SessionView, status: number, message: string) =>
    reply
      .code(status)
      .type('text/html')
      .send(page('Members', await membersBody(deps, s, message), h.user(s)));

  app.post<{ Params: { id: string } }>('/dashboard/members/:id/role', async (req, reply) => {
    const s = await h.checkedPost(req, reply);
    if (!s) return reply;
    if (s.role !== 'admin') return refuse(reply, s, 403, 'Only a workspace admin can change roles.');
    const role = String((req.body as Record<string, unknown> | undefined)?.role ?? '');
    if (!(ROLES as readonly string[]).includes(role))
      return refuse(reply, s, 400, `role must be one of ${ROLES.join(', ')}; got "${role.slice(0, 40)}"`);
    const result = isUuid(req.params.id)
      ? await setMemberRole(deps.pool, s.workspace_id, req.params.id, role as Role)
      : undefined;
    if (result === undefined) return refuse(reply, s, 404, 'There is no such member in this workspace.');
    if (result === 'last-admin')
      return refuse(
        reply,
        s,
        409,
        'This is the workspace’s last admin: make another member an admin first, then change this role.',
      );
    if (result.previous !== role) {
      await insertAudit(deps.pool, {
        workspaceId: s.workspace_id,
        actor: `user:${s.user_id}`,
        action: 'member.role_changed',
        target: req.params.id,
        detail: { from: result.previous, to: role },
      });
    }
    return reply.redirect('/dashboard/members', 303);
  });
}
