/**
 * Just enough XML reading to check an XLSX file's parts before the spreadsheet library parses them:
 * the tags of a text in order, with their attributes. Every step is linear in the text (each search
 * starts where the last one ended), so a hostile part of at most an entry's inflated size costs no
 * more than one pass over it. It is no XML parser: it skips comments, CDATA sections, processing
 * instructions and declarations, and stops at the first tag that never ends.
 */

/** A tag: its local name (any namespace prefix dropped), and where its text ends. */
export interface XmlTag {
  name: string;
  closing: boolean;
  selfClosing: boolean;
  /** The index just after the tag's `>`. */
  end: number;
  /** The tag's attributes by local name, their values with entities decoded. */
  attributes(): Record<string, string>;
}

const ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

/** Text with its XML entities and character references decoded. */
export function decodeXmlText(text: string): string {
  return text.replace(/&(#x[0-9A-Fa-f]{1,6}|#[0-9]{1,7}|lt|gt|amp|quot|apos);/g, (whole, ref: string) => {
    if (!ref.startsWith('#')) return ENTITIES[ref] ?? whole;
    const code = ref[1] === 'x' ? Number.parseInt(ref.slice(2), 16) : Number(ref.slice(1));
    return code <= 0x10ffff ? String.fromCodePoint(code) : whole;
  });
}

const localName = (name: string) => name.slice(name.indexOf(':') + 1);

/** An attribute at the sticky position: white space, a name, `=`, and a quoted value. */
const ATTRIBUTE = /\s+([^\s=/>]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/y;

function parseAttributes(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  ATTRIBUTE.lastIndex = 0;
  for (let m = ATTRIBUTE.exec(text); m !== null; m = ATTRIBUTE.exec(text)) {
    const name = m[1] as string;
    // A namespace declaration (xmlns:r="...") is not an attribute named after its prefix.
    if (name === 'xmlns' || name.startsWith('xmlns:')) continue;
    out[localName(name)] = decodeXmlText(m[2] ?? m[3] ?? '');
  }
  return out;
}

/** The index of the `>` that ends the tag whose text starts at `from`, quoted values skipped; -1 if none. */
function tagEnd(xml: string, from: number): number {
  for (let i = from; i < xml.length; i++) {
    const c = xml.charCodeAt(i);
    if (c === 62) return i; // >
    if (c === 34 || c === 39) {
      // A quoted value may hold a ">".
      const quote = xml.indexOf(xml[i] as string, i + 1);
      if (quote < 0) return -1;
      i = quote;
    }
  }
  return -1;
}

/**
 * forEachTag calls `visit` with each element tag of `xml`, in order; `visit` may throw to stop.
 * Text between tags is not visited: read it from `xml` at a tag's `end`.
 */
export function forEachTag(xml: string, visit: (tag: XmlTag) => void): void {
  let at = 0;
  for (;;) {
    const open = xml.indexOf('<', at);
    if (open < 0) return;
    const skipTo = xml.startsWith('<!--', open) ? '-->' : xml.startsWith('<![CDATA[', open) ? ']]>' : '';
    if (skipTo !== '') {
      const end = xml.indexOf(skipTo, open);
      if (end < 0) return;
      at = end + skipTo.length;
      continue;
    }
    const close = tagEnd(xml, open + 1);
    if (close < 0) return;
    at = close + 1;
    const first = xml[open + 1];
    if (first === '?' || first === '!') continue;
    const closing = first === '/';
    const selfClosing = !closing && xml[close - 1] === '/';
    const inner = xml.slice(closing ? open + 2 : open + 1, selfClosing ? close - 1 : close);
    const nameEnd = inner.search(/[\s/>]|$/);
    const rest = inner.slice(nameEnd);
    visit({
      name: localName(inner.slice(0, nameEnd)),
      closing,
      selfClosing,
      end: close + 1,
      attributes: () => parseAttributes(rest),
    });
  }
}

/** The text from `at` up to the next tag, entities decoded. */
export function textAt(xml: string, at: number): string {
  const next = xml.indexOf('<', at);
  return decodeXmlText(xml.slice(at, next < 0 ? xml.length : next));
}
