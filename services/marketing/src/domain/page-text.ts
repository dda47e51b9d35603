/**
 * What a check compares: a page's title and the text a visitor sees, normalised so that markup,
 * whitespace and case changes do not count as changes. Parsed with htmlparser2 (a tolerant HTML
 * tokenizer), never with regular expressions.
 */
import { Parser } from 'htmlparser2';
import { firstCodePoints } from './code-points.ts';

/** The longest title kept, in characters (code points). */
export const TITLE_MAX = 300;
/** The longest body text kept and compared: the page limit is 1 MiB, the text rarely near this. */
export const TEXT_MAX = 100_000;

export interface PageText {
  /** Normalised; "" when the page has none. */
  title: string;
  /** Normalised visible text of the body, at most TEXT_MAX characters. */
  text: string;
}

/** Elements whose content is not shown as text. */
const INVISIBLE = new Set([
  'head',
  'script',
  'style',
  'noscript',
  'template',
  'iframe',
  'object',
  'svg',
  'math',
  'canvas',
  'select',
]);

/**
 * normaliseText makes text comparable: compatibility forms folded (NFKC, so a non-breaking space
 * is a space), lowercased, every run of whitespace one space, trimmed.
 */
export function normaliseText(text: string): string {
  return text.normalize('NFKC').toLowerCase().replace(/\s+/gu, ' ').trim();
}

/**
 * pageTextOf extracts the title and the visible body text of an HTML document: the content of
 * scripts, styles, the head (but its title) and elements marked `hidden` or `aria-hidden` is
 * left out; element boundaries separate words.
 */
export function pageTextOf(html: string): PageText {
  let title = '';
  let inTitle = false;
  let titleDone = false;
  /** Depth inside elements whose content is not visible (invisible tags, hidden attributes). */
  const hiddenStack: string[] = [];
  const parts: string[] = [];
  let length = 0;
  const parser = new Parser(
    {
      onopentag(name, attribs) {
        if (name === 'title' && !titleDone) inTitle = true;
        else if (
          hiddenStack.length > 0 ||
          INVISIBLE.has(name) ||
          'hidden' in attribs ||
          attribs['aria-hidden'] === 'true'
        ) {
          hiddenStack.push(name);
        }
        parts.push(' ');
      },
      onclosetag(name) {
        if (name === 'title' && inTitle) {
          inTitle = false;
          titleDone = true;
        } else if (hiddenStack.at(-1) === name) hiddenStack.pop();
        parts.push(' ');
      },
      ontext(data) {
        if (inTitle) title += data;
        else if (hiddenStack.length === 0 && length < TEXT_MAX * 2) {
          parts.push(data);
          length += data.length;
        }
      },
    },
    { decodeEntities: true },
  );
  parser.write(html);
  parser.end();
  return {
    title: firstCodePoints(normaliseText(title), TITLE_MAX),
    text: firstCodePoints(normaliseText(parts.join('')), TEXT_MAX),
  };
}

/** plainPageText treats a text/plain page as body text with no title. */
export function plainPageText(text: string): PageText {
  return { title: '', text: firstCodePoints(normaliseText(text), TEXT_MAX) };
}
