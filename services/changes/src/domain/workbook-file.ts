/**
 * An XLSX workbook read defensively. An XLSX file is a zip archive, and a zip can claim one size and
 * inflate to another (a zip bomb), hold thousands of entries, or carry sheets of millions of rows.
 * So before the spreadsheet library sees anything, the archive is inflated here entry by entry, in
 * small steps, counting the bytes that actually come out: too many entries, too large an entry or
 * too much in all stops it at once. The sheets' rows are counted in their XML before parsing. The
 * library then reads an archive rebuilt from exactly the entries that were checked.
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

export interface ZipLimits {
  maxEntries: number;
  /** Inflated bytes of one entry. */
  maxEntryBytes: number;
  /** Inflated bytes of all entries together. */
  maxTotalBytes: number;
  /** Rows of one worksheet, its header row included. */
  maxRows: number;
}

/** Generous for three sheets of 1000 rows; far below what would strain the worker. */
export const ZIP_LIMITS: ZipLimits = {
  maxEntries: 100,
  maxEntryBytes: 16 * 1024 * 1024,
  maxTotalBytes: 40 * 1024 * 1024,
  maxRows: MAX_SHEET_ROWS + 1,
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

/** Refuses a worksheet with more rows than the limit, counted in its XML before any parsing. */
export function checkRowCounts(files: Record<string, Uint8Array>, limits: ZipLimits = ZIP_LIMITS): void {
  const decoder = new TextDecoder();
  for (const [name, data] of Object.entries(files)) {
    if (!/^xl\/worksheets\/[^/]+\.xml$/.test(name)) continue;
    const rows = decoder.decode(data).match(/<(?:\w+:)?row[\s>/]/g)?.length ?? 0;
    if (rows > limits.maxRows) {
      throw refused(
        `the worksheet ${name} has ${rows} rows; a sheet may have at most ${limits.maxRows - 1} rows besides its header`,
      );
    }
  }
}

/** checkedWorkbook inflates and checks `bytes`, and returns an archive of exactly the checked entries. */
export function checkedWorkbook(bytes: Uint8Array, limits: ZipLimits = ZIP_LIMITS): Uint8Array {
  const files = inflateWorkbook(bytes, limits);
  checkRowCounts(files, limits);
  if (files['xl/workbook.xml'] === undefined)
    throw refused('not an XLSX workbook: the zip archive has no xl/workbook.xml');
  return zipSync(files, { level: 1 });
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
 * sheetsFromTabs turns the workbook's tabs into rows: the first row names the columns, each later
 * row that is not empty is a row, numbered as the spreadsheet numbers it. Other tabs are ignored.
 */
export function sheetsFromTabs(
  tabs: readonly { sheet: string; data: readonly (readonly Cell[])[] }[],
): Sheets {
  const sheets: Sheets = { campaigns: [], adgroups: [], ads: [] };
  for (const tab of tabs) {
    const sheet = sheetOf(tab.sheet);
    if (sheet === undefined) continue;
    if (sheets[sheet].length > 0) throw refused(`the workbook has two ${sheet} sheets`);
    const [header = [], ...rows] = tab.data;
    const columns = header.map((h) => (typeof h === 'string' ? columnName(h) : ''));
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
      throw refused(`the ${sheet} sheet has ${sheets[sheet].length} rows; at most ${MAX_SHEET_ROWS}`);
  }
  return sheets;
}
