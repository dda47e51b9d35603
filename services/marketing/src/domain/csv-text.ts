/** The text of a CSV as it is parsed and hashed: one byte-order mark and line endings settled. */

const BOM = '\uFEFF';

/** withoutBom drops one leading byte-order mark, which spreadsheets' "CSV UTF-8" starts with. */
export function withoutBom(csv: string): string {
  return csv.startsWith(BOM) ? csv.slice(1) : csv;
}

/**
 * csvRecordText is the text the parser reads, and the text whose hash makes two CSVs the same
 * content: a leading byte-order mark dropped, and every line break between records (CRLF, LF or
 * a lone CR, mixed as they come) made LF. Line breaks inside a quoted cell are part of the
 * cell and kept as written. Quotes are read as RFC 4180 (and csv-parse) read them: a quote opens
 * a quoted cell only as the cell's first character, and "" inside one is a quote.
 */
export function csvRecordText(csv: string): string {
  const text = withoutBom(csv);
  if (!text.includes('\r')) return text;
  const out: string[] = [];
  let copiedTo = 0;
  let quoted = false;
  let cellStart = true;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (quoted) {
      if (c !== 0x22) continue;
      if (text.charCodeAt(i + 1) === 0x22) i++;
      else quoted = false;
      continue;
    }
    if (c === 0x22 && cellStart) {
      quoted = true;
      cellStart = false;
    } else if (c === 0x0d) {
      out.push(text.slice(copiedTo, i), '\n');
      if (text.charCodeAt(i + 1) === 0x0a) i++;
      copiedTo = i + 1;
      cellStart = true;
    } else {
      cellStart = c === 0x2c || c === 0x0a;
    }
  }
  out.push(text.slice(copiedTo));
  return out.join('');
}

/**
 * editorLines maps the line csv-parse counts in `text` (csvRecordText's output) to the line an
 * editor shows: csv-parse counts a CRLF inside a quoted cell as two lines, an editor as one.
 */
export function editorLines(text: string): (parserLine: number) => number {
  if (!text.includes('\r')) return (line) => line;
  /** The parser lines from which each quoted CRLF has counted one line too many, ascending. */
  const shifted: number[] = [];
  let line = 1;
  let quoted = false;
  let cellStart = true;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x0a) line++;
    if (quoted) {
      if (c === 0x0d) {
        line++;
        if (text.charCodeAt(i + 1) === 0x0a) shifted.push(line + 1);
      } else if (c === 0x22) {
        if (text.charCodeAt(i + 1) === 0x22) i++;
        else quoted = false;
      }
      continue;
    }
    if (c === 0x22 && cellStart) quoted = true;
    cellStart = c === 0x2c || c === 0x0a;
  }
  return (parserLine) => {
    let lo = 0;
    let hi = shifted.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((shifted[mid] as number) <= parserLine) lo = mid + 1;
      else hi = mid;
    }
    return parserLine - lo;
  };
}
