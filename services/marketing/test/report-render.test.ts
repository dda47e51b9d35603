import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parse } from 'csv-parse/sync';
import fc from 'fast-check';
import {
  compareMetrics,
  type ImportedComparison,
  type ImportedFigures,
  metricsOf,
  type ReportRow,
} from '../src/domain/performance-report.ts';
import {
  escapeMarkdownCell,
  REPORT_COLUMNS,
  type RenderableReport,
  renderCsv,
  renderMarkdown,
} from '../src/domain/report-render.ts';

const known = (impressions: bigint, clicks: bigint, spend: bigint, conversions: bigint) =>
  metricsOf({ impressions, clicks, spend_micros: spend, conversions });
const unknown = metricsOf({ impressions: null, clicks: null, spend_micros: null, conversions: null });

function row(overrides: Partial<ReportRow> = {}): ReportRow {
  return {
    ad_id: 'ad_1',
    ad_name: 'Spring ad',
    ad_group_id: 'adg_1',
    ad_group_name: 'Group A',
    campaign_id: 'cmp_1',
    creative_labels: [],
    platform: compareMetrics(known(1000n, 50n, 25_000_000n, 5n), known(800n, 60n, 24_000_000n, 4n)),
    ...overrides,
  };
}

function report(rows: ReportRow[]): RenderableReport {
  return {
    reportId: '7d2b6c1e-1a2b-4c3d-8e9f-0a1b2c3d4e5f',
    name: 'Spring | review',
    accountId: '5b1f1c7e-4f7e-4c0e-9a55-0d3e6f1b2c3d',
    campaignId: null,
    since: '2026-11-01',
    until: '2026-11-07',
    previousSince: '2026-10-25',
    previousUntil: '2026-10-31',
    currency: 'USD',
    timeZone: 'America/Los_Angeles',
    preliminary: false,
    rows,
    totals: compareMetrics(known(1000n, 50n, 25_000_000n, 5n), known(800n, 60n, 24_000_000n, 4n)),
  };
}

const label = (name: string) => ({
  item_id: 'f7a3c1de-0000-4000-8000-000000000001',
  name,
  hook: 'h',
  offer: 'o',
});

function figures(spend: string | null, importIds: string[]): ImportedFigures {
  return {
    impressions: spend === null ? null : '10',
    clicks: null,
    spend,
    conversions: null,
    revenue: spend === null ? null : '-3.5',
    row_count: importIds.length,
    import_ids: importIds,
    partial_import_ids: [],
  };
}

const importedIn = (currency: string, spend: string): ImportedComparison => ({
  currency,
  current: figures(spend, ['0c5e2d4a-0000-4000-8000-000000000001']),
  previous: figures(null, []),
});

/** The CSV parsed back (RFC 4180) as records keyed by column. */
function csvRecords(csv: string): Record<string, string>[] {
  return parse(csv, { columns: true }) as Record<string, string>[];
}

describe('CSV', () => {
  test('cells beginning with = + - @ tab or carriage return get a leading quote; figures stay numbers', () => {
    const names = ['=HYPERLINK("http://x.example","go")', '+1+2', '-2+3', '@SUM(A1)', '\tTAB', '\rCR'];
    const rows = names.map((n, i) => row({ ad_id: `ad_${i}`, ad_name: n, creative_labels: [label(n)] }));
    const records = csvRecords(renderCsv(report(rows)));
    for (const [i, n] of names.entries()) {
      assert.equal(records[i]?.ad_name, `'${n}`);
      assert.equal(records[i]?.creative_labels, `'${n}`);
    }
    // A negative change is a plain number, exempt: a spreadsheet reads it as a number, not a formula.
    assert.equal(records[0]?.clicks_change, '-10');
    assert.equal(records[0]?.clicks_change_relative, '-0.1667');
    assert.equal(records[0]?.ctr, '0.050000');
  });

  test('formulas behind white space, a no-break space or in full-width forms, and DDE, are neutralised too', () => {
    const names = [
      ' =1+1',
      '\u00A0=HYPERLINK("http://x.example","go")',
      '\u3000+1',
      '\uFF1DSUM(A1)',
      ' \uFF0B1',
      '\uFF0D2',
      '\uFF20SUM(A1)',
      "=cmd|' /C calc'!A0",
      "@cmd|' /C calc'!A0",
    ];
    const rows = names.map((n) =>
      row({ ad_id: n, ad_name: n, ad_group_name: n, creative_labels: [label(n)] }),
    );
    const records = csvRecords(renderCsv(report(rows)));
    for (const [i, n] of names.entries()) {
      for (const column of ['ad_id', 'ad_name', 'ad_group_name', 'creative_labels'])
        assert.equal(records[i]?.[column], `'${n}`, `${column} ${JSON.stringify(n)}`);
    }
  });

  /** Any text, and often blanks then a formula character, in ASCII or full width. */
  const cellText = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 30 }),
    fc
      .tuple(
        fc.array(fc.constantFrom(' ', '\t', '\r', '\n', '\u00A0', '\u2003', '\u3000', '\u200B'), {
          maxLength: 3,
        }),
        fc.constantFrom('=', '+', '-', '@', '\uFF1D', '\uFF0B', '\uFF0D', '\uFF20', '|', 'a'),
        fc.string({ unit: 'binary', maxLength: 20 }),
      )
      .map(([blanks, first, rest]) => `${blanks.join('')}${first}${rest}`),
  );

  test('property: every text cell reads back as written or with one quote, and never as a formula', () => {
    fc.assert(
      fc.property(cellText, (name) => {
        const records = csvRecords(renderCsv(report([row({ ad_name: name })])));
        const cell = records[0]?.ad_name;
        assert.ok(cell === name || cell === `'${name}`, JSON.stringify(name));
        assert.ok(
          cell.startsWith("'") || !/^[\s\p{Cc}\p{Cf}\p{Zs}]*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20]/u.test(cell),
        );
      }),
      { numRuns: 300 },
    );
  });

  test('quoting is RFC 4180: commas, quotes and line breaks survive a round trip, lines end CRLF', () => {
    const name = 'Two, "for" one\nthis week';
    const csv = renderCsv(report([row({ ad_name: name })]));
    assert.ok(csv.includes('"Two, ""for"" one\nthis week"'));
    assert.ok(csv.split('\r\n')[0]?.startsWith('row_type,ad_id,ad_name,'));
    assert.equal(csvRecords(csv)[0]?.ad_name, name);
  });

  test('unknown figures are empty cells, never 0, and the totals row comes last', () => {
    const csv = renderCsv(report([row({ platform: compareMetrics(unknown, unknown) })]));
    const records = csvRecords(csv);
    assert.deepEqual(Object.keys(records[0] ?? {}), [...REPORT_COLUMNS]);
    assert.equal(records[0]?.impressions, '');
    assert.equal(records[0]?.ctr_change_relative, '');
    assert.equal(records[1]?.row_type, 'total');
    assert.equal(records[1]?.impressions, '1000');
  });
});

describe('Markdown', () => {
  test('pipes, backslashes, line breaks and HTML are escaped in a cell', () => {
    assert.equal(escapeMarkdownCell('a|b\\c'), 'a\\|b\\\\c');
    assert.equal(escapeMarkdownCell('one\ntwo\r\nthree'), 'one<br>two<br>three');
    assert.equal(
      escapeMarkdownCell('<img src=x onerror="y">&'),
      '&lt;img src=x onerror=&quot;y&quot;&gt;&amp;',
    );
    assert.equal(
      escapeMarkdownCell('*bold* _it_ `code` [link](http://x) ~s~'),
      '\\*bold\\* \\_it\\_ \\`code\\` \\[link\\](http://x) \\~s\\~',
    );
  });

  test('leading characters that start markdown constructs are escaped; numbers stay as they are', () => {
    assert.equal(escapeMarkdownCell('# heading'), '\\# heading');
    assert.equal(escapeMarkdownCell('- item'), '\\- item');
    assert.equal(escapeMarkdownCell('+ item'), '\\+ item');
    assert.equal(escapeMarkdownCell('=== rule'), '\\=== rule');
    assert.equal(escapeMarkdownCell('1. first'), '1\\. first');
    assert.equal(escapeMarkdownCell('> quote'), '&gt; quote');
    assert.equal(escapeMarkdownCell('-12', true), '-12');
  });

  test('the table has one line per ad and the totals, every line the same number of cells', () => {
    const md = renderMarkdown(report([row({ ad_name: 'a|b\nc' }), row({ ad_id: 'ad_2' })]));
    const table = md.split('\n\n')[1]?.trim().split('\n') ?? [];
    assert.equal(table.length, 2 + 3);
    const cells = (line: string) => line.split(/(?<!\\)\|/).length;
    for (const line of table) assert.equal(cells(line), REPORT_COLUMNS.length + 2, line);
    assert.ok(md.includes('| name | Spring \\| review |'));
    assert.ok(table[2]?.includes('a\\|b<br>c'));
    // Field names and column headers are cells too: their underscores are escaped.
    assert.ok(md.includes('| time\\_zone |'), md);
    assert.ok(md.includes('| previous\\_period |'), md);
    assert.ok(!/[^\\]_/.test(table[0] ?? ''), table[0]);
  });

  test('imported figures follow the platform ones; another currency gets lines of its own', () => {
    const md = renderMarkdown(
      report([
        row({
          imported: {
            account_currency: importedIn('USD', '1.50'),
            other_currencies: [importedIn('EUR', '2')],
          },
        }),
      ]),
    );
    const table = md.split('\n\n')[1]?.trim().split('\n') ?? [];
    // Header, rule, the ad and its EUR line, the totals and their EUR line.
    assert.equal(table.length, 2 + 4);
    const cells = (line: string) => line.split(/(?<!\\)\|/).length;
    for (const line of table) assert.equal(cells(line), REPORT_COLUMNS.length + 2, line);
    assert.match(table[3] ?? '', /^\| ad\\_other\\_currency \| ad\\_1 \|/);
    assert.match(table[3] ?? '', /\| EUR \| 0c5e2d4a-0000-4000-8000-000000000001 \|/);
  });
});

describe('imported columns in CSV', () => {
  test('the account currency’s imported figures are on the ad line, exact; negative ones stay numbers', () => {
    const records = csvRecords(
      renderCsv(
        report([row({ imported: { account_currency: importedIn('USD', '1.50'), other_currencies: [] } })]),
      ),
    );
    assert.equal(records.length, 2);
    assert.equal(records[0]?.imported_currency, 'USD');
    assert.equal(records[0]?.imported_spend, '1.50');
    assert.equal(records[0]?.imported_revenue, '-3.5');
    assert.equal(records[0]?.imported_clicks, '');
    assert.equal(records[0]?.imported_spend_previous, '');
    assert.equal(records[0]?.imported_import_ids, '0c5e2d4a-0000-4000-8000-000000000001');
    assert.equal(records[1]?.row_type, 'total');
    assert.equal(records[1]?.imported_spend, '1.50');
  });

  test('a report stored before imports were joined has empty imported cells', () => {
    const records = csvRecords(renderCsv(report([row()])));
    assert.equal(records.length, 2);
    assert.equal(records[0]?.imported_currency, '');
    assert.equal(records[1]?.imported_spend, '');
  });
});
