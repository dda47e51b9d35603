/**
 * Times on the dashboard's pages: each is an ISO instant in a `<time datetime>` (shown in UTC
 * without script), which a few lines of inline script rewrite in the viewer's own zone. The
 * script is allowed by its hash in the page's Content-Security-Policy, so no other script runs.
 */
import { createHash } from 'node:crypto';
import { localMinute } from '@adsmcp/runtime/zoned-format';
import { esc } from './html.ts';

/**
 * Rewrites every `time[datetime]` in the browser's zone, with the zone's short name, and every
 * amount (`data[data-currency]`, its value in micros) in the viewer's locale.
 */
export const LOCAL_TIME_SCRIPT = `for(const t of document.querySelectorAll('time[datetime]')){const d=new Date(t.getAttribute('datetime'));if(!isNaN(d)){t.textContent=d.toLocaleString(undefined,{year:'numeric',month:'short',day:'numeric',hour:'2-digit',minute:'2-digit',timeZoneName:'short'});t.dataset.local='1';}}for(const m of document.querySelectorAll('data[data-currency]')){try{m.textContent=new Intl.NumberFormat(undefined,{style:'currency',currency:m.dataset.currency}).format(Number(m.value)/1e6);m.dataset.local='1';}catch{}}`;

/** The CSP source that allows exactly LOCAL_TIME_SCRIPT. */
export const LOCAL_TIME_SCRIPT_SRC = `'sha256-${createHash('sha256').update(LOCAL_TIME_SCRIPT).digest('base64')}'`;

/** The script element to put at the end of a page that shows times. */
export const localTimeScript = `<script>${LOCAL_TIME_SCRIPT}</script>`;

/** An instant for a person: in their zone once the page's script ran, in UTC before. */
export function timeHtml(at: Date | string | null | undefined, none = 'never'): string {
  if (at === null || at === undefined || at === '') return esc(none);
  const d = typeof at === 'string' ? new Date(at) : at;
  if (Number.isNaN(d.getTime())) return esc(String(at));
  const iso = d.toISOString();
  return `<time datetime="${esc(iso)}">${esc(`${iso.slice(0, 16).replace('T', ' ')} UTC`)}</time>`;
}

/**
 * The same instant in an ad account's zone, e.g. "2026-11-23 08:15 Europe/Berlin", so a person
 * reads both their own time and the account's (budgets and schedules run on the account's day).
 */
export function accountTimeText(at: Date | string, timeZone: string): string {
  const d = typeof at === 'string' ? new Date(at) : at;
  try {
    return `${localMinute(d, timeZone)} ${timeZone}`;
  } catch {
    // An account zone the runtime does not know: say so rather than guess.
    return `(time zone ${timeZone} unknown)`;
  }
}

/** "in 5 h", "in 40 min" or "3 h ago": how far `at` is from `now`, for marks beside a time. */
export function relativeText(at: Date | string, now = new Date()): string {
  const d = typeof at === 'string' ? new Date(at) : at;
  const minutes = Math.round((d.getTime() - now.getTime()) / 60_000);
  const size = Math.abs(minutes);
  const text =
    size < 90
      ? `${size} min`
      : size < 48 * 60
        ? `${Math.round(size / 60)} h`
        : `${Math.round(size / 1440)} days`;
  return minutes >= 0 ? `in ${text}` : `${text} ago`;
}
