/**
 * Performance imports: the request's rules, the rows' rules, and the content hash that makes the
 * same content one import. Rows are normalised to strings (metrics as exact decimal strings, null
 * when unknown) so that storage never goes through binary floating point.
 */
import { createHash } from 'node:crypto';
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import { isUuid } from '@adsmcp/runtime/ids';
import { firstCodePoints } from './code-points.ts';
import { csvRecordText, withoutBom } from './csv-text.ts';
import { checkCurrency, checkDate, checkLength, checkNoNul, checkTimezone } from './import-rules.ts';

export const SOURCES = ['vendor_a_ads', 'vendor_b_ads', 'other'] as const;
export type Source = (typeof SOURCES)[number];

export const MAX_ROWS = 5000;
export const MAX_CSV_CHARS = 1_500_000;
export const MAX_MAPPINGS = 20;
export const MAX_LISTED_ERRORS = 100;
const MAX_SAFE = 9_007_199_254_740_991n;

/** The text fields of a row and their longest length. */
export const TEXT_FIELDS = {
  name: 1000,
  headline: 1000,
  body: 5000,
  campaign: 1000,
  audience: 1000,
  hook: 200,
  offer: 200,
} as const;
export type TextField = keyof typeof TEXT_FIELDS;

/** Metrics that must be given (null when unknown) and those that may be left out. */
export const INTEGER_METRICS = ['impressions', 'clicks'] as const;
export const DECIMAL_METRICS = ['spend', 'conversions', 'revenue'] as const;
export type Metric = (typeof INTEGER_METRICS)[number] | (typeof DECIMAL_METRICS)[number];
export const METRICS: readonly Metric[] = [...INTEGER_METRICS, ...DECIMAL_METRICS];
/** Fields a CSV must have a column for (a cell may be empty: unknown). */
export const REQUIRED_FIELDS = ['ad_id', 'impressions', 'clicks', 'spend'] as const;
/** Every field of a row, in storage order: what column_mapping may name. */
export const ROW_FIELDS = ['ad_id', ...Object.keys(TEXT_FIELDS), ...METRICS] as readonly string[];

/** A row as stored: text as given, metrics as exact decimal strings, null when unknown. */
export type NormalRow = { ad_id: string } & Record<TextField, string | null> & Record<Metric, string | null>;

/** A refused row: 1 for the first data row (0 for the CSV as a whole). */
export interface RowError {
  row: number;
  column?: string;
  message: string;
  line?: number;
}

export interface ImportMeta {
  source: Source;
  name: string;
  currency: string;
  timezone: string;
  attribution: string;
  since: string;
  until: string;
}

/** A row as the request carries it (numbers absent when unknown). */
export interface RequestRow {
  ad_id: string;
  name?: string | undefined;
  headline?: string | undefined;
  body?: string | undefined;
  campaign?: string | undefined;
  audience?: string | undefined;
  hook?: string | undefined;
  offer?: string | undefined;
  impressions?: number | undefined;
  clicks?: number | undefined;
  spend?: number | undefined;
  conversions?: number | undefined;
  revenue?: number | undefined;
}

export type ImportInput =
  | { format: 'rows'; rows: RequestRow[] }
  | { format: 'csv'; csv: string; columnMapping: Record<string, string> };

export interface ImportRequest {
  meta: ImportMeta;
  input: ImportInput;
}

/** validateImport checks what can be checked without reading the rows; the worker checks them. */
export function validateImport(req: {
  source: string;
  name: string;
  currency: string;
  timezone: string;
  attribution: string;
  since: string;
  until: string;
  rows: RequestRow[];
  csv?: string | undefined;
  columnMapping: Record<string, string>;
}): ImportRequest {
  if (!(SOURCES as readonly string[]).includes(req.source))
    throw new InvalidArgumentError(
      `source must be one of ${SOURCES.join(', ')} (got ${JSON.stringify(req.source)})`,
    );
  checkLength('name', req.name, 1, 200);
  checkCurrency('currency', req.currency);
  checkTimezone('timezone', req.timezone);
  checkLength('attribution', req.attribution, 1, 1000);
  checkDate('since', req.since);
  checkDate('until', req.until);
  if (req.since > req.until)
    throw new InvalidArgumentError(`since (${req.since}) must not be after until (${req.until})`);
  const meta: ImportMeta = {
    source: req.source as Source,
    name: req.name,
    currency: req.currency,
    timezone: req.timezone,
    attribution: req.attribution,
    since: req.since,
    until: req.until,
  };
  const mappings = Object.entries(req.columnMapping);
  if (req.csv === undefined) {
    if (req.rows.length === 0) throw new InvalidArgumentError('give either rows (1 to 5000) or csv');
    if (req.rows.length > MAX_ROWS)
      throw new InvalidArgumentError(`rows must have 1 to ${MAX_ROWS} items (got ${req.rows.length})`);
    if (mappings.length > 0) throw new InvalidArgumentError('column_mapping applies only to csv');
    return { meta, input: { format: 'rows', rows: req.rows } };
  }
  if (req.rows.length > 0) throw new InvalidArgumentError('give either rows or csv, not both');
  // A byte-order mark is not part of the text (the parser drops it), so it is not counted.
  checkLength('csv', withoutBom(req.csv), 1, MAX_CSV_CHARS);
  checkNoNul('csv', req.csv);
  if (mappings.length > MAX_MAPPINGS)
    throw new InvalidArgumentError(
      `column_mapping may have at most ${MAX_MAPPINGS} properties (got ${mappings.length})`,
    );
  for (const [field, header] of mappings) {
    if (!ROW_FIELDS.includes(field))
      throw new InvalidArgumentError(
        `column_mapping.${field} is not a row field; fields: ${ROW_FIELDS.join(', ')}`,
      );
    checkLength(`column_mapping.${field}`, header, 1, 200);
  }
  return { meta, input: { format: 'csv', csv: req.csv, columnMapping: req.columnMapping } };
}

/** The rows as they are hashed and handed to the worker: every field present, in field order. */
function canonicalRows(rows: readonly RequestRow[]): unknown[][] {
  return rows.map((r) => ROW_FIELDS.map((f) => r[f as keyof RequestRow] ?? null));
}

/**
 * contentHash is the SHA-256 of the metadata and the content: the rows with every field in field
 * order (unknown as null), or the CSV as it is parsed (csvRecordText: without a byte-order mark,
 * record line breaks made LF) and the mapping in key order: the same hash is the same rows.
 */
export function contentHash({ meta, input }: ImportRequest): string {
  const content =
    input.format === 'rows'
      ? { rows: canonicalRows(input.rows) }
      : {
          csv: csvRecordText(input.csv),
          column_mapping: Object.fromEntries(
            Object.entries(input.columnMapping).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
          ),
        };
  const ordered = [
    meta.source,
    meta.name,
    meta.currency,
    meta.timezone,
    meta.attribution,
    meta.since,
    meta.until,
    input.format,
    content,
  ];
  return createHash('sha256').update(JSON.stringify(ordered)).digest('hex');
}

/** The stored input the worker reads back: rows in canonical field order. */
export function storedRows(rows: readonly RequestRow[]): unknown[][] {
  return canonicalRows(rows);
}

export function validateImportId(importId: string): string {
  if (!isUuid(importId))
    throw new InvalidArgumentError(`import_id must be a UUID (got ${JSON.stringify(importId)})`);
  return importId;
}

// --- Rows -------------------------------------------------------------------------------------

/** Collects row errors; counts them all, keeps the first MAX_LISTED_ERRORS. */
export class RowErrors {
  readonly listed: RowError[] = [];
  count = 0;
  add(e: RowError): void {
    this.count++;
    if (this.listed.length < MAX_LISTED_ERRORS) this.listed.push(e);
  }
}

const INTEGER_TEXT = /^\d+$/;
/** The longest decimal metric kept: far beyond any real figure, short enough to store as written. */
const MAX_DECIMAL_CHARS = 60;
const DECIMAL_TEXT = /^\d+(\.\d+)?$/;
const SIGNED_DECIMAL_TEXT = /^-?\d+(\.\d+)?$/;

type Cell = string | number | null;
type Where = { row: number; line?: number };

function problem(errors: RowErrors, at: Where, column: string, message: string): null {
  errors.add({ row: at.row, column, message, ...(at.line === undefined ? {} : { line: at.line }) });
  return null;
}

/** A whole number 0..2^53-1 as its decimal digits, or null (unknown). */
function integerMetric(value: Cell, column: string, at: Where, errors: RowErrors): string | null {
  if (value === null || value === '') return null;
  const rule = 'must be a whole number from 0 to 9007199254740991 (empty when unknown)';
  if (typeof value === 'number') {
    return Number.isSafeInteger(value) && value >= 0
      ? String(value)
      : problem(errors, at, column, `${rule} (got ${value})`);
  }
  const text = value.trim();
  if (!INTEGER_TEXT.test(text) || (text.length > 15 && BigInt(text) > MAX_SAFE))
    return problem(errors, at, column, `${rule} (got ${JSON.stringify(firstCodePoints(value, 40))})`);
  // Leading zeros dropped (BigInt reads any length exactly); digits without one are the number.
  return text.length > 1 && text.charCodeAt(0) === 0x30 ? BigInt(text).toString() : text;
}

/**
 * A decimal metric as exact decimal text, or null (unknown). A number from JSON is kept as the
 * shortest decimal that reads back as it (12.34 stays "12.34"); PostgreSQL's NUMERIC reads its
 * exponent form (1e-7) exactly too.
 */
function decimalMetric(value: Cell, column: Metric, at: Where, errors: RowErrors): string | null {
  if (value === null || value === '') return null;
  const signed = column === 'revenue';
  const rule = signed
    ? 'must be a decimal number such as 12.34 or -5 (empty when unknown)'
    : 'must be a decimal number of at least 0 such as 12.34 (empty when unknown)';
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || (!signed && value < 0))
      return problem(errors, at, column, `${rule} (got ${value})`);
    return String(value);
  }
  const text = value.trim();
  if (!(signed ? SIGNED_DECIMAL_TEXT : DECIMAL_TEXT).test(text))
    return problem(errors, at, column, `${rule} (got ${JSON.stringify(firstCodePoints(value, 40))})`);
  if (text.length > MAX_DECIMAL_CHARS)
    return problem(
      errors,
      at,
      column,
      `must be a decimal number of at most ${MAX_DECIMAL_CHARS} characters (got ${text.length})`,
    );
  return text;
}

function textField(
  value: Cell | undefined,
  column: string,
  max: number,
  at: Where,
  errors: RowErrors,
): string | null {
  if (value === null || value === undefined) return null;
  const text = String(value);
  if (text.includes('\u0000'))
    return problem(errors, at, column, 'must not contain the NUL character (U+0000)');
  // A text of at most `max` UTF-16 units has at most `max` characters: count only longer ones.
  const length = text.length <= max ? text.length : [...text].length;
  if (length > max) return problem(errors, at, column, `must be at most ${max} characters (got ${length})`);
  return text;
}

const TEXT_FIELD_LIMITS = Object.entries(TEXT_FIELDS) as [TextField, number][];

/** The cells of one row by field name; a field absent from the row is undefined. */
export type RowCells = Partial<Record<string, Cell>>;

/**
 * normaliseRow checks one row's cells and returns it as stored, or undefined after recording
 * its problems in `errors`. `requireKeys` makes the required metrics' keys mandatory (JSON rows:
 * null says unknown; a missing key is a mistake).
 */
export function normaliseRow(
  cells: RowCells,
  at: Where,
  errors: RowErrors,
  requireKeys: boolean,
): NormalRow | undefined {
  const before = errors.count;
  const adId = cells.ad_id;
  const adIdText = adId === null || adId === undefined ? '' : String(adId).trim();
  if (adIdText === '') problem(errors, at, 'ad_id', 'is required');
  else textField(adIdText, 'ad_id', 255, at, errors);
  if (requireKeys) {
    for (const f of ['impressions', 'clicks', 'spend'])
      if (cells[f] === undefined) problem(errors, at, f, 'is required (null when unknown)');
  }
  const row = { ad_id: adIdText } as NormalRow;
  for (const [f, max] of TEXT_FIELD_LIMITS) row[f] = textField(cells[f], f, max, at, errors);
  for (const f of INTEGER_METRICS) row[f] = integerMetric(cells[f] ?? null, f, at, errors);
  for (const f of DECIMAL_METRICS) row[f] = decimalMetric(cells[f] ?? null, f, at, errors);
  return errors.count === before ? row : undefined;
}

/** normaliseStoredRows checks rows handed over as JSON (storedRows' shape; null is unknown). */
export function normaliseStoredRows(stored: unknown[][], errors: RowErrors): NormalRow[] {
  const out: NormalRow[] = [];
  stored.forEach((values, i) => {
    const cells: RowCells = {};
    ROW_FIELDS.forEach((f, j) => {
      cells[f] = (values[j] ?? null) as Cell;
    });
    const row = normaliseRow(cells, { row: i + 1 }, errors, false);
    if (row !== undefined) out.push(row);
  });
  return out;
}
