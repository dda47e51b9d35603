/**
 * An XLSX workbook read defensively. An XLSX file is a zip archive, and a zip can claim one size and
 * inflate to another (a zip bomb), hold thousands of entries, or carry sheets of millions of rows.
 * So before the spreadsheet library sees anything, the archive is inflated here entry by entry, in
 * small steps, counting the bytes that actually come out: too many entries, too large an entry or
 * too much in all stops it at once. The parts the library reads must be UTF-8, and each worksheet is
 * scanned once before parsing: its rows and cells are counted (empty ones too, within a bound far
 * above the 1000 rows with a value a sheet may have), and a cell the library would read as empty
 * although it is not (a formula without its computed value, an error value) is refused by name.
 * The library then reads an archive rebuilt from exactly the entries that were checked.
 */
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import { Unzip, UnzipInflate, zipSync } from 'fflate';
import {
  columnName,
  MAX_SHEET_ROWS,
  SHEETS,
  type SheetName,
  type SheetRow,
  type Sheets,
} from './bulk-job-rules.ts';
import { forEachTag, textAt } from './workbook-xml.ts';

export interface ZipLimits {
  maxEntries: number;
  /** Inflated bytes of one entry. */
  maxEntryBytes: number;
  /** Inflated bytes of all entries together. */
  maxTotalBytes: number;
  /**
   * `<row>` elements of one worksheet's file, empty (formatted) ones included: a bound on the work
   * of reading it, far above the rows with a value a sheet may have (MAX_SHEET_ROWS, counted once
   * the sheet is read).
   */
  maxRawRows: number;
  /** `<c>` elements of one worksheet's file, empty ones included. */
  maxRawCells: number;
}

/** Generous for three sheets of 1000 rows; far below what would strain the worker. */
export const ZIP_LIMITS: ZipLimits = {
  maxEntries: 100,
  maxEntryBytes: 16 * 1024 * 1024,
  maxTotalBytes: 40 * 1024 * 1024,
  maxRawRows: 20 * MAX_SHEET_ROWS,
  maxRawCells: 200 * MAX_SHEET_ROWS,
};

/** Compressed bytes pushed at a time: one step inflates to at most about a thousand times this. */
const STEP = 1024;
const MIB = 1024 * 1024;

const refused = (message: string) => new InvalidArgumentError(`workbook_base64: ${message}`);

function concat(chunks: readonly Uint8Array[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/**
 * inflateWorkbook returns the entries of the zip `bytes`, refusing a file that is not a zip, and an
 * archive beyond `limits`, as soon as the limit is passed.
 */
export function inflateWorkbook(
  bytes: Uint8Array,
  limits: ZipLimits = ZIP_LIMITS,
): Record<string, Uint8Array> {
  if (bytes.length < 4 || bytes[0] !== 0x50 || bytes[1] !== 0x4b || bytes[2] !== 3 || bytes[3] !== 4)
    throw refused('not an XLSX file: an XLSX workbook is a zip archive, and this is not one');
  const files: Record<string, Uint8Array> = {};
  let entries = 0;
  let total = 0;
  let failure: InvalidArgumentError | undefined;
  const unzip = new Unzip((file) => {
    if (failure !== undefined) return;
    entries += 1;
    if (entries > limits.maxEntries) {
      failure = refused(`the archive has more than ${limits.maxEntries} entries`);
      return;
    }
    const chunks: Uint8Array[] = [];
    let size = 0;
    file.ondata = (err, data, final) => {
      if (failure !== undefined) return;
      if (err !== null) {
        failure = refused(`the archive's entry ${file.name} is damaged (${err.message})`);
        return;
      }
      size += data.length;
      total += data.length;
      if (size > limits.maxEntryBytes) {
        failure = refused(
          `the archive's entry ${file.name} inflates to more than ${limits.maxEntryBytes / MIB} MiB`,
        );
      } else if (total > limits.maxTotalBytes) {
        failure = refused(`the archive inflates to more than ${limits.maxTotalBytes / MIB} MiB in all`);
      }
      if (failure !== undefined) {
        file.terminate();
        return;
      }
      chunks.push(data);
      if (final) files[file.name] = concat(chunks, size);
    };
    try {
      file.start();
    } catch (e) {
      failure = refused(`the archive's entry ${file.name} cannot be read (${(e as Error).message})`);
    }
  });
  unzip.register(UnzipInflate);
  try {
    for (let at = 0; at < bytes.length && failure === undefined; at += STEP) {
      unzip.push(bytes.subarray(at, at + STEP), at + STEP >= bytes.length);
    }
  } catch (e) {
    failure ??= refused(`the zip archive is damaged (${(e as Error).message})`);
  }
  if (failure !== undefined) throw failure;
  if (entries === 0) throw refused('the zip archive is empty');
  return files;
}

/**
 * The text of the part `path`, refusing one the spreadsheet library would misread: it decodes every
 * part as UTF-8, turning other bytes into U+FFFD ("Caf\uFFFD Sale") and UTF-16 into text no XML
 * parser reads. Spreadsheet apps write UTF-8.
 */
function utf8Part(files: Record<string, Uint8Array>, path: string): string | undefined {
  const data = files[path];
  if (data === undefined) return undefined;
  const resave = 'save the workbook as .xlsx from a spreadsheet app, which writes UTF-8';
  // A UTF-16 byte order mark, or the NUL bytes of UTF-16 text without one ("<\0?\0x\0").
  if (
    (data[0] === 0xff && data[1] === 0xfe) ||
    (data[0] === 0xfe && data[1] === 0xff) ||
    data[0] === 0 ||
    data[1] === 0
  )
    throw refused(`the archive's entry ${path} is UTF-16 text, which cannot be read; ${resave}`);
  const head = new TextDecoder().decode(data.subarray(0, 256));
  const declared = /^\s*<\?xml\s[^>]*?\bencoding\s*=\s*["']([^"']*)["']/.exec(head)?.[1];
  if (declared !== undefined && !/^utf-?8$/i.test(declared))
    throw refused(
      `the archive's entry ${path} declares the encoding ${JSON.stringify(declared)}, which cannot be read; ${resave}`,
    );
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(data);
  } catch {
    throw refused(`the archive's entry ${path} is not UTF-8 text, which cannot be read; ${resave}`);
  }
}

/** A part named by a relationship's Target, resolved as the spreadsheet library resolves it. */
const partPath = (target: string) => (target.startsWith('/') ? target.slice(1) : `xl/${target}`);

/** The workbook's tabs (name and worksheet part) and the other parts the library reads. */
interface WorkbookParts {
  tabs: { name: string; path: string | undefined; hidden: boolean }[];
  sharedStrings: string;
  styles: string;
}

/**
 * The parts of the workbook as the spreadsheet library finds them: the tabs of xl/workbook.xml, in
 * order, with the worksheet each names through xl/_rels/workbook.xml.rels.
 */
function workbookParts(files: Record<string, Uint8Array>): WorkbookParts {
  const targets = new Map<string, string>();
  let sharedStrings = 'xl/sharedStrings.xml';
  let styles = 'xl/styles.xml';
  forEachTag(utf8Part(files, 'xl/_rels/workbook.xml.rels') ?? '', (tag) => {
    if (tag.name !== 'Relationship' || tag.closing) return;
    const { Id, Type = '', Target } = tag.attributes();
    if (Target === undefined) return;
    if (Type.endsWith('/worksheet') && Id !== undefined) targets.set(Id, partPath(Target));
    else if (Type.endsWith('/sharedStrings')) sharedStrings = partPath(Target);
    else if (Type.endsWith('/styles')) styles = partPath(Target);
  });
  const tabs: WorkbookParts['tabs'] = [];
  forEachTag(utf8Part(files, 'xl/workbook.xml') ?? '', (tag) => {
    if (tag.name !== 'sheet' || tag.closing) return;
    const { name, id, state } = tag.attributes();
    if (name !== undefined)
      tabs.push({
        name: unescapeXlsx(name),
        path: id === undefined ? undefined : targets.get(id),
        hidden: state === 'hidden' || state === 'veryHidden',
      });
  });
  return { tabs, sharedStrings, styles };
}

/** Text with the `_xHHHH_` escapes of an XLSX string decoded, as the spreadsheet library does. */
const unescapeXlsx = (s: string) =>
  s.replace(/_x([0-9A-Fa-f]{4})_/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));

/** A cell as a spreadsheet formula names it: ads!E2, 'Ad groups'!B3. */
function cellName(tab: string, ref: string): string {
  const sheet = /^[A-Za-z_][A-Za-z0-9_.]*$/.test(tab) ? tab : `'${tab.replace(/'/g, "''")}'`;
  return `${sheet}!${ref}`;
}

/** A cell whose value the file does not hold, and what it holds instead. */
interface UnreadCell {
  ref: string;
  holds: string;
}

/** What scanning a worksheet finds that its rows, as the spreadsheet library reads them, do not show. */
interface WorksheetScan {
  unread: UnreadCell[];
  /** The hidden rows (by number) and columns (by index from 0) that hold a value, in order. */
  hiddenRows: number[];
  hiddenColumns: number[];
}

/** Whether an XML boolean attribute is set: `hidden="1"` or `hidden="true"`. */
const isSet = (v: string | undefined) => v === '1' || v === 'true';

/** The column of a cell reference (B7 is 1), or undefined when it is not one. */
function columnOfRef(ref: string | undefined): number | undefined {
  const letters = ref === undefined ? undefined : /^([A-Z]{1,3})\d+$/.exec(ref)?.[1];
  if (letters === undefined) return undefined;
  let n = 0;
  for (const ch of letters) n = n * 26 + (ch.charCodeAt(0) - 64);
  return n - 1;
}

/** A `<row>` of a worksheet as scanning reads it: its number, whether hidden, its cells so far. */
interface ScannedRow {
  number: number;
  hidden: boolean;
  cells: number;
}

/** A `<c>` of a worksheet as scanning reads it. */
interface ScannedCell {
  ref: string;
  column: number;
  type: string | undefined;
  formula: boolean;
  value?: string;
  inline: boolean;
}

/** What scanning has found so far, and the hidden column ranges (from 0) it compares cells with. */
interface Found {
  unread: UnreadCell[];
  hiddenColumnRanges: [number, number][];
  hiddenRows: Set<number>;
  hiddenColumns: Set<number>;
}

/**
 * noteCell records what one cell shows that its value, as the spreadsheet library reads it, does
 * not: a value in a hidden row or column, an error value, a formula without a computed value.
 */
function noteCell(cell: ScannedCell, row: ScannedRow, found: Found): void {
  const { column } = cell;
  if (cell.inline || (cell.value !== undefined && cell.value !== '')) {
    if (row.hidden) found.hiddenRows.add(row.number);
    if (found.hiddenColumnRanges.some(([min, max]) => column >= min && column <= max))
      found.hiddenColumns.add(column);
  }
  if (cell.type === 'e') {
    const code = cell.value?.trim() ?? '';
    const value = code === '' ? 'an error value' : `the error value ${code}`;
    found.unread.push({ ref: cell.ref, holds: `${value}: correct its formula, or enter the value itself` });
  } else if (cell.formula && cell.value === undefined) {
    found.unread.push({
      ref: cell.ref,
      holds:
        'a formula without a computed value: save the workbook in a spreadsheet app so its values are stored',
    });
  }
}

/** The refusal of a worksheet with more `<row>` or `<c>` elements (`what`) than `max`. */
function tooManyElements(
  where: { path: string; tab: string | undefined },
  what: string,
  max: number,
  limits: ZipLimits,
) {
  return refused(
    `the worksheet ${where.path}${where.tab === undefined ? '' : ` (the sheet ${JSON.stringify(where.tab)})`} has more than ${max} ${what} in its file, empty (formatted) ones included; a sheet ` +
      `may have at most ${MAX_SHEET_ROWS} rows with a value besides its header, and at most ${limits.maxRawRows} ` +
      `rows and ${limits.maxRawCells} cells in its file in all`,
  );
}

/**
 * scanWorksheet reads the worksheet `xml` (the part `where.path`, of the tab `where.tab`) once, before any parsing: it refuses more `<row>` or `<c>`
 * elements than `limits` allow (empty ones included, so the work of reading it is bounded), and
 * returns the cells the spreadsheet library would read as empty although they are not (a formula
 * the file holds no computed value of, and an error value such as #N/A or #DIV/0!), and the hidden
 * rows and columns that hold a value, which the library reads as any other although the
 * spreadsheet does not show them.
 */
function scanWorksheet(
  where: { path: string; tab: string | undefined },
  xml: string,
  limits: ZipLimits,
): WorksheetScan {
  let rows = 0;
  let cells = 0;
  const found: Found = {
    unread: [],
    hiddenColumnRanges: [],
    hiddenRows: new Set(),
    hiddenColumns: new Set(),
  };
  let row: ScannedRow = { number: 0, hidden: false, cells: 0 };
  let cell: ScannedCell | undefined;
  const tooMany = (what: string, max: number) => tooManyElements(where, what, max, limits);
  const finish = () => {
    if (cell !== undefined) noteCell(cell, row, found);
    cell = undefined;
  };
  forEachTag(xml, (tag) => {
    if (tag.name === 'col' && !tag.closing) {
      // <col min="3" max="4" hidden="1"/>: columns C and D are hidden (min and max count from 1).
      const { min, max, hidden } = tag.attributes();
      if (isSet(hidden)) found.hiddenColumnRanges.push([Number(min) - 1, Number(max ?? min) - 1]);
    } else if (tag.name === 'row' && !tag.closing) {
      rows += 1;
      if (rows > limits.maxRawRows) throw tooMany('rows', limits.maxRawRows);
      const { r, hidden } = tag.attributes();
      row = { number: r === undefined ? row.number + 1 : Number(r), hidden: isSet(hidden), cells: 0 };
    } else if (tag.name === 'c') {
      if (tag.closing) return finish();
      finish();
      cells += 1;
      if (cells > limits.maxRawCells) throw tooMany('cells', limits.maxRawCells);
      const { r, t } = tag.attributes();
      row.cells += 1;
      cell = {
        ref: r ?? `(a cell without a reference, in row element ${rows})`,
        column: columnOfRef(r) ?? row.cells - 1,
        type: t,
        formula: false,
        inline: false,
      };
      if (tag.selfClosing) finish();
    } else if (cell !== undefined && !tag.closing) {
      if (tag.name === 'f') cell.formula = true;
      else if (tag.name === 'v') cell.value = tag.selfClosing ? '' : textAt(xml, tag.end);
      else if (tag.name === 'is') cell.inline = true;
    }
  });
  finish();
  const sorted = (set: Set<number>) => [...set].sort((a, b) => a - b);
  return {
    unread: found.unread,
    hiddenRows: sorted(found.hiddenRows),
    hiddenColumns: sorted(found.hiddenColumns),
  };
}

/**
 * What a tab hides that would be planned: its hidden rows and columns that hold a value (rows
 * hidden by hand, by a filter or by a collapsed group; the spreadsheet library reads them as any
 * other), or undefined when it hides none.
 */
function hiddenValues(tab: string, scan: WorksheetScan): string | undefined {
  const named = (what: string, items: readonly string[]) =>
    items.length === 0 ? [] : [`${what}${items.length > 1 ? 's' : ''} ${listed(items, ', ')}`];
  const parts = [
    ...named('row', scan.hiddenRows.map(String)),
    ...named('column', scan.hiddenColumns.map(columnLetter)),
  ];
  if (parts.length === 0) return undefined;
  const one = scan.hiddenRows.length + scan.hiddenColumns.length === 1;
  return (
    `the sheet ${JSON.stringify(tab)} hides ${parts.join(' and ')}, which ${one ? 'holds' : 'hold'} values: ` +
    `what is planned is what the spreadsheet shows, so unhide ${one ? 'it' : 'them'} to plan ` +
    `${one ? 'its' : 'their'} values, or delete ${one ? 'it' : 'them'}`
  );
}

/**
 * checkedWorkbook inflates and checks `bytes`, and returns an archive of exactly the checked entries.
 * The parts the spreadsheet library reads must be UTF-8; each worksheet is scanned within the limits
 * of its rows and cells; a cell of a campaigns, adgroups or ads tab that holds a formula without
 * its computed value, or an error value, is refused by name (the library would read it as empty),
 * and so is such a tab that is hidden, or that hides rows or columns holding values (they would be
 * planned unseen).
 */
export function checkedWorkbook(bytes: Uint8Array, limits: ZipLimits = ZIP_LIMITS): Uint8Array {
  const files = inflateWorkbook(bytes, limits);
  if (files['xl/workbook.xml'] === undefined)
    throw refused('not an XLSX workbook: the zip archive has no xl/workbook.xml');
  const parts = workbookParts(files);
  // What is planned is what the spreadsheet shows: a hidden campaigns, adgroups or ads tab is not.
  const hidden = parts.tabs.filter((t) => t.hidden && sheetOf(t.name) !== undefined).map((t) => t.name);
  if (hidden.length > 0)
    throw refused(
      `the sheet${hidden.length > 1 ? 's' : ''} ${hidden.map((n) => JSON.stringify(n)).join(', ')} ${hidden.length > 1 ? 'are' : 'is'} hidden in the workbook; ` +
        'unhide it to plan its rows, or rename or delete it if it is not meant to be planned',
    );
  utf8Part(files, parts.sharedStrings);
  utf8Part(files, parts.styles);
  const tabOf = new Map(parts.tabs.map((t) => [t.path, t.name]));
  const worksheets = new Set([
    ...parts.tabs.flatMap((t) => (t.path === undefined ? [] : [t.path])),
    ...Object.keys(files).filter((name) => /^xl\/worksheets\/[^/]+\.xml$/.test(name)),
  ]);
  const unread: string[] = [];
  for (const path of worksheets) {
    const xml = utf8Part(files, path);
    if (xml === undefined) continue;
    const tab = tabOf.get(path);
    const scan = scanWorksheet({ path, tab }, xml, limits);
    if (tab !== undefined && sheetOf(tab) !== undefined) {
      unread.push(...scan.unread.map((c) => `cell ${cellName(tab, c.ref)} holds ${c.holds}`));
      const hidden = hiddenValues(tab, scan);
      if (hidden !== undefined) unread.push(hidden);
    }
  }
  if (unread.length > 0) throw refused(listed(unread));
  return zipSync(files, { level: 1 });
}

/** Refusals (or other items) as one text: the first 20, then how many more. */
function listed(items: readonly string[], separator = '; '): string {
  const more = items.length > 20 ? `${separator}and ${items.length - 20} more` : '';
  return `${items.slice(0, 20).join(separator)}${more}`;
}

/** A cell as the spreadsheet library gives it: numbers kept as their decimal text. */
export type Cell = string | number | boolean | Date | null;

/** Which sheet a workbook tab is, by its name: "Ad groups", "ad_groups" and "AdGroups" are adgroups. */
function sheetOf(tab: string): SheetName | undefined {
  const name = columnName(tab).replace(/_/g, '');
  return (SHEETS as readonly string[]).includes(name) ? (name as SheetName) : undefined;
}

/** A spreadsheet's name for the column at `index` (0 is A, 26 is AA). */
function columnLetter(index: number): string {
  let name = '';
  for (let n = index + 1; n > 0; n = Math.floor((n - 1) / 26))
    name = String.fromCharCode(65 + ((n - 1) % 26)) + name;
  return name;
}

/**
 * The sheet's columns by header, refusing a header that two columns share once matched as headers
 * are (case, spaces and hyphens aside): one of them would be read and the other dropped.
 */
function headerColumns(sheet: SheetName, header: readonly Cell[]): string[] {
  const columns = header.map((h) => (typeof h === 'string' ? columnName(h) : ''));
  const at = new Map<string, number[]>();
  columns.forEach((c, i) => {
    if (c !== '') at.set(c, [...(at.get(c) ?? []), i]);
  });
  const twice = [...at].filter(([, where]) => where.length > 1);
  if (twice.length > 0)
    throw refused(
      twice
        .map(
          ([c, where]) =>
            `${sheet} sheet, row 1: the header "${c}" appears ${where.length} times, in columns ` +
            `${where.map((i) => `${columnLetter(i)} (column ${i + 1})`).join(' and ')}; headers must be unique ` +
            '(they are matched without regard to case, spaces and hyphens)',
        )
        .join('; '),
    );
  return columns;
}

/**
 * Refuses the text cells of the workbook's sheets that hold U+FFFD, the replacement character: it
 * stands for text that was not UTF-8 where it came from and could not be read.
 */
function refuseReplacedText(tabs: readonly { sheet: string; data: readonly (readonly Cell[])[] }[]): void {
  const cells: string[] = [];
  for (const tab of tabs) {
    if (sheetOf(tab.sheet) === undefined) continue;
    tab.data.forEach((row, r) => {
      row.forEach((v, c) => {
        if (typeof v === 'string' && v.includes('\uFFFD'))
          cells.push(cellName(tab.sheet, `${columnLetter(c)}${r + 1}`));
      });
    });
  }
  if (cells.length === 0) return;
  const more = cells.length > 20 ? ` and ${cells.length - 20} more` : '';
  throw refused(
    `${cells.length === 1 ? 'cell' : 'cells'} ${cells.slice(0, 20).join(', ')}${more} ` +
      `${cells.length === 1 ? 'holds' : 'hold'} U+FFFD, the replacement character, which stands for text ` +
      'that was not UTF-8 and could not be read: correct the text, and save the workbook as .xlsx from a ' +
      'spreadsheet app',
  );
}

/**
 * sheetsFromTabs turns the workbook's tabs into rows: the first row names the columns, each later
 * row that is not empty is a row, numbered as the spreadsheet numbers it. Other tabs are ignored.
 */
export function sheetsFromTabs(
  tabs: readonly { sheet: string; data: readonly (readonly Cell[])[] }[],
): Sheets {
  refuseReplacedText(tabs);
  const sheets: Sheets = { campaigns: [], adgroups: [], ads: [] };
  const seen = new Map<SheetName, string>();
  for (const tab of tabs) {
    const sheet = sheetOf(tab.sheet);
    if (sheet === undefined) continue;
    const other = seen.get(sheet);
    if (other !== undefined)
      throw refused(
        `the workbook has two ${sheet} sheets (${JSON.stringify(other)} and ${JSON.stringify(tab.sheet)}); keep one`,
      );
    seen.set(sheet, tab.sheet);
    const [header = [], ...rows] = tab.data;
    const columns = headerColumns(sheet, header);
    rows.forEach((cells, i) => {
      const row: SheetRow = { row: i + 2, cells: {} };
      cells.forEach((v, c) => {
        const column = columns[c];
        // A cell of nothing but spaces is an empty cell, as a spreadsheet shows it.
        if (v === null || (typeof v === 'string' && v.trim() === '')) return;
        if (column === undefined || column === '') {
          // A value nobody named is refused rather than dropped, as an unknown column is.
          throw refused(
            `${sheet} sheet, row ${i + 2}, column ${columnLetter(c)}: a value in a column with no header; name the column in the first row or clear the cell`,
          );
        }
        row.cells[column] = v;
      });
      if (Object.keys(row.cells).length > 0) sheets[sheet].push(row);
    });
    if (sheets[sheet].length > MAX_SHEET_ROWS)
      throw refused(
        `the ${sheet} sheet has ${sheets[sheet].length} rows with a value besides its header; at most ${MAX_SHEET_ROWS}`,
      );
  }
  return sheets;
}
