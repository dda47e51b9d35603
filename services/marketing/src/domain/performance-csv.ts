/**
 * Reads a performance CSV with csv-parse's streaming parser: the first line is the header; each
 * field is read from the header column_mapping names for it, or from the header of its own name.
 * Columns nobody asked for are ignored. An empty cell is unknown (null), never 0.
 */
import { Readable } from 'node:stream';
import { CsvError, parse } from 'csv-parse';
import {
  MAX_ROWS,
  type NormalRow,
  normaliseRow,
  REQUIRED_FIELDS,
  ROW_FIELDS,
  type RowCells,
  type RowErrors,
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

/**
 * parsePerformanceCsv reads the rows of `csv`, checked and normalised, and returns the number of
 * data rows read; problems go to `errors` (by row, column and line). Rows are handed to `sink` in
 * order, in batches, only while no problem has been found: after one, the caller must discard
 * what the sink was given.
 */
export async function parsePerformanceCsv(
  csv: string,
  mapping: Record<string, string>,
  errors: RowErrors,
  sink: RowSink,
): Promise<{ rowCount: number }> {
  const parser = pieces(csv).pipe(
    parse({
      bom: true,
      skip_empty_lines: true,
      info: true,
      relax_column_count: false,
      max_record_size: 64 * 1024,
    }),
  );
  let batch: NormalRow[] = [];
  let columns: Map<string, number> | undefined;
  let rowCount = 0;
  try {
    for await (const { record, info } of parser as AsyncIterable<{
      record: string[];
      info: { lines: number };
    }>) {
      if (columns === undefined) {
        columns = columnsOf(record, mapping, errors);
        if (columns === undefined) return { rowCount: 0 };
        continue;
      }
      rowCount++;
      if (rowCount > MAX_ROWS) {
        errors.add({
          row: rowCount,
          line: info.lines,
          message: `the CSV has more than ${MAX_ROWS} data rows`,
        });
        return { rowCount };
      }
      const cells: RowCells = {};
      for (const [field, index] of columns) cells[field] = record[index] ?? '';
      const row = normaliseRow(cells, { row: rowCount, line: info.lines }, errors, false);
      if (row === undefined || errors.count > 0) continue;
      batch.push(row);
      if (batch.length >= BATCH) {
        await sink(batch);
        batch = [];
      }
    }
  } catch (err) {
    if (!(err instanceof CsvError)) throw err;
    const line = (err as CsvError & { lines?: number }).lines;
    errors.add({
      row: rowCount + 1,
      message: `the CSV cannot be read: ${err.message}`,
      ...(typeof line === 'number' ? { line } : {}),
    });
    return { rowCount };
  } finally {
    parser.destroy();
  }
  if (columns === undefined) errors.add({ row: 0, line: 1, message: 'the CSV has no header line' });
  else if (rowCount === 0) errors.add({ row: 0, message: 'the CSV has a header but no data rows' });
  if (errors.count === 0) await sink(batch);
  return { rowCount };
}
