/**
 * The values a person reviews before approving, shown so that they read what is sent: hidden
 * characters as `⟨U+202E⟩` tokens, the spaces a page would collapse as `␣` (`"Sale␣␣now␣"`), marks
 * stacked past what real text stacks as `⟨9 combining marks⟩`, and a URL whose host is not plain
 * ASCII with its host in ASCII form (the IDNA A-label, `shop.xn--exmple-4nf.com`), the Unicode form
 * and the warning beside it, never as Unicode alone. The dashboard's review pages and the
 * operator's `admin approve` both show values through here, so that they agree.
 */
import { showHidden, showHiddenAfterSpaces, showSpaces, showStackedMarks } from '@adsmcp/runtime/text';
import { asciiHost, asciiUrl, hostWarning, readHost } from '@adsmcp/runtime/url-host';
import { esc, htmlText } from './html.ts';

/** What a reviewer must be told about a URL's host: its ASCII form and how it is shown. */
export interface HostNote {
  /** The host's ASCII form. */
  host: string;
  /** `shown as "shop.exаmple.com": mixed Latin and Cyrillic letters; looks like shop.example.com`. */
  warning: string;
  /** The host mixes scripts or has letters confusable with ASCII ones: it can pass for another. */
  lookalike: boolean;
}

/** A piece of a value as shown: its text for a person, and the note on the URL it holds. */
export interface ShownPart {
  text: string;
  host?: HostNote;
}

/** A URL written with its host in ASCII form, and the note, when its host is not plain ASCII. */
function urlOf(value: string): { ascii: string; note: HostNote } | undefined {
  const ascii = asciiUrl(value);
  const warning = ascii === undefined ? undefined : hostWarning(ascii);
  if (ascii === undefined || warning === undefined) return undefined;
  const view = readHost(ascii);
  const lookalike =
    view !== undefined &&
    (view.mixedScript !== undefined || view.confusables.length > 0 || view.readsAs !== undefined);
  return { ascii, note: { host: asciiHost(ascii) ?? '', warning, lookalike } };
}

/** Text as a reviewer must read it: hidden characters, spaces and stacked marks spelled out. */
export function shownText(raw: string): string {
  return showStackedMarks(showSpaces(showHidden(raw)));
}

/** A JSON string literal, escapes and all (JSON text has no raw `"` or line break inside one). */
const LITERAL = /"(?:[^"\\]|\\.)*"/gsu;

/**
 * shownJsonParts shows JSON text: each string literal as written (its escapes such as `\n` and
 * `\"` kept, so that ordinary text is shown byte for byte) with its hidden characters, spaces and
 * stacked marks spelled out, and a URL whose host is not plain ASCII with that host in ASCII form
 * and the note beside it. The structure between literals is kept, line breaks and indentation too.
 */
export function shownJsonParts(json: string): ShownPart[] {
  const parts: ShownPart[] = [];
  let at = 0;
  for (const m of json.matchAll(LITERAL)) {
    if (m.index > at) parts.push({ text: showHidden(json.slice(at, m.index), true) });
    at = m.index + m[0].length;
    let value: unknown;
    try {
      value = JSON.parse(m[0]) as unknown;
    } catch {
      value = undefined;
    }
    const url = typeof value === 'string' ? urlOf(value) : undefined;
    // The literal's source, not its value: an escaped control character stays as its escape.
    const source = url === undefined ? m[0].slice(1, -1) : JSON.stringify(url.ascii).slice(1, -1);
    const text = `"${showStackedMarks(showSpaces(showHidden(source)))}"`;
    parts.push(url === undefined ? { text } : { text, host: url.note });
  }
  if (at < json.length) parts.push({ text: showHidden(json.slice(at), true) });
  return parts;
}

/** A value of a change's before/after rows as shown (see shownJsonParts); none for an unset one. */
export function shownValueParts(value: unknown): ShownPart[] {
  return value === undefined ? [] : shownJsonParts(JSON.stringify(value));
}

/**
 * A change's summary, as the changes service wrote it: its spaces already shown (`␣`, `⟨U+00A0⟩`),
 * which are kept as they are; hidden characters from the platform's names and any other bracket
 * are spelled out, and stacked marks bounded.
 */
export function shownSummary(summary: string): string {
  return showStackedMarks(showHiddenAfterSpaces(summary));
}

/**
 * The note beside a URL: a look-alike host as a warning a reviewer cannot miss (an alert, in
 * red, saying where a link really goes), any other host not in plain ASCII as its Unicode form.
 */
export function hostNoteHtml(n: HostNote): string {
  return n.lookalike
    ? `<strong class="host-warning" role="alert" data-host-warning>⚠ Look-alike host: ${esc(n.host)} is ${esc(n.warning)}. The link goes to ${esc(n.host)}; approve it only if that is the site you mean.</strong>`
    : `<span class="host-note" data-host-note>host ${esc(n.host)} is ${esc(n.warning)}</span>`;
}

/** The note beside a URL on a terminal, on the URL's line. */
export function hostNoteText(n: HostNote): string {
  return n.lookalike
    ? ` (WARNING, look-alike host: ${showHidden(n.host)} is ${showHidden(n.warning)}; the link goes to ${showHidden(n.host)})`
    : ` (host ${showHidden(n.host)} is ${showHidden(n.warning)})`;
}

/** Parts as HTML, each URL's note right after it. */
export function partsHtml(parts: readonly ShownPart[]): string {
  return parts.map((p) => htmlText(p.text) + (p.host === undefined ? '' : hostNoteHtml(p.host))).join('');
}

/** Parts as terminal text, each URL's note right after it. */
export function partsText(parts: readonly ShownPart[]): string {
  return parts.map((p) => p.text + (p.host === undefined ? '' : hostNoteText(p.host))).join('');
}

/**
 * A cell of a before/after table: the value as JSON in a box that keeps its white space and clips
 * whatever would draw outside it, the notes on its URLs below.
 */
export function valueHtml(value: unknown): string {
  if (value === undefined) return '<span class="muted">(unset)</span>';
  const parts = shownValueParts(value);
  const notes = parts.flatMap((p) => (p.host === undefined ? [] : [hostNoteHtml(p.host)]));
  return `<div class="v"><code>${parts.map((p) => htmlText(p.text)).join('')}</code>${notes.join('')}</div>`;
}

/** A text value shown bare (not as JSON), such as a proposal's title or landing page. */
export function textValueHtml(raw: string | undefined): string {
  if (raw === undefined) return '';
  const url = urlOf(raw);
  const text = htmlText(shownText(url === undefined ? raw : url.ascii));
  return `<span class="v">${text}</span>${url === undefined ? '' : hostNoteHtml(url.note)}`;
}

/** A summary as HTML (see shownSummary). */
export function summaryHtml(summary: string): string {
  return htmlText(shownSummary(summary));
}

/** What `␣` means, under a part of a page that shows one. */
export function spaceLegendHtml(html: string): string {
  return html.includes('␣') ? '<p class="legend" data-legend>␣ is a space</p>' : '';
}

/** Micros of a currency as a decimal amount, exactly (bigint arithmetic: no float rounding). */
export function microsToDecimal(micros: bigint | number | string): string {
  const value = BigInt(micros);
  const negative = value < 0n;
  const size = negative ? -value : value;
  const whole = size / 1_000_000n;
  const fraction = (size % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '').padEnd(2, '0');
  return `${negative ? '-' : ''}${whole}.${fraction}`;
}

/**
 * An amount for a person: in the account's currency, as the viewer's locale writes it (the
 * page's script formats `<data>`; without script it reads `EUR 12.50`), and, where the exact
 * figure matters (a cap, a bid), the micros beside it.
 */
export function moneyHtml(
  micros: bigint | number | string | undefined,
  currency: string | undefined,
  opts: { exact?: boolean } = {},
): string {
  if (micros === undefined || micros === '') return '';
  let decimal: string;
  try {
    decimal = microsToDecimal(micros);
  } catch {
    return esc(String(micros));
  }
  const code = /^[A-Z]{3}$/.test(currency ?? '') ? (currency as string) : undefined;
  const shown =
    code === undefined
      ? `${esc(decimal)} <span class="muted">(currency unknown)</span>`
      : `<data value="${esc(BigInt(micros).toString())}" data-currency="${code}">${esc(`${code} ${decimal}`)}</data>`;
  return opts.exact
    ? `${shown} <span class="muted nowrap">(${esc(BigInt(micros).toString())} micros)</span>`
    : shown;
}
