/**
 * Text a person will read before approving it: characters that change how text is displayed
 * without being seen (bidi overrides that show "desuap" for "paused", zero-width characters,
 * terminal escapes) are refused where text comes in, and made visible wherever it is shown.
 */

/**
 * Hidden characters: Unicode controls (Cc) and format characters (Cf: bidi embeddings,
 * overrides and isolates, zero-width characters, the byte-order mark, tag characters), the line
 * and paragraph separators (Zl, Zp), and lone surrogates (Cs), which cannot be stored as UTF-8.
 */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/gu;

/**
 * The one format character that is part of ordinary text: the zero-width joiner inside an emoji
 * sequence (👩‍💻). Anywhere else it is refused like the others.
 */
const EMOJI_JOINER = /(?<=\p{Extended_Pictographic}\p{M}*)\u200D(?=\p{Extended_Pictographic})/gu;

/** Line breaks and tabs, allowed in multi-line text (guidance, notes), nowhere else. */
const LAYOUT = new Set(['\n', '\r', '\t']);

/**
 * textLength is the length of `text` in Unicode code points, as JSON Schema counts a string's
 * length and as every "N to M characters" rule means it: "😀" is one character, not two UTF-16
 * units.
 */
export function textLength(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/** `U+202E`: how a character is named in errors and shown in the dashboard. */
export function codePointName(ch: string): string {
  return `U+${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
}

/**
 * hiddenCharacter returns the first hidden character of `text` (see HIDDEN) as `U+XXXX`, or
 * undefined when there is none. `multiline` allows line breaks and tabs.
 */
export function hiddenCharacter(text: string, multiline = false): string | undefined {
  const cleaned = text.replace(EMOJI_JOINER, '');
  for (const m of cleaned.matchAll(HIDDEN)) {
    if (multiline && LAYOUT.has(m[0])) continue;
    return codePointName(m[0]);
  }
  return undefined;
}

/**
 * Characters that show nothing: white space, the hidden characters above, and the blank letters
 * (Hangul fillers, the blank Braille pattern) that render as space.
 */
const BLANK = /^[\s\p{Cc}\p{Cf}\p{Zl}\p{Zp}\u115F\u1160\u3164\uFFA0\u2800]*$/u;

/** Whether `text` has at least one character a reader can see. */
export function hasVisibleContent(text: string): boolean {
  return !BLANK.test(text);
}

/** The hidden characters and the token brackets, which showHidden spells out. */
const SHOWN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}⟨⟩]/gu;

/**
 * showHidden replaces each hidden character of `text` by a visible token such as `⟨U+202E⟩`, for
 * display (the dashboard, the operator's terminal). The brackets themselves are spelled out too,
 * so that a literal "⟨U+202E⟩" in the text cannot pass for a token. Line breaks and tabs are kept
 * where `multiline` is set; the emoji joiner is kept.
 */
export function showHidden(text: string, multiline = false): string {
  const joiners = new Set<number>();
  for (const m of text.matchAll(EMOJI_JOINER)) joiners.add(m.index);
  return text.replace(SHOWN, (ch: string, offset: number) =>
    joiners.has(offset) || (multiline && LAYOUT.has(ch)) ? ch : `⟨${codePointName(ch)}⟩`,
  );
}
