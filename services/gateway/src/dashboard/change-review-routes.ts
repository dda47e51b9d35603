/** A change's review page, and the decisions taken on it: approve, reject, or settle its outcome. */

import type { Change } from '@adsmcp/proto/changes/v1/changes_pb';
import { ConnectError } from '@connectrpc/connect';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { type GatewayDeps, onBehalfOf } from '../deps.ts';
import { insertAudit } from '../store/identity-store.ts';
import type { SessionView } from '../store/session-store.ts';
import { loadPeople } from './change-actors.ts';
import {
  changeDetailHtml,
  loadChange,
  loadReview,
  sessionPrincipal,
  type TypedOnReview,
} from './change-pages.ts';
import type { DashboardContext } from './dashboard-context.ts';
import { decisionRefusal, formText } from './form-body.ts';
import { page } from './html.ts';
import { signInFirst } from './sign-in-next.ts';

export function registerChangeReviewRoutes(
  app: FastifyInstance,
  deps: GatewayDeps,
  ctx: DashboardContext,
): void {
  registerChangeReviewPage(app, deps, ctx);
  registerChangeDecisions(app, deps, ctx);
  registerChangeResolution(app, deps, ctx);
}

function registerChangeReviewPage(
  app: FastifyInstance,
  deps: GatewayDeps,
  { session, user }: DashboardContext,
): void {
  app.get<{ Params: { id: string } }>('/dashboard/changes/:id', async (req, reply) => {
    const s = await session(req);
    if (!s) return reply.redirect(signInFirst(req), 303);
    const review = await loadReview(deps, sessionPrincipal(s), req.params.id);
    if (!review) return noSuchChange(reply, user(s));
    const people = await loadPeople(deps.pool, s.workspace_id, [review.change]);
    return reply
      .type('text/html')
      .send(
        page(
          'Review change',
          changeDetailHtml(review.change, people, s.csrf_token, s.role !== 'viewer', review),
          user(s),
        ),
      );
  });
}

function registerChangeDecisions(
  app: FastifyInstance,
  deps: GatewayDeps,
  { checkedPost, user }: DashboardContext,
): void {
  for (const decision of ['approve', 'reject'] as const) {
    app.post<{ Params: { id: string } }>(`/dashboard/changes/:id/${decision}`, async (req, reply) => {
      const s = await checkedPost(req, reply);
      if (!s) return reply;
      const principal = sessionPrincipal(s);
      const change = await loadChange(deps, principal, req.params.id);
      if (!change) return noSuchChange(reply, user(s));
      const body = (req.body ?? {}) as Record<string, string>;
      try {
        if (decision === 'approve') {
          await deps.changes.approveChange(
            { changeId: change.changeId, digest: String(body.digest ?? '') },
            onBehalfOf(principal),
          );
        } else {
          await deps.changes.rejectChange(
            { changeId: change.changeId, reason: String(body.reason ?? '') },
            onBehalfOf(principal),
          );
        }
      } catch (err) {
        const refusal = decisionRefusal(ConnectError.from(err), `Your role cannot ${decision} changes.`);
        const typed = decision === 'reject' ? { rejectReason: String(body.reason ?? '') } : {};
        return refusedReview(deps, reply, s, user(s), change, refusal, typed);
      }
      await insertAudit(deps.pool, {
        workspaceId: s.workspace_id,
        actor: `user:${s.user_id}`,
        action: decision === 'approve' ? 'change.approved' : 'change.rejected',
        target: change.changeId,
        detail: { digest: change.digest },
      });
      return reply.redirect(`/dashboard/changes/${change.changeId}`, 303);
    });
  }
}

function registerChangeResolution(
  app: FastifyInstance,
  deps: GatewayDeps,
  { checkedPost, user }: DashboardContext,
): void {
  // Settling a change whose apply outcome is unknown: the changes service enforces who may, and which.
  app.post<{ Params: { id: string } }>('/dashboard/changes/:id/resolve', async (req, reply) => {
    const s = await checkedPost(req, reply);
    if (!s) return reply;
    const principal = sessionPrincipal(s);
    const change = await loadChange(deps, principal, req.params.id);
    if (!change) return noSuchChange(reply, user(s));
    const body = (req.body ?? {}) as Record<string, unknown>;
    try {
      await deps.changes.resolveChange(
        { changeId: change.changeId, resolution: formText(body.resolution), note: formText(body.note) },
        onBehalfOf(principal),
      );
    } catch (err) {
      const refusal = decisionRefusal(
        ConnectError.from(err),
        'Your role cannot settle the outcome of changes.',
      );
      return refusedReview(deps, reply, s, user(s), change, refusal, {
        settle: { resolution: formText(body.resolution), note: formText(body.note) },
      });
    }
    return reply.redirect(`/dashboard/changes/${change.changeId}`, 303);
  });
}

/** The user a page's header names (dashboard-context's `user`). */
type PageUser = Parameters<typeof page>[2];

/** The 404 page of a change id that names no change of the workspace (or is not a UUID). */
export function noSuchChange(reply: FastifyReply, pageUser: PageUser) {
  return reply
    .code(404)
    .type('text/html')
    .send(page('Not found', '<p>No such change in this workspace.</p>', pageUser));
}

/**
 * The review page shown again after a refused decision: it says why (a stale object, a decision
 * made meanwhile) and offers only what can still be done, with what was typed still in its field.
 */
async function refusedReview(
  deps: GatewayDeps,
  reply: FastifyReply,
  s: SessionView,
  pageUser: PageUser,
  change: Change,
  refusal: { status: number; message: string },
  typed: TypedOnReview,
) {
  const fresh = (await loadReview(deps, sessionPrincipal(s), change.changeId)) ?? { change, conflicts: [] };
  const people = await loadPeople(deps.pool, s.workspace_id, [fresh.change]);
  return reply
    .code(refusal.status)
    .type('text/html')
    .send(
      page(
        'Review change',
        changeDetailHtml(
          fresh.change,
          people,
          s.csrf_token,
          s.role !== 'viewer',
          fresh,
          refusal.message,
          typed,
        ),
        pageUser,
      ),
    );
}
