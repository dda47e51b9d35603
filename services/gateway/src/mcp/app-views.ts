/**
 * The MCP Apps view of a prepared change (@modelcontextprotocol/ext-apps): prepare tools declare
 * `ui://adsmcp/change-review` in their `_meta.ui.resourceUri`; a host that supports MCP Apps
 * renders that HTML in a sandboxed frame and hands it the tool's result. The view then reads
 * `ui://adsmcp/change-review/<change_id>`, the review page's own rendering (change-pages.ts:
 * summary, before/after, exact request and digest, standards checked, conflicts, expiry, hidden
 * characters shown as tokens) without any form, and offers one button that asks the host to
 * open the dashboard's review page. It never approves: approval stays a signed-in person's, in the
 * dashboard. Clients without MCP Apps ignore the `_meta` and see the same result as before.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { ReadResourceResult } from '@modelcontextprotocol/server';
import { UriTemplate } from '@modelcontextprotocol/server';
import { changeDetailHtml, loadReview } from '../dashboard/change-pages.ts';
import { CHANGE_REVIEW_VIEW_URI } from './app-view-meta.ts';
import type { ResourceContext } from './resources.ts';
import { requireTool, uuidParam } from './surface-access.ts';

/** The MIME type ext-apps gives an app's HTML (RESOURCE_MIME_TYPE). */
export const APP_VIEW_MIME_TYPE = 'text/html;profile=mcp-app';
const CHANGE_FRAGMENT = new UriTemplate(`${CHANGE_REVIEW_VIEW_URI}/{change_id}`);

/**
 * The view as `resources/list` lists it (the first page, to a caller who may read changes): a host
 * may fetch and vet the HTML ahead of any tool call, as ext-apps suggests for UI resources.
 */
export const CHANGE_REVIEW_VIEW_LISTED = {
  uri: CHANGE_REVIEW_VIEW_URI,
  name: 'change-review-view',
  title: 'Prepared change (MCP Apps view)',
  description:
    'The MCP Apps view prepare tools link (_meta.ui.resourceUri): it shows the prepared change of the tool result ' +
    'and offers to open its review page in the dashboard. It never approves.',
  mimeType: APP_VIEW_MIME_TYPE,
} as const;

/** The view's per-change fragment, for `resources/templates/list`. */
export const CHANGE_REVIEW_FRAGMENT_TEMPLATE = {
  uriTemplate: CHANGE_FRAGMENT.toString(),
  name: 'change-review-view-fragment',
  title: 'Prepared change, as the MCP Apps view shows it',
  description:
    'The HTML the change-review view reads for one change of the workspace: the review page without any form ' +
    '(summary, before/after, exact request and digest). Deciding stays the dashboard’s.',
  mimeType: 'text/html',
} as const;

let shell: string | undefined;

/**
 * The ext-apps browser build (App with its dependencies) as a classic-scope module whose exports
 * land on `globalThis.McpApps`: the view is one self-contained HTML document (a host's sandbox
 * may load nothing else), so the library is inlined rather than fetched.
 */
function extAppsInline(): string {
  const require = createRequire(import.meta.url);
  const path = require.resolve('@modelcontextprotocol/ext-apps/app-with-deps');
  const code = readFileSync(path, 'utf8');
  const at = code.lastIndexOf('export{');
  if (at < 0) throw new Error('ext-apps: the browser build has no export list');
  const names = code
    .slice(at + 'export{'.length, code.indexOf('}', at))
    .split(',')
    .map((pair) => pair.trim().split(/\s+as\s+/))
    .map(([local, exported]) => `${exported ?? local}:${local}`);
  // `</script` inside the inlined code would end the element early.
  return `${code.slice(0, at)};globalThis.McpApps={${names.join(',')}};`.replace(/<\/script/gi, '<\\/script');
}

const VIEW_SCRIPT = `
const { App } = globalThis.McpApps;
const app = new App({ name: 'adsmcp change review', version: '1.0.0' });
const root = document.getElementById('review');
const open = document.getElementById('open-review');
let reviewUrl;
open.addEventListener('click', async () => {
  if (!reviewUrl) return;
  const r = await app.openLink({ url: reviewUrl });
  if (r && r.isError) document.getElementById('status').textContent = 'The host did not open the review page: ' + reviewUrl;
});
app.ontoolresult = async (result) => {
  const change = result.structuredContent || {};
  if (typeof change.change_id !== 'string') { root.textContent = 'This result names no prepared change.'; return; }
  reviewUrl = change.review_url;
  open.disabled = false;
  const read = await app.readServerResource({ uri: '${CHANGE_REVIEW_VIEW_URI}/' + encodeURIComponent(change.change_id) });
  const html = read.contents && read.contents[0] && read.contents[0].text;
  // The fragment is the gateway's own rendering, every value escaped as on the dashboard.
  if (typeof html === 'string') root.innerHTML = html;
  else root.textContent = 'The review could not be read.';
};
await app.connect();
`;

const STYLE = `body{font:14px/1.45 system-ui,sans-serif;margin:0;padding:12px;color:#1d2330}
table{border-collapse:collapse;width:100%} th,td{text-align:left;padding:4px 6px;border-bottom:1px solid #eceff3;vertical-align:top}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f6f7f9;padding:8px;border-radius:6px}
section{margin-bottom:12px} h2{font-size:15px;margin:8px 0} .muted{color:#6b7385} .v,.summary{white-space:pre-wrap;overflow-wrap:anywhere}
button{font:inherit;padding:6px 14px;border-radius:6px;border:1px solid #1f618d;background:#1f618d;color:#fff;cursor:pointer}
button:disabled{opacity:.5;cursor:default}`;

/** The view's HTML: built once per process (the inlined library does not change while it runs). */
export function changeReviewViewHtml(): string {
  shell ??= `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Prepared change</title><style>${STYLE}</style></head><body>
<p><button type="button" id="open-review" disabled>Review and approve in the dashboard</button>
<span class="muted">Approval happens only there, by a signed-in person.</span></p><p id="status" role="status"></p>
<div id="review"><p class="muted">Waiting for the prepared change…</p></div>
<script type="module">${extAppsInline()}</script>
<script type="module">${VIEW_SCRIPT}</script></body></html>`;
  return shell;
}

/** The view, or a change's review fragment; undefined for any other URI. */
export async function readAppView(
  ctx: ResourceContext,
  uri: string,
): Promise<ReadResourceResult | undefined> {
  if (uri === CHANGE_REVIEW_VIEW_URI) {
    return { contents: [{ uri, mimeType: APP_VIEW_MIME_TYPE, text: changeReviewViewHtml() }] };
  }
  const m = CHANGE_FRAGMENT.match(uri);
  if (m === null) return undefined;
  const changeId = uuidParam('change_id', m.change_id);
  // As the review text resource: a change is read as ads_get_change reads it.
  requireTool(ctx.catalogue, ctx.caller, 'ads_get_change', 'a change');
  const review = await loadReview(ctx.deps, ctx.caller.principal, changeId);
  if (review === undefined) return undefined;
  // No CSRF token and canDecide false: the fragment has no form; deciding is the dashboard's.
  const html = changeDetailHtml(review.change, new Map(), '', false, review);
  return { contents: [{ uri, mimeType: 'text/html', text: html }] };
}
