/**
 * Text a person will read before approving it: characters that change how text is displayed
 * without being seen (bidi overrides that show "desuap" for "paused", zero-width characters,
 * terminal escapes) are refused where text comes in, and made visible wherever it is shown.
 */

/**
 * Hidden characters: Unicode controls (Cc) and format characters (Cf: bidi embeddings,
 * overrides and isolates, zero-width characters, the byte-order mark, tag characters), the line
 * and paragraph separators (Zl, Zp), lone surrogates (Cs), which cannot be stored as UTF-8, every
 * other default-ignorable code point, which a renderer shows as nothing (variation selectors, the
 * combining grapheme joiner U+034F, the Hangul fillers), and the blank Braille pattern U+2800.
 * Variation selectors can carry data a reader never sees, so an invisible difference between
 * what was reviewed and what is sent cannot hide in them.
 */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Default_Ignorable_Code_Point}\u2800]/gu;

/**
 * The `v` flag (Unicode sets), which \p{RGI_Emoji} needs. Node 20's engine has it; TypeScript's
 * ES2023 target refuses it written as a literal, so it is passed as a value.
 */
function unicodeSetsFlags(): string {
  return 'gv';
}

/**
 * Emoji as Unicode's emoji data defines them (\p{RGI_Emoji}: the fully qualified emoji, keycaps
 * 1️⃣, ZWJ sequences 👩🏽‍💻 ❤️‍🔥, the flags of England, Scotland and Wales spelled with tag
 * characters). The hidden characters inside one (U+FE0F, U+200D, tags) are part of ordinary text.
 * The engine's own Unicode data is used rather than a copy of it in a package.
 */
const RGI_EMOJI = new RegExp(String.raw`\p{RGI_Emoji}`, unicodeSetsFlags());

/**
 * A zero-width joiner between two pictographic emoji, also after the first's presentation selector
 * or skin tone: UTS #51's emoji ZWJ sequence, valid beyond the recommended set (a pair it does not
 * list shows as two emoji side by side). Anywhere else it is refused like the others.
 */
const EMOJI_JOINER =
  /(?<=\p{Extended_Pictographic}[\p{M}\p{Emoji_Modifier}]*)\u200D(?=\p{Extended_Pictographic})/gu;

/**
 * Text or emoji presentation (U+FE0E, U+FE0F) right after a pictographic emoji, also where the
 * recommended set writes none (👍️, ☺︎). After anything else (a letter, a digit outside a keycap,
 * a flag's regional indicator, another selector) it is refused: there it changes nothing a reader
 * sees and could carry data.
 */
const EMOJI_PRESENTATION = /(?<=\p{Extended_Pictographic})[\uFE0E\uFE0F]/gu;

/** The offsets of the hidden characters that belong to emoji (joiners, selectors, tags). */
function emojiParts(text: string): Set<number> {
  const parts = new Set<number>();
  for (const m of text.matchAll(RGI_EMOJI))
    for (let i = m.index; i < m.index + m[0].length; i++) parts.add(i);
  for (const m of text.matchAll(EMOJI_JOINER)) parts.add(m.index);
  for (const m of text.matchAll(EMOJI_PRESENTATION)) parts.add(m.index);
  return parts;
}

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
  // The emoji parts are looked for only in text that has a hidden character at all.
  let parts: Set<number> | undefined;
  for (const m of text.matchAll(HIDDEN)) {
    if (multiline && LAYOUT.has(m[0])) continue;
    parts ??= emojiParts(text);
    if (parts.has(m.index)) continue;
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
const SHOWN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Default_Ignorable_Code_Point}\u2800⟨⟩]/gu;

/**
 * showHidden replaces each hidden character of `text` by a visible token such as `⟨U+202E⟩`, for
 * display (the dashboard, the operator's terminal). The brackets themselves are spelled out too,
 * so that a literal "⟨U+202E⟩" in the text cannot pass for a token. Line breaks and tabs are kept
 * where `multiline` is set; the emoji joiner and presentation selectors are kept.
 */
export function showHidden(text: string, multiline = false): string {
  const parts = emojiParts(text);
  return text.replace(SHOWN, (ch: string, offset: number) =>
    parts.has(offset) || (multiline && LAYOUT.has(ch)) ? ch : `⟨${codePointName(ch)}⟩`,
  );
}
