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

/**
 * A table with a header row becomes a list of cards, each cell under its column's name, when
 * the box it is in is narrower than `width`: the more columns, the sooner, so that no table is
 * made wider than its box or squeezes a column below its longest word.
 */
function cardRules(table: string, width: number): string {
  const t = table;
  return `@container (max-width:${width}px){
 ${t},${t}>tbody,${t}>tbody>tr,${t}>tbody>tr>td,${t}>tbody>tr>th{display:block;width:100%}
 ${t}>thead{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0,0,0,0)}
 ${t}>tbody>tr{border:1px solid var(--line);border-radius:8px;margin-bottom:var(--s3);padding:var(--s2)}
 ${t}>tbody>tr>td{border:0;padding:3px 4px;white-space:normal;overflow-wrap:anywhere;min-width:0}
 ${t}>tbody>tr>td[data-label]::before{content:attr(data-label);display:block;font-size:12px;color:var(--muted);font-weight:600}
 ${t}>tbody>tr>td:empty{display:none}}`;
}

const STYLE = `
:root{--ink:#1d2330;--muted:#4f586b;--line:#d5dae2;--soft:#eef1f5;--bg:#f6f7f9;--accent:#1f5fbf;--danger:#b03022;--warn-bg:#fef6dc;--warn-line:#e0b43c;
--s1:4px;--s2:8px;--s3:12px;--s4:16px;--s5:24px;--t-sm:13px;--t-md:15px;--t-lg:17px;--t-xl:20px}
*,*::before,*::after{box-sizing:border-box}
body{font:var(--t-md)/1.45 system-ui,sans-serif;margin:0;color:var(--ink);background:var(--bg)}
a{color:var(--accent)} a:hover{text-decoration-thickness:2px}
:focus-visible{outline:3px solid #1f5fbf;outline-offset:2px;border-radius:2px}
.skip{position:absolute;left:-9999px;top:0;background:#fff;color:var(--ink);padding:var(--s2) var(--s3);z-index:10} .skip:focus{left:var(--s2)}
header{background:#1d2330;color:#fff;padding:var(--s3) var(--s5);display:flex;flex-wrap:wrap;gap:var(--s2) var(--s4);justify-content:space-between;align-items:center}
header .who{display:flex;flex-wrap:wrap;gap:var(--s2);align-items:center;min-width:0;overflow-wrap:anywhere}
header form{margin:0} main{max-width:1200px;margin:var(--s5) auto;padding:0 var(--s5)}
section{background:#fff;border:1px solid var(--line);border-radius:8px;padding:var(--s4) 20px;margin-bottom:20px;min-width:0}
h1{font-size:var(--t-xl);margin:0} h2{font-size:var(--t-lg);margin:0 0 var(--s3)} h3{font-size:var(--t-md);margin:var(--s4) 0 var(--s2)}
table{border-collapse:collapse;width:100%} th,td{text-align:left;vertical-align:top;padding:6px 8px;border-bottom:1px solid var(--soft);font-size:14px;overflow-wrap:break-word}
thead th{font-size:var(--t-sm);color:var(--muted);font-weight:600;border-bottom:1px solid var(--line);white-space:nowrap}
button{font:inherit;padding:5px 12px;border-radius:6px;border:1px solid #7d879a;background:#fff;color:var(--ink);cursor:pointer}
button:hover{background:var(--soft)} button.danger{border-color:var(--danger);color:var(--danger)}
.muted{color:var(--muted)} .error{color:var(--danger)}
label{display:block;margin:10px 0 4px} input,textarea{font:inherit;padding:7px;width:100%;border:1px solid #7d879a;border-radius:4px}
select{font:inherit;max-width:100%;border:1px solid #7d879a;border-radius:4px;padding:4px;background:#fff;color:var(--ink)}
.login{max-width:360px;margin:80px auto}
tr.inactive td{color:var(--muted)} tr.inactive td.state{color:var(--danger);font-weight:600}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:var(--bg);padding:8px;border-radius:6px}
.mark{display:block;font-size:12px;font-weight:600} .mark.conflict{color:#8a5a00} .mark.waiting{color:#1f4f7a} .mark.stale{color:var(--danger)}
.notice{background:var(--warn-bg);border:1px solid var(--warn-line);border-radius:6px;padding:8px 12px}
code{overflow-wrap:anywhere;font-size:13px} h1,h2,h3,p,li,dd{overflow-wrap:break-word;min-width:0}
nav{background:#2b3344;padding:6px var(--s5)} nav ul{list-style:none;margin:0;padding:0;display:flex;flex-wrap:wrap;gap:var(--s1) var(--s4)}
nav a{color:#e9edf4;text-decoration:none;font-size:14px;display:inline-block;padding:2px 0} nav a:hover{text-decoration:underline} nav a[aria-current=page]{font-weight:700;border-bottom:2px solid #fff}
.count .sr-only{color:#fff} .count{display:inline-block;min-width:1.6em;margin-left:4px;padding:0 6px;border-radius:10px;background:#e9edf4;color:#1d2330;font-size:12px;font-weight:700;text-align:center}
form.filters{display:flex;flex-wrap:wrap;gap:8px;align-items:end;margin-bottom:12px} form.filters label{margin:0;font-size:var(--t-sm);max-width:100%}
form.filters input,form.filters select{width:auto;max-width:100%;font:inherit;padding:5px} form.filters select{max-width:min(22em,100%)}
td form{margin:0} td select{font:inherit;padding:4px}
.v{white-space:pre-wrap;overflow:hidden;overflow-wrap:anywhere} .summary{white-space:pre-wrap;overflow:hidden}
td.summary,td.name,td.object,td.detail,td.connection,td.account,td.long,#accounts td:first-child{overflow-wrap:anywhere;min-width:9em} td.summary,td.name,td.long{min-width:12em} td.object{min-width:16em}
.clamp{display:-webkit-box;-webkit-box-orient:vertical;-webkit-line-clamp:3;overflow:hidden}
.nowrap,td.num{white-space:nowrap} td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.host-note{display:block;font-size:var(--t-sm);color:var(--muted);white-space:normal}
.host-warning{display:block;margin:4px 0;padding:6px 10px;border:2px solid var(--danger);border-radius:6px;background:#fdecea;color:#8c2418;font-weight:600;font-size:14px;white-space:normal}
.legend{font-size:var(--t-sm);color:var(--muted)} td.field{overflow-wrap:break-word}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;border:1px solid currentColor;white-space:nowrap;background:#fff}
.st-prepared,.st-pending_review,.st-changes_requested{color:#8a5a00} .st-approved,.st-applying,.st-publishing{color:#1f4f7a}
.st-applied,.st-published,.st-active{color:#1d6b3a} .st-rejected,.st-failed,.st-revoked{color:var(--danger)} .st-expired,.st-cancelled{color:var(--muted)}
.empty{padding:var(--s4);border:1px dashed var(--line);border-radius:6px;color:var(--muted);background:var(--bg)}
.group{margin-top:var(--s4)} .group>h3{display:flex;flex-wrap:wrap;gap:var(--s2);align-items:baseline}
figure.chart{margin:0 0 var(--s4)} figure.chart svg{max-width:100%;height:auto;display:block} figure.chart figcaption{font-weight:600;margin-bottom:var(--s1)}
details.data summary{cursor:pointer;color:var(--accent);font-size:var(--t-sm)}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,460px),1fr));gap:var(--s4)}
.sr-only{position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;clip:rect(0,0,0,0);white-space:nowrap;border:0}
@media (max-width:640px){
 header,nav{padding-left:var(--s3);padding-right:var(--s3)} main{padding:0 var(--s2);margin-top:var(--s3)} section{padding:var(--s3)}
 table:not([data-cards]),table:not([data-cards])>tbody,table:not([data-cards])>tbody>tr,table:not([data-cards])>tbody>tr>th,table:not([data-cards])>tbody>tr>td,table:not([data-cards])>tr,table:not([data-cards])>tr>th,table:not([data-cards])>tr>td{display:block;width:100%}
 table:not([data-cards]) tr{padding:6px 0;border-bottom:1px solid var(--soft)} table:not([data-cards]) th,table:not([data-cards]) td{border:0;padding:2px 0}
 td,th{overflow-wrap:anywhere}
}
main,section{container-type:inline-size}
${cardRules('table[data-cards]:has(>thead th:nth-child(7))', 1000)}
${cardRules('table[data-cards]:has(>thead th:nth-child(5))', 760)}
${cardRules('table[data-cards]', 560)}`;

/** Where the inbox's count goes in the navigation (replaced per request, or removed). */
export const NAV_COUNT_MARK = '<!--inbox-count-->';

/** The dashboard's pages, in the order the navigation lists them. */
const NAV: readonly [string, string][] = [
  ['/dashboard', 'Overview'],
  ['/dashboard/inbox', 'Inbox'],
  ['/dashboard/changes', 'Changes'],
  ['/dashboard/proposals', 'Proposals'],
  ['/dashboard/accounts', 'Ad accounts'],
  ['/dashboard/connections', 'Connections'],
  ['/dashboard/members', 'Members'],
  ['/dashboard/features', 'Features'],
  ['/dashboard/settings', 'Settings'],
  ['/dashboard/webhooks', 'Webhooks'],
  ['/dashboard/audit', 'Audit log'],
];
/**
 * The navigation: each link carries a marker the dashboard's routes fill in for the signed-in
 * person (the inbox's count, and which page is the current one) once the page is rendered.
 */
const NAV_HTML = `<nav aria-label="Dashboard"><ul>${NAV.map(([href, label]) => `<li><a href="${href}">${label}${href === '/dashboard/inbox' ? NAV_COUNT_MARK : ''}</a></li>`).join('')}</ul></nav>`;

export function page(
  title: string,
  body: string,
  user?: { email: string; workspace: string; csrf: string },
): string {
  const head = user
    ? `<header><h1>${esc(user.workspace)}</h1><div class="who"><span>${esc(user.email)}</span>
       <form method="post" action="/dashboard/logout"><input type="hidden" name="csrf" value="${esc(user.csrf)}">
       <button type="submit">Sign out</button></form></div></header>${NAV_HTML}`
    : '';
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(title)}</title><style>${STYLE}</style></head><body><a class="skip" href="#main">Skip to content</a>${head}<main id="main">${user ? '<!--freeze-banner-->' : ''}${labelCells(body)}</main></body></html>`;
}

/**
 * Gives each body cell of a table with a header row its column's name (`data-label`), which
 * narrow screens show above the cell when rows become cards. Done on the finished HTML so every
 * page's tables get it; the markup is the dashboard's own (every value in it is escaped, so `<`
 * only starts our tags), which is why a few patterns suffice where an HTML parser would re-write
 * the whole page. A table holding another table is left as it is.
 */
export function labelCells(html: string): string {
  return html.replace(/<table\b[^>]*>(?:(?!<table\b)[\s\S])*?<\/table>/g, (table) => {
    const head = /<thead>([\s\S]*?)<\/thead>/.exec(table);
    if (head === null) return table;
    const labels = [...(head[1] ?? '').matchAll(/<th\b[^>]*>([\s\S]*?)<\/th>/g)].map((m) =>
      (m[1] ?? '').replace(/<[^>]*>/g, '').trim(),
    );
    const start = (head.index ?? 0) + head[0].length;
    const rows = table.slice(start).replace(/<tr\b[^>]*>[\s\S]*?<\/tr>/g, (row) => {
      let column = 0;
      // A row's own header cell (<th>) takes its column too; only data cells are labelled.
      return row.replace(/<t([hd])\b(?![^>]*data-label)/g, (cell, kind: string) => {
        const label = labels[column++] ?? '';
        return kind === 'h' || label === '' ? cell : `${cell} data-label="${label}"`;
      });
    });
    return table.slice(0, start).replace(/^<table\b/, '<table data-cards') + rows;
  });
}

/** A status as a coloured badge that says it in words (the colour only repeats the word). */
export function statusBadge(status: string, label = status.replaceAll('_', ' ')): string {
  return `<span class="badge st-${esc(status.replace(/[^a-z_]/g, ''))}">${esc(label)}</span>`;
}

/**
 * What an empty list says: that nothing matches, and which filters are set (with a link that
 * clears them), so a filtered list is never mistaken for an empty workspace.
 */
export function emptyStateHtml(
  what: string,
  filters: readonly [string, string][],
  clearHref: string,
): string {
  const set = filters.filter(([, v]) => v !== '');
  if (set.length === 0) return `<p class="empty" role="status">No ${esc(what)} yet.</p>`;
  const named = set.map(([k, v]) => `${esc(k)} <strong>${esc(v)}</strong>`).join(', ');
  return `<p class="empty" role="status">No ${esc(what)} match these filters: ${named}. <a href="${esc(clearHref)}">Clear the filters</a></p>`;
}
