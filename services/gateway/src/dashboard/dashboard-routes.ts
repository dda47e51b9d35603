/**
 * The dashboard: sign-in for people, and the workspace overview (its ad accounts and MCP
 * connections, each connection revocable). Pages are server-rendered; every POST carries the
 * session's CSRF token and must come from our own origin.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { GatewayDeps } from '../deps.ts';
import { registerAccountPages } from './account-pages.ts';
import { registerAccountsListPage } from './accounts-list-page.ts';
import { registerAuditPage } from './audit-page.ts';
import { registerChangeReviewRoutes } from './change-review-routes.ts';
import { registerChangesListPage } from './changes-list-page.ts';
import { registerConnectionsPage } from './connections-page.ts';
import { registerControlsPages } from './controls-page.ts';
import { createDashboardContext, type DashboardContext } from './dashboard-context.ts';
import { registerDashboardHooks } from './dashboard-hooks.ts';
import { registerFeaturesPage } from './features-page.ts';
import { esc, page } from './html.ts';
import { registerInboxPage } from './inbox-page.ts';
import { registerMembersPage } from './members-page.ts';
import { registerOverviewPage } from './overview-page.ts';
import { registerProposalPages } from './proposal-pages.ts';
import { registerRevertRoute } from './revert-route.ts';
import { registerSettingsPage } from './settings-page.ts';
import { registerSignInRoutes } from './sign-in-routes.ts';
import { registerWebhooksPage } from './webhooks-page.ts';

export { readCookie, SESSION_COOKIE } from './dashboard-context.ts';

export interface DashboardOptions {
  publicUrl: string;
  /** Further origins whose pages may post the dashboard's forms (ALLOWED_ORIGINS). */
  allowedOrigins?: readonly string[];
  /**
   * Ends the OAuth authorization server's sign-in in the browser (oauth-routes.ts): on sign-out,
   * and on a sign-in as another person than the one it holds (`keep`, the person signing in).
   */
  endOAuthSignIn?: (req: FastifyRequest, reply: FastifyReply, keep?: string) => Promise<void>;
}

export function registerDashboardRoutes(
  app: FastifyInstance,
  deps: GatewayDeps,
  opts: DashboardOptions,
): void {
  const ctx = createDashboardContext(deps, opts);
  registerDashboardHooks(app, deps, ctx);
  registerSignInRoutes(app, deps, opts, ctx);
  registerOverviewPage(app, deps, ctx);
  registerChangeReviewRoutes(app, deps, ctx);
  registerProposalPages(app, deps, ctx);
  registerAccountPages(app, deps, ctx);
  registerAccountsListPage(app, deps, ctx);
  registerRevertRoute(app, deps, ctx);
  registerChangesListPage(app, deps, ctx);
  registerConnectionsPage(app, deps, ctx);
  registerMembersPage(app, deps, ctx);
  registerFeaturesPage(app, deps, ctx);
  registerSettingsPage(app, deps, ctx);
  registerControlsPages(app, deps, ctx);
  registerAuditPage(app, deps, ctx);
  registerInboxPage(app, deps, ctx);
  registerWebhooksPage(app, deps, ctx);
  registerDashboardNotFound(app, ctx);
}

function registerDashboardNotFound(app: FastifyInstance, { session, user }: DashboardContext): void {
  // Any other dashboard address is a 404 page a person can read (not the MCP endpoint's JSON-RPC error), with the way back.
  app.route({
    method: ['GET', 'POST'],
    url: '/dashboard/*',
    handler: async (req, reply) => {
      const path = req.url.split('?')[0] ?? '';
      const s = await session(req).catch(() => undefined);
      return reply
        .code(404)
        .type('text/html')
        .send(
          page(
            'Not found',
            `<section><h2>Not found</h2><p>There is no dashboard page at <code>${esc(path.slice(0, 200))}</code>.</p><p><a href="/dashboard">Go to the overview</a></p></section>`,
            s ? user(s) : undefined,
          ),
        );
    },
  });
}
