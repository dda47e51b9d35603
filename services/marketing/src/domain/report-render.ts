/**
 * A stored performance report rendered as CSV or Markdown: one row per ad and a totals row, the
 * same columns in both. Unknown figures are empty cells (never 0).
 *
 * CSV is RFC 4180 (csv-stringify: CRLF line ends, a field with a comma, a quote or a line break
 * quoted, quotes doubled) and safe to open in a spreadsheet (OWASP CSV injection): every cell goes
 * through spreadsheetSafeCell (@adsmcp/runtime/csv-cell), the one rule of every CSV the product
 * writes. Figure cells that are a plain decimal number stay numbers: a spreadsheet reads "-12" as
 * the number -12, not a formula, and a quote would turn every negative change into text.
 *
 * Markdown is a table whose cells are escaped: backslash and the characters that start inline
 * constructs (| ` * _ [ ] ~) get a backslash; &, <, > and " become entities, so no HTML passes;
 * a line break becomes <br>; a leading #, +, -, = or "1." / "1)" that could start a block is escaped.
 */
import { spreadsheetSafeCell } from '@adsmcp/runtime/csv-cell';
import { stringify } from 'csv-stringify/sync';
import {
  type Comparison,
  IMPORTED_METRIC_NAMES,
  type ImportedComparison,
  type ImportedMetrics,
  importedTotals,
  METRIC_NAMES,
  type ReportRow,
} from './performance-report.ts';

/** The report as stored: what the renderers need. */
export interface RenderableReport {
  reportId: string;
  name: string;
  accountId: string;
  campaignId: string | null;
  since: string;
  until: string;
  previousSince: string;
  previousUntil: string;
  currency: string;
  timeZone: string;
  preliminary: boolean;
  rows: ReportRow[];
  totals: Comparison;
}

type Cell = { text: string; figure: boolean };

const TEXT_COLUMNS = [
  'row_type',
  'ad_id',
  'ad_name',
  'ad_group_id',
  'ad_group_name',
  'campaign_id',
  'creative_labels',
] as const;

/** Per metric: the period, the preceding period, the absolute and the relative change. */
const FIGURE_COLUMNS = METRIC_NAMES.flatMap((m) => [
  m,
  `${m}_previous`,
  `${m}_change`,
  `${m}_change_relative`,
]);

/**
 * The imported figures of one currency: the account's on the ad and total rows, another's on a
 * row of its own (row_type ad_other_currency or total_other_currency), never converted.
 */
const IMPORTED_COLUMNS = [
  'imported_currency',
  'imported_import_ids',
  'imported_import_ids_previous',
  'imported_partial_import_ids',
  'imported_partial_import_ids_previous',
  ...IMPORTED_METRIC_NAMES.flatMap((m) => [`imported_${m}`, `imported_${m}_previous`]),
];

export const REPORT_COLUMNS: readonly string[] = [...TEXT_COLUMNS, ...FIGURE_COLUMNS, ...IMPORTED_COLUMNS];

function figureCells(c: Comparison): Cell[] {
  return METRIC_NAMES.flatMap((m) =>
    [c.current[m], c.previous[m], c.absolute_change[m], c.relative_change[m]].map((v) => ({
      text: v ?? '',
      figure: true,
    })),
  );
}

const text = (t: string): Cell => ({ text: t, figure: false });
const ids = (list: readonly string[]): Cell => text(list.join('; '));

function importedCells(c: ImportedComparison | undefined): Cell[] {
  if (c === undefined) return IMPORTED_COLUMNS.map(() => text(''));
  return [
    text(c.currency),
    ids(c.current.import_ids),
    ids(c.previous.import_ids),
    ids(c.current.partial_import_ids),
    ids(c.previous.partial_import_ids),
    ...IMPORTED_METRIC_NAMES.flatMap((m) =>
      [c.current[m], c.previous[m]].map((v) => ({ text: v ?? '', figure: true })),
    ),
  ];
}

const noPlatformFigures = (): Cell[] => FIGURE_COLUMNS.map(() => ({ text: '', figure: true }));

/** A row's line, then a line per other currency of its imports (the same text cells). */
function linesOf(
  rowType: string,
  textCells: Cell[],
  platform: Comparison,
  imported: ImportedMetrics | undefined,
): Cell[][] {
  return [
    [text(rowType), ...textCells, ...figureCells(platform), ...importedCells(imported?.account_currency)],
    ...(imported?.other_currencies ?? []).map((c) => [
      text(`${rowType}_other_currency`),
      ...textCells,
      ...noPlatformFigures(),
      ...importedCells(c),
    ]),
  ];
}

/** The table: the lines of each ad, then those of the totals. */
function tableOf(report: RenderableReport): Cell[][] {
  const rows = report.rows.flatMap((r) =>
    linesOf(
      'ad',
      [
        text(r.ad_id),
        text(r.ad_name),
        text(r.ad_group_id),
        text(r.ad_group_name),
        text(r.campaign_id),
        text(r.creative_labels.map((l) => l.name).join('; ')),
      ],
      r.platform,
      r.imported,
    ),
  );
  const totals = linesOf(
    'total',
    TEXT_COLUMNS.slice(1).map(() => text('')),
    report.totals,
    importedTotals(report.rows, report.currency),
  );
  return [...rows, ...totals];
}

const PLAIN_NUMBER = /^-?\d+(\.\d+)?$/;

/** A CSV cell as a spreadsheet may read it without running it (see the module comment). */
export function neutraliseCsvCell(cell: Cell): string {
  return spreadsheetSafeCell(cell.text, { number: cell.figure });
}

/** renderCsv is the report as RFC 4180 CSV with a header row, formula-safe. */
export function renderCsv(report: RenderableReport): string {
  const records = tableOf(report).map((row) => row.map(neutraliseCsvCell));
  return stringify([[...REPORT_COLUMNS], ...records], { record_delimiter: 'windows' });
}

/** A Markdown table cell's text: nothing in it starts a construct, closes the cell or is HTML. */
export function escapeMarkdownCell(value: string, figure = false): string {
  if (figure && PLAIN_NUMBER.test(value)) return value;
  const escaped = value
    .replace(/[\\|`*_[\]~]/g, (c) => `\\${c}`)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/\r\n|\r|\n/g, '<br>');
  return escaped.replace(/^([#+\-=])/, '\\$1').replace(/^(\d+)([.)])/, '$1\\$2');
}

const markdownRow = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;

/** renderMarkdown is the report's facts as a two-column table, then the figures table. */
export function renderMarkdown(report: RenderableReport): string {
  const facts: [string, string][] = [
    ['name', report.name],
    ['report_id', report.reportId],
    ['account_id', report.accountId],
    ['campaign_id', report.campaignId ?? ''],
    ['period', `${report.since}..${report.until}`],
    ['previous_period', `${report.previousSince}..${report.previousUntil}`],
    ['currency', report.currency],
    ['time_zone', report.timeZone],
    ['preliminary', String(report.preliminary)],
  ];
  const lines = [
    markdownRow(['field', 'value']),
    markdownRow(['---', '---']),
    // Every cell escaped, the field names too (`time_zone` would otherwise start emphasis).
    ...facts.map(([k, v]) => markdownRow([escapeMarkdownCell(k), escapeMarkdownCell(v)])),
    '',
    markdownRow(REPORT_COLUMNS.map((c) => escapeMarkdownCell(c))),
    markdownRow(REPORT_COLUMNS.map(() => '---')),
    ...tableOf(report).map((row) => markdownRow(row.map((c) => escapeMarkdownCell(c.text, c.figure)))),
  ];
  return `${lines.join('\n')}\n`;
}
