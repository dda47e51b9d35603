/**
 * A CSV cell a spreadsheet reads as data, never as a formula (OWASP "CSV Injection").
 *
 * Excel, LibreOffice Calc and Google Sheets evaluate a cell whose text starts with =, +, - or @,
 * and they also do so when that character comes after leading white space (a space, a tab, a
 * carriage return or line feed, a no-break space U+00A0 or any other Unicode space) or is its
 * full-width form (＝ U+FF1D, ＋ U+FF0B, － U+FF0D, ＠ U+FF20), which some of them fold to
 * ASCII. A formula can reach other programs through DDE (`=cmd|' /C calc'!A0`); such a cell
 * starts with a formula character too. Invisible format characters (U+200B, U+FEFF, bidi
 * controls) are skipped like white space, since a spreadsheet may drop them before it looks.
 *
 * The rule: when the first character of a cell that is not white space or invisible is one of
 * = + - @ ＝ ＋ － ＠, or the cell starts with a tab or a carriage return, the cell gets a
 * leading single quote ('), so it is shown as text. Nothing else of the cell is changed, so the
 * original is the cell without that one quote. A figure cell that is a plain decimal number
 * (-?digits[.digits]) may be left as it is: a spreadsheet reads "-12" as the number -12, never as
 * a formula, and a quote would turn every decrease into text.
 *
 * No maintained library states this rule with the full-width forms and the leading white space,
 * so it is written here, once, and every CSV the product writes uses it; quoting the cells for
 * RFC 4180 stays with the CSV library (csv-stringify).
 */

/** White space and invisible characters a spreadsheet may skip before it reads a formula. */
const LEADING_BLANK = /^[\s\p{Cc}\p{Cf}\p{Zs}\p{Zl}\p{Zp}]*/u;

/** The characters that start a formula, ASCII and full-width. */
const FORMULA_CHARACTERS = new Set(['=', '+', '-', '@', '\uFF1D', '\uFF0B', '\uFF0D', '\uFF20']);

const PLAIN_NUMBER = /^-?\d+(\.\d+)?$/;

/** Whether a spreadsheet could read `text` as a formula (see the module comment). */
export function startsLikeFormula(text: string): boolean {
  if (text.startsWith('\t') || text.startsWith('\r')) return true;
  const blank = LEADING_BLANK.exec(text)?.[0].length ?? 0;
  const first = text.codePointAt(blank);
  return first !== undefined && FORMULA_CHARACTERS.has(String.fromCodePoint(first));
}

/**
 * spreadsheetSafeCell is `text` as a CSV cell a spreadsheet shows as text: with a leading single
 * quote when it could start a formula, else unchanged. With `number` set, a plain decimal number
 * is left unchanged, so a figure stays a number.
 */
export function spreadsheetSafeCell(text: string, options: { number?: boolean } = {}): string {
  if (options.number === true && PLAIN_NUMBER.test(text)) return text;
  return startsLikeFormula(text) ? `'${text}` : text;
}
