/**
 * Reads a performance CSV with csv-parse's streaming parser: the first line is the header; each
 * field is read from the header column_mapping names for it, or from the header of its own name.
 * Columns nobody asked for are ignored. An empty cell is unknown (null), never 0.
 *
 * A CSV is read once without asking the parser where each record ends (the record information it
 * builds for every record took a quarter of the reading); only a CSV with a problem is read a
 * second time, with it, to name each problem's row, column and line.
 */
import { Readable } from 'node:stream';
import { CsvError, parse } from 'csv-parse';
import { csvRecordText, editorLines } from './csv-text.ts';
import {
  MAX_ROWS,
  type NormalRow,
  normaliseRow,
  REQUIRED_FIELDS,
  ROW_FIELDS,
  type RowCells,
  RowErrors,
} from './performance-import.ts';

/** The parser reads the text in pieces of this many characters, as a stream. */
const CHUNK = 64 * 1024;

/** Where each field is read from: the column index of its header, or none. */
function columnsOf(
  header: string[],
  mapping: Record<string, string>,
  errors: RowErrors,
): Map<string, number> | undefined {
  const columns = new Map<string, number>();
  const before = errors.count;
  const names = header.map((h) => h.trim());
  for (const field of ROW_FIELDS) {
    const mapped = mapping[field];
    const wanted = mapped ?? field;
    const found = names.flatMap((h, i) => (h === wanted ? [i] : []));
    if (found.length > 1) {
      errors.add({
        row: 0,
        column: wanted,
        line: 1,
        message: `the header ${JSON.stringify(wanted)} appears ${found.length} times; headers must be unique`,
      });
    } else if (found.length === 1) {
      columns.set(field, found[0] as number);
    } else if (mapped !== undefined) {
      errors.add({
        row: 0,
        column: mapped,
        line: 1,
        message: `column_mapping.${field} names the header ${JSON.stringify(mapped)}, which the CSV does not have`,
      });
    } else if ((REQUIRED_FIELDS as readonly string[]).includes(field)) {
      errors.add({
        row: 0,
        column: field,
        line: 1,
        message: `the CSV has no ${JSON.stringify(field)} column; add it (empty cells for unknown metrics) or map it with column_mapping`,
      });
    }
  }
  return errors.count === before ? columns : undefined;
}

/** The CSV's text as a stream of pieces. */
function pieces(text: string): Readable {
  return Readable.from(
    (function* () {
      for (let i = 0; i < text.length; i += CHUNK) yield text.slice(i, i + CHUNK);
    })(),
  );
}

/** Rows handed on in batches as they are read (to be saved while the rest is parsed). */
export type RowSink = (rows: NormalRow[]) => Promise<void>;

/** Rows handed to a sink at once. */
const BATCH = 500;

/** The parser's settings for both readings (the exact one adds the record information). */
const PARSER_OPTIONS = {
  record_delimiter: '\n',
  skip_empty_lines: true,
  relax_column_count: false,
  max_record_size: 64 * 1024,
  skip_records_with_error: true,
} as const;

/**
 * Parser errors after which the parser no longer knows where records begin: what follows is not
 * read (and not reported as rows of its own).
 */
const FATAL: ReadonlySet<string> = new Set([
  'CSV_MAX_RECORD_SIZE',
  'CSV_INVALID_CLOSING_QUOTE',
  'CSV_NON_TRIMABLE_CHAR_AFTER_CLOSING_QUOTE',
  'CSV_QUOTE_NOT_CLOSED',
]);

/** A record the parser could not read, after `afterRecords` records it could (the header included). */
interface Unreadable {
  afterRecords: number;
  /** The parser's line count, as it reported it (one record is reported once). */
  parserLine: number | undefined;
  line: number | undefined;
  /** The index of the cell the parser stopped at, when it says. */
  cell: number | undefined;
  message: string;
  fatal: boolean;
}

/**
 * parsePerformanceCsv reads the rows of `csv`, checked and normalised, and returns the number of
 * data rows read; problems go to `errors` (by row, column and the line the row ends on), every
 * row's in row order, a record the parser cannot read included. Rows are handed to `sink` in
 * order, in batches, only while no problem has been found: after one, the caller must discard
 * what the sink was given.
 */
export async function parsePerformanceCsv(
  csv: string,
  mapping: Record<string, string>,
  errors: RowErrors,
  sink: RowSink,
): Promise<{ rowCount: number }> {
  const text = csvRecordText(csv);
  const rowCount = await readWithoutProblems(text, mapping, sink);
  if (rowCount !== undefined) return { rowCount };
  const exact = await readNamingProblems(text, mapping, errors, async () => undefined);
  // Both readings parse alike and check each row alike: only the record information differs.
  if (errors.count === 0) throw new Error('the CSV was read with a problem once and without one again');
  return exact;
}

/** A field and the column index it is read from. */
type FieldColumn = readonly [field: string, index: number];

/**
 * readWithoutProblems reads and checks every row, handing them to `sink` in batches, and returns
 * how many there are; undefined at the first problem of any kind (whatever it handed on is to be
 * discarded), without saying which: the exact reading names it.
 */
async function readWithoutProblems(
  text: string,
  mapping: Record<string, string>,
  sink: RowSink,
): Promise<number | undefined> {
  let problem = false;
  const parser = pieces(text).pipe(
    parse({
      ...PARSER_OPTIONS,
      on_skip: (err) => {
        if (err !== undefined) problem = true;
      },
    }),
  );
  const errors = new RowErrors();
  let fields: FieldColumn[] | undefined;
  let batch: NormalRow[] = [];
  let rowCount = 0;
  try {
    for await (const record of parser as AsyncIterable<string[]>) {
      if (problem) return undefined;
      if (fields === undefined) {
        const columns = columnsOf(record, mapping, errors);
        if (columns === undefined) return undefined;
        fields = [...columns];
        continue;
      }
      if (++rowCount > MAX_ROWS) return undefined;
      const cells: RowCells = {};
      for (const [field, index] of fields) cells[field] = record[index] ?? '';
      const row = normaliseRow(cells, { row: rowCount }, errors, false);
      if (row === undefined) return undefined;
      batch.push(row);
      if (batch.length >= BATCH) {
        await sink(batch);
        batch = [];
      }
    }
  } catch (err) {
    if (err instanceof CsvError) return undefined;
    throw err;
  } finally {
    parser.destroy();
  }
  if (problem || fields === undefined || rowCount === 0) return undefined;
  await sink(batch);
  return rowCount;
}

/**
 * One reading that names its problems: the records the parser skipped, reported in order when the
 * for-await loop reaches their place (the parser runs ahead of the loop by up to a chunk), and the
 * data rows counted so far.
 */
class ProblemReading {
  rowCount = 0;
  tooMany = false;
  header: string[] | undefined;
  private readonly unreadable: Unreadable[] = [];
  private lastReported: Unreadable | undefined;
  private stopAfter: number | undefined;
  private unreadableRows = 0;

  constructor(
    private readonly errors: RowErrors,
    readonly lineOf: (parserLine: number) => number,
  ) {}

  /** The parser skipped a record it could not read (its `on_skip`). */
  skipped(err: CsvError | undefined): void {
    if (err === undefined || this.stopAfter !== undefined) return;
    const afterRecords = typeof err.records === 'number' ? err.records : 0;
    const parserLine = typeof err.lines === 'number' ? err.lines : undefined;
    // The parser reports a record once per stray quote in it: the record is one unreadable row.
    const last = this.unreadable.at(-1) ?? this.lastReported;
    if (last !== undefined && last.afterRecords === afterRecords && last.parserLine === parserLine) return;
    const fatal = FATAL.has(err.code);
    if (fatal) this.stopAfter = afterRecords;
    if (afterRecords > 0) this.unreadableRows++;
    this.unreadable.push({
      afterRecords,
      parserLine,
      line: parserLine === undefined ? undefined : this.lineOf(parserLine),
      cell: err.code === 'INVALID_OPENING_QUOTE' && typeof err.column === 'number' ? err.column : undefined,
      message: `the CSV cannot be read: ${readError(err)}${fatal ? '; the CSV after it was not read' : ''}`,
      fatal,
    });
  }

  /** Reports the unreadable records before the `records`-th readable one; false when reading stops. */
  reportUnreadable(records: number): boolean {
    const { unreadable, errors } = this;
    for (let u = unreadable[0]; u !== undefined && u.afterRecords < records; u = unreadable[0]) {
      unreadable.shift();
      this.lastReported = u;
      if (u.afterRecords === 0) {
        errors.add({ row: 0, message: u.message.replace('the CSV', 'the header line'), ...at(u.line) });
        return false;
      }
      if (!this.countRow(u.line)) return false;
      const column = u.cell === undefined ? undefined : this.header?.[u.cell]?.trim();
      errors.add({ row: this.rowCount, ...(column ? { column } : {}), message: u.message, ...at(u.line) });
      if (u.fatal) return false;
    }
    return true;
  }

  /** Counts one more data row; false (and the error) once there are too many. */
  countRow(line: number | undefined): boolean {
    this.rowCount++;
    if (this.rowCount <= MAX_ROWS) return true;
    this.tooMany = true;
    this.errors.add({
      row: this.rowCount,
      message: `the CSV has more than ${MAX_ROWS} data rows`,
      ...at(line),
    });
    return false;
  }

  /**
   * The parser stopped at `err`, not a record it skipped: the reading stopped here, after the
   * records it had read. Returns the rows counted before it.
   */
  stoppedAt(err: CsvError): { rowCount: number } {
    const records = typeof err.records === 'number' ? err.records : 0;
    const row = Math.max(this.rowCount, records - 1 + this.unreadableRows) + 1;
    const line = typeof err.lines === 'number' ? this.lineOf(err.lines) : undefined;
    if (this.reportUnreadable(Number.POSITIVE_INFINITY))
      this.errors.add({ row, message: `the CSV cannot be read: ${readError(err)}`, ...at(line) });
    return { rowCount: row - 1 };
  }
}

/**
 * readNamingProblems is parsePerformanceCsv's reading of `text` (csvRecordText's output) that
 * names every problem by row, column and line.
 */
async function readNamingProblems(
  text: string,
  mapping: Record<string, string>,
  errors: RowErrors,
  sink: RowSink,
): Promise<{ rowCount: number }> {
  const reading = new ProblemReading(errors, editorLines(text));
  const parser = pieces(text).pipe(
    parse({
      ...PARSER_OPTIONS,
      info: true,
      on_skip: (err) => {
        reading.skipped(err);
      },
    }),
  );
  let batch: NormalRow[] = [];
  let columns: Map<string, number> | undefined;
  try {
    for await (const { record, info } of parser as AsyncIterable<{
      record: string[];
      info: { lines: number; records: number };
    }>) {
      if (!reading.reportUnreadable(info.records)) return { rowCount: reading.rowCount };
      if (columns === undefined) {
        reading.header = record;
        columns = columnsOf(record, mapping, errors);
        if (columns === undefined) return { rowCount: 0 };
        continue;
      }
      const line = reading.lineOf(info.lines);
      if (!reading.countRow(line)) return { rowCount: reading.rowCount };
      const cells: RowCells = {};
      for (const [field, index] of columns) cells[field] = record[index] ?? '';
      const row = normaliseRow(cells, { row: reading.rowCount, line }, errors, false);
      if (row === undefined || errors.count > 0) continue;
      batch.push(row);
      if (batch.length >= BATCH) {
        await sink(batch);
        batch = [];
      }
    }
    if (!reading.reportUnreadable(Number.POSITIVE_INFINITY) || reading.tooMany)
      return { rowCount: reading.rowCount };
  } catch (err) {
    if (!(err instanceof CsvError)) throw err;
    return reading.stoppedAt(err);
  } finally {
    parser.destroy();
  }
  const { rowCount } = reading;
  if (columns === undefined) errors.add({ row: 0, line: 1, message: 'the CSV has no header line' });
  else if (rowCount === 0) errors.add({ row: 0, message: 'the CSV has a header but no data rows' });
  if (errors.count === 0) await sink(batch);
  return { rowCount };
}

/**
 * The parser's message, in our words where we have them, without the parser's own line count (the
 * error names the line as an editor counts it).
 */
function readError(err: CsvError): string {
  if (err.code === 'INVALID_OPENING_QUOTE' && typeof err.column === 'number')
    return `a quote (") inside the unquoted cell in column ${err.column + 1}; put the whole cell in quotes and write each quote inside it twice ("a ""b"" c")`;
  const lengths = /expect (\d+), got (\d+)/.exec(err.message);
  if (err.code === 'CSV_RECORD_INCONSISTENT_FIELDS_LENGTH' && lengths)
    return `the row has ${lengths[2]} cells where the header has ${lengths[1]}`;
  return err.message.replace(/,? (?:on|at) line \d+/, '');
}

const at = (line: number | undefined) => (line === undefined ? {} : { line });
