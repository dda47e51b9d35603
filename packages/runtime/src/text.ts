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
 * Characters that show nothing of their own: white space, the hidden characters above, the blank
 * letters (Hangul fillers, the blank Braille pattern) that render as space, and combining marks
 * (\p{M}), which only decorate the character before them: text made of marks alone shows a dotted
 * circle or nothing, never a word.
 */
const BLANK =
  /^[\s\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{M}\p{Default_Ignorable_Code_Point}\u115F\u1160\u3164\uFFA0\u2800]*$/u;

/** Whether `text` has at least one character a reader can see. */
export function hasVisibleContent(text: string): boolean {
  return !BLANK.test(text);
}

/**
 * The refusal of `text` that shows nothing, naming `field` as the caller names it, or undefined
 * when a reader can see something in it. Marks are named only where there are some, so that blank
 * text is told it is blank.
 */
export function blankRefusal(field: string, text: string): string | undefined {
  if (hasVisibleContent(text)) return undefined;
  return /\p{M}/u.test(text)
    ? `${field} must contain a visible character, not only combining marks and white space`
    : `${field} must contain a visible character, not only white space`;
}

/**
 * The most combining marks accepted stacked on one character. Real text stacks 1 to 3 (Vietnamese
 * "ệ" decomposed, Thai vowel and tone, Hebrew letter with dagesh, vowel and accent, Arabic shadda
 * with a haraka, Tibetan stacks) and Burmese reaches 4 ("မြို့"); more is "Zalgo" text, whose
 * marks draw over the lines around it on a review page.
 */
export const MAX_STACKED_MARKS = 4;

/**
 * More than MAX_STACKED_MARKS marks in a row. Marks are counted in a row rather than per grapheme
 * cluster (Intl.Segmenter): since Unicode 15.1 a whole Devanagari conjunct is one cluster, and a
 * Sanskrit one such as "र्त्स्न्य" holds 4 viramas, each after its own consonant, stacked on none.
 */
const STACKED = new RegExp(String.raw`\p{M}{${MAX_STACKED_MARKS + 1},}`, 'u');

/**
 * stackedMarks finds the first character of `text` carrying more than MAX_STACKED_MARKS combining
 * marks: `position` is that character's place in the text, counted from 1 in characters (code
 * points, as lengths are counted), and `marks` how many marks it carries. Marks that open the
 * text stack on nothing; they are placed on position 1.
 */
export function stackedMarks(text: string): { position: number; marks: number } | undefined {
  const m = STACKED.exec(text);
  if (m === null) return undefined;
  return { position: Math.max(1, textLength(text.slice(0, m.index))), marks: textLength(m[0]) };
}

/**
 * The refusal of `text` for stacked marks, naming `field` as the caller names it
 * ("`body.creative.title`"), or undefined when no character carries too many.
 */
export function stackedMarksRefusal(field: string, text: string): string | undefined {
  const found = stackedMarks(text);
  if (found === undefined) return undefined;
  return `${field} has ${found.marks} combining marks stacked on one character at position ${found.position}; at most ${MAX_STACKED_MARKS} are accepted`;
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

/** How showSpaces shows an ordinary space that a page would collapse or drop. */
export const SHOWN_SPACE = '␣';

/** Space characters: U+0020, the other spaces that look like it (U+00A0, U+2003, U+3000), tabs. */
const SPACE_RUN = /[\p{Zs}\t]+/gu;

/** Line breaks, which multi-line text keeps as they are. */
const LINE_BREAK = /(\r\n|\r|\n)/;

/**
 * The spaces of one line as a reviewer must read them: a single ordinary space between two other
 * characters stays, since every page shows it; any other run (leading, trailing, repeated, or with
 * another space character) is spelled out, each ordinary space as `␣` and any other space
 * character (a tab, U+00A0, U+2003) by its code point, as showHidden names hidden characters.
 */
function showLineSpaces(line: string): string {
  const own = line.replaceAll(SHOWN_SPACE, `⟨${codePointName(SHOWN_SPACE)}⟩`);
  return own.replace(SPACE_RUN, (run: string, offset: number) =>
    run === ' ' && offset > 0 && offset + 1 < own.length
      ? run
      : run.replace(/./gsu, (ch) => (ch === ' ' ? SHOWN_SPACE : `⟨${codePointName(ch)}⟩`)),
  );
}

/**
 * showSpaces makes visible the spaces a page would hide (HTML collapses "Sale  now " into
 * "Sale now"): leading, trailing and repeated spaces become `␣` ("Sale␣␣now␣"), and space
 * characters other than U+0020 (U+00A0, U+2003, tabs) become `⟨U+00A0⟩` wherever they are. A `␣`
 * in the text itself is shown as `⟨U+2423⟩`, so none can pass for a space. With `multiline`, line
 * breaks stay and each line's own leading and trailing spaces are shown.
 *
 * It leaves hidden characters to showHidden, and so composes with it either way round: a surface
 * showing raw text uses `showSpaces(showHidden(text))`; text written with its spaces shown (a
 * change's summary) is later passed through showHidden by the surface that displays it, where `␣`
 * stays as it is. Like any escaping, it is applied once: applied again it would spell out its own
 * `␣`.
 */
export function showSpaces(text: string, multiline = false): string {
  if (!multiline) return showLineSpaces(text);
  return text
    .split(LINE_BREAK)
    .map((part, i) => (i % 2 === 1 ? part : showLineSpaces(part)))
    .join('');
}

/** `text` followed by what `␣` means, when it shows one: for a reader who has not met the sign. */
export function withSpaceLegend(text: string): string {
  return text.includes(SHOWN_SPACE) ? `${text} (${SHOWN_SPACE} is a space)` : text;
}

/**
 * Marks stacked on one character beyond MAX_STACKED_MARKS. Input is refused with them, but the
 * platform's own text (the names of live objects) arrives unchecked and is shown anyway.
 */
const STACKED_RUN = new RegExp(String.raw`\p{M}{${MAX_STACKED_MARKS + 1},}`, 'gu');

/**
 * showStackedMarks shows each run of more than MAX_STACKED_MARKS combining marks as a token
 * (`Sale⟨9 combining marks⟩!`), so that text from the platform cannot draw over the lines around
 * it on a review page or a terminal. Real text stacks fewer and is left as it is. Applied after
 * showHidden, whose spelled-out brackets keep a literal "⟨9 combining marks⟩" from passing for one.
 */
export function showStackedMarks(text: string): string {
  return text.replace(STACKED_RUN, (run: string) => `⟨${textLength(run)} combining marks⟩`);
}

/** The tokens showSpaces writes: a space character other than U+0020 by code point, and a literal ␣. */
const SPACE_TOKEN = /⟨U\+([0-9A-F]{4,6})⟩/g;
const isSpaceToken = (hex: string) => {
  const ch = String.fromCodePoint(Number.parseInt(hex, 16));
  return ch !== ' ' && (ch === SHOWN_SPACE || /^[\p{Zs}\t]$/u.test(ch));
};

/**
 * showHiddenAfterSpaces is showHidden for text whose spaces showSpaces already showed (a change's
 * summary, written by the changes service): the tokens showSpaces wrote there (`⟨U+00A0⟩`,
 * `⟨U+2423⟩`) are kept, since spelling their brackets would turn them into
 * `⟨U+27E8⟩U+00A0⟨U+27E9⟩`; every other bracket and hidden character is spelled out as showHidden
 * does, so that nothing can pass for a hidden character's token.
 */
export function showHiddenAfterSpaces(text: string, multiline = false): string {
  let out = '';
  let at = 0;
  for (const m of text.matchAll(SPACE_TOKEN)) {
    if (!isSpaceToken(m[1] as string)) continue;
    out += showHidden(text.slice(at, m.index), multiline) + m[0];
    at = m.index + m[0].length;
  }
  return out + showHidden(text.slice(at), multiline);
}
