/**
 * The workspace's features. Features are switched by the platform's operator with the admin
 * command (`npm run admin -- enable-feature <feature> --workspace <id>`), which works on the
 * gateway's database directly; dashboard users have no platform-administrator role. So this page
 * shows them read only, to the workspace's admins, and says how they are switched.
 */
import type { FastifyInstance } from 'fastify';
import type { GatewayDeps } from '../deps.ts';
import { workspaceFeatures } from '../store/dashboard-store.ts';
import type { AccountPageHelpers } from './account-pages.ts';
import { esc, page } from './html.ts';
import { signInFirst } from './sign-in-next.ts';

/** The features an operator can turn on (as the admin command knows them), in words. */
export const KNOWN_FEATURES: Record<string, string> = {
  optimizer: 'the optimizer tools: optimization runs and proposals',
  performance_imports: 'the performance-import tools',
};

export function featuresHtml(features: readonly string[]): string {
  const names = [...new Set([...Object.keys(KNOWN_FEATURES), ...features])];
  const rows = names
    .map((f) => {
      const on = features.includes(f);
      return `<tr data-feature="${esc(f)}"><td><code>${esc(f)}</code></td><td>${esc(KNOWN_FEATURES[f] ?? '')}</td><td class="state">${on ? 'on' : 'off'}</td></tr>`;
    })
    .join('');
  return `<table id="features"><thead><tr><th>Feature</th><th>What it turns on</th><th>State</th></tr></thead><tbody>${rows}</tbody></table>`;
}

export function registerFeaturesPage(app: FastifyInstance, deps: GatewayDeps, h: AccountPageHelpers): void {
  app.get('/dashboard/features', async (req, reply) => {
    const s = await h.session(req);
    if (!s) return reply.redirect(signInFirst(req), 303);
    if (s.role !== 'admin')
      return reply
        .code(403)
        .type('text/html')
        .send(
          page(
            'Features',
            '<p class="error" role="alert">Only a workspace admin can see the workspace’s features.</p>',
            h.user(s),
          ),
        );
    const features = await workspaceFeatures(deps.pool, s.workspace_id);
    return reply.type('text/html').send(
      page(
        'Features',
        `<section><h2>Features</h2>${featuresHtml(features)}
        <p class="muted" id="features-read-only">Read only: features are switched by the platform operator with
        <code>npm run admin -- enable-feature &lt;feature&gt; --workspace ${esc(s.workspace_id)}</code> (or <code>disable-feature</code>);
        the dashboard has no platform-administrator role. A change applies from the next tool call and appears in the audit log.</p></section>`,
        h.user(s),
      ),
    );
  });
}
