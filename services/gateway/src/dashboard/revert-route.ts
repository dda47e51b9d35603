/**
 * "Prepare revert" on an applied change's page: a person asks the changes service to prepare the
 * change that reverts it (ads_prepare_revert's RPC), and is taken to that change's review page.
 */
import { RevertService } from '@adsmcp/proto/changes/v1/revert_pb';
import { ConnectError } from '@connectrpc/connect';
import type { FastifyInstance } from 'fastify';
import { type GatewayDeps, onBehalfOf } from '../deps.ts';
import type { AccountPageHelpers } from './account-pages.ts';
import { loadChange, sessionPrincipal } from './change-pages.ts';
import { noSuchChange } from './change-review-routes.ts';
import { decisionRefusal } from './form-body.ts';
import { esc, page } from './html.ts';

export function registerRevertRoute(app: FastifyInstance, deps: GatewayDeps, h: AccountPageHelpers): void {
  app.post<{ Params: { id: string } }>('/dashboard/changes/:id/revert', async (req, reply) => {
    const s = await h.checkedPost(req, reply);
    if (!s) return reply;
    // An id that is not a UUID, or names no change of the workspace, is the page's 404.
    if (!(await loadChange(deps, sessionPrincipal(s), req.params.id))) return noSuchChange(reply, h.user(s));
    const body = (req.body ?? {}) as Record<string, unknown>;
    const reason = typeof body.reason === 'string' ? body.reason : '';
    try {
      const { change } = await deps
        .clientOf(RevertService)
        .prepareRevert({ changeId: req.params.id, reason }, onBehalfOf(sessionPrincipal(s)));
      return reply.redirect(
        `/dashboard/changes/${encodeURIComponent(change?.changeId ?? req.params.id)}`,
        303,
      );
    } catch (err) {
      // Why no revert was prepared (an object that moved, a revert already pending), and the way back.
      const e = ConnectError.from(err);
      // A refusal of access says why (the role, or a read-only connection to the account).
      const refusal = decisionRefusal(e, e.rawMessage);
      return reply
        .code(refusal.status)
        .type('text/html')
        .send(
          page(
            'Revert not prepared',
            `<p class="error" role="alert" id="revert-refusal">${esc(refusal.message)}</p><p><a href="/dashboard/changes/${esc(req.params.id)}">← Back to the change</a></p>`,
            h.user(s),
          ),
        );
    }
  });
}
