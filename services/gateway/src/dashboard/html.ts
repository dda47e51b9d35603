/** Server-rendered HTML for the dashboard: escaping and the page frame. */
import { showHidden, showStackedMarks } from '@adsmcp/runtime/text';

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);

/**
 * Escapes text for HTML content and attribute values. Every page is built with it, so nothing
 * from the platform's live state or a stored change reaches a person with its control or format
 * characters acting unseen: each is shown as a token such as ⟨U+202E⟩, and marks stacked past
 * what real text stacks as `⟨9 combining marks⟩`, which would otherwise draw over the page.
 */
export function esc(value: unknown): string {
  return escapeHtml(showStackedMarks(showHidden(String(value ?? ''), true)));
}

/**
 * Escapes text that is already shown for a person (its hidden characters, and maybe its spaces,
 * spelled out as tokens): esc would spell out the tokens' own brackets a second time. Stacked
 * marks are bounded here too; that is idempotent.
 */
export function htmlText(shown: string): string {
  return escapeHtml(showStackedMarks(shown));
}

const STYLE = `
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:12px 24px;display:flex;justify-content:space-between;align-items:center}
header form{margin:0} main{max-width:1000px;margin:24px auto;padding:0 24px}
section{background:#fff;border:1px solid #dde1e7;border-radius:8px;padding:16px 20px;margin-bottom:20px}
h1{font-size:20px;margin:0} h2{font-size:17px;margin:0 0 12px}
table{border-collapse:collapse;width:100%} th,td{text-align:left;padding:6px 8px;border-bottom:1px solid #eceff3;font-size:14px}
button{font:inherit;padding:5px 12px;border-radius:6px;border:1px solid #9aa3b2;background:#fff;cursor:pointer}
button.danger{border-color:#c0392b;color:#c0392b} .muted{color:#6b7385} .error{color:#c0392b}
label{display:block;margin:10px 0 4px} input{font:inherit;padding:7px;width:100%;box-sizing:border-box}
.login{max-width:360px;margin:80px auto}
tr.inactive td{color:#6b7385} tr.inactive td.state{color:#c0392b;font-weight:600}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f6f7f9;padding:8px;border-radius:6px}
.mark{display:block;font-size:12px;font-weight:600} .mark.conflict{color:#b9770e} .mark.waiting{color:#1f618d}
.notice{background:#fef9e7;border:1px solid #f5d76e;border-radius:6px;padding:8px 12px}
td,th,code,h1,h2{overflow-wrap:anywhere} nav{background:#2b3344;padding:6px 24px;display:flex;flex-wrap:wrap;gap:4px 16px}
nav a{color:#dfe4ee;text-decoration:none;font-size:14px} nav a:hover{text-decoration:underline}
form.filters{display:flex;flex-wrap:wrap;gap:8px;align-items:end;margin-bottom:12px} form.filters label{margin:0;font-size:13px;max-width:100%} select{max-width:100%}
form.filters input,form.filters select{width:auto;max-width:100%;font:inherit;padding:5px} form.filters select{max-width:min(22em,100%)}
td form{margin:0} td select{font:inherit;padding:4px}
.v{white-space:pre-wrap;overflow:hidden;overflow-wrap:anywhere} .summary{white-space:pre-wrap;overflow:hidden}
.host-note{display:block;font-size:13px;color:#6b7385;white-space:normal}
.host-warning{display:block;margin:4px 0;padding:6px 10px;border:2px solid #c0392b;border-radius:6px;background:#fdecea;color:#922b21;font-weight:600;font-size:14px;white-space:normal}
.legend{font-size:13px;color:#6b7385} td.field{overflow-wrap:break-word}`;

/** The dashboard's pages, in the order the navigation lists them. */
const NAV: readonly [string, string][] = [
  ['/dashboard', 'Overview'],
  ['/dashboard/changes', 'Changes'],
  ['/dashboard/proposals', 'Proposals'],
  ['/dashboard/accounts', 'Ad accounts'],
  ['/dashboard/connections', 'Connections'],
  ['/dashboard/members', 'Members'],
  ['/dashboard/features', 'Features'],
  ['/dashboard/settings', 'Settings'],
  ['/dashboard/audit', 'Audit log'],
];
const NAV_HTML = `<nav aria-label="Dashboard">${NAV.map(([href, label]) => `<a href="${href}">${label}</a>`).join('')}</nav>`;

export function page(
  title: string,
  body: string,
  user?: { email: string; workspace: string; csrf: string },
): string {
  const head = user
    ? `<header><h1>${esc(user.workspace)}</h1><div>${esc(user.email)}
       <form method="post" action="/dashboard/logout" style="display:inline"><input type="hidden" name="csrf" value="${esc(user.csrf)}">
       <button type="submit">Sign out</button></form></div></header>${NAV_HTML}`
    : '';
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(title)}</title><style>${STYLE}</style></head><body>${head}<main>${body}</main></body></html>`;
}
