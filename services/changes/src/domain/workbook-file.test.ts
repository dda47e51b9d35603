import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import { strToU8, zipSync } from 'fflate';
import { type PartCell, type PartSheet, sharedStringsPart, xlsxFile } from '../../test/xlsx-parts.ts';
import { type Cell, checkedWorkbook, inflateWorkbook, sheetsFromTabs, ZIP_LIMITS } from './workbook-file.ts';

const refuses = (fn: () => unknown, message: RegExp) =>
  assert.throws(fn, (e: unknown) => e instanceof InvalidArgumentError && message.test(e.message));

test('a zip bomb is refused once its entry inflates past the limit, without inflating it all', () => {
  // 200 MiB of zeros compress to about 200 KB.
  const bomb = zipSync({ 'xl/worksheets/sheet1.xml': new Uint8Array(200 * 1024 * 1024) }, { level: 9 });
  assert.ok(bomb.length < 800_000);
  const before = process.memoryUsage().arrayBuffers;
  refuses(() => inflateWorkbook(bomb), /entry xl\/worksheets\/sheet1.xml inflates to more than 16 MiB/);
  assert.ok(process.memoryUsage().arrayBuffers - before < 64 * 1024 * 1024);
});

test('an archive that inflates past the total limit is refused', () => {
  const files: Record<string, Uint8Array> = {};
  for (let i = 0; i < 5; i++) files[`xl/media/${i}.bin`] = new Uint8Array(10 * 1024 * 1024);
  refuses(() => inflateWorkbook(zipSync(files)), /inflates to more than 40 MiB in all/);
});

test('an archive with too many entries is refused', () => {
  const files: Record<string, Uint8Array> = {};
  for (let i = 0; i <= ZIP_LIMITS.maxEntries; i++) files[`f${i}.txt`] = strToU8('x');
  refuses(() => inflateWorkbook(zipSync(files)), /more than 100 entries/);
});

test('a sheet is bounded before it is parsed by its rows and cells in the file, empty ones included', () => {
  const { maxRawRows, maxRawCells } = ZIP_LIMITS;
  const rows = (n: number, cells: number) =>
    Array.from({ length: n }, (_, i) => `<row r="${i + 1}">${'<c r="A1" s="1"/>'.repeat(cells)}</row>`);
  const sheet = (r: string[]) =>
    zipSync({
      'xl/workbook.xml': strToU8('<workbook/>'),
      'xl/worksheets/sheet1.xml': strToU8(`<worksheet><sheetData>${r.join('')}</sheetData></worksheet>`),
    });
  checkedWorkbook(sheet(rows(maxRawRows, 0)));
  refuses(
    () => checkedWorkbook(sheet(rows(maxRawRows + 1, 0))),
    new RegExp(
      `the worksheet xl/worksheets/sheet1.xml has more than ${maxRawRows} rows in its file, empty \\(formatted\\) ` +
        `ones included; a sheet may have at most 1000 rows with a value besides its header, and at most ` +
        `${maxRawRows} rows and ${maxRawCells} cells in its file in all`,
    ),
  );
  refuses(
    () => checkedWorkbook(sheet(rows(maxRawCells / 100 + 1, 100))),
    new RegExp(`has more than ${maxRawCells} cells in its file`),
  );
  // A worksheet the workbook names, wherever its part is, is named by its tab too.
  const named = xlsxFile([{ name: 'Ads', rows: [] }], {
    'xl/worksheets/sheet1.xml': `<worksheet><sheetData>${rows(maxRawRows + 1, 0).join('')}</sheetData></worksheet>`,
  });
  refuses(
    () => checkedWorkbook(named),
    new RegExp(
      `the worksheet xl/worksheets/sheet1.xml \\(the sheet "Ads"\\) has more than ${maxRawRows} rows`,
    ),
  );
});

const header = ['name', 'objective', 'budget', 'budget_type'];
const campaigns = (rows: PartCell[][], more: Partial<PartSheet> = {}): PartSheet => ({
  name: 'campaigns',
  rows: [header, ...rows],
  ...more,
});

test('empty formatted rows after the data do not count: a sheet of 1000 rows of values and 5 empty ones is read', () => {
  const rows = Array.from({ length: 1000 }, (_, i) => [`Campaign ${i}`, 'clicks', 10, 'daily']);
  checkedWorkbook(xlsxFile([campaigns(rows, { emptyRowsAfter: 5 })]));
});

test('a sheet of more than 1000 rows with a value besides its header is refused once read', () => {
  const tab = (n: number) => ({
    sheet: 'Campaigns',
    data: [header, ...Array.from({ length: n }, (_, i) => [`Campaign ${i}`, 'clicks', '10', 'daily'])],
  });
  assert.equal(sheetsFromTabs([tab(1000)]).campaigns.length, 1000);
  // Rows with no value are not rows.
  assert.equal(
    sheetsFromTabs([{ sheet: 'campaigns', data: [...tab(1000).data, [null], [' ']] }]).campaigns.length,
    1000,
  );
  refuses(
    () => sheetsFromTabs([tab(1001)]),
    /the campaigns sheet has 1001 rows with a value besides its header; at most 1000$/,
  );
});

test('a header two columns share, case and spaces aside, is refused by sheet, header and columns', () => {
  const tab = (sheet: string, head: Cell[], row: Cell[]) => sheetsFromTabs([{ sheet, data: [head, row] }]);
  refuses(
    () =>
      tab(
        'Ads',
        ['Name', 'Title', 'Target URL', 'title '],
        ['Ad one', 'First', 'https://a.example', 'Second'],
      ),
    /^workbook_base64: ads sheet, row 1: the header "title" appears 2 times, in columns B \(column 2\) and D \(column 4\); headers must be unique/,
  );
  refuses(
    () =>
      tab(
        'campaigns',
        ['Name', 'Budget Type', 'budget-type', 'BUDGET TYPE'],
        ['A', 'daily', 'daily', 'daily'],
      ),
    /the header "budget_type" appears 3 times, in columns B \(column 2\) and C \(column 3\) and D \(column 4\)/,
  );
  // Another tab may repeat a header: it is not read.
  assert.deepEqual(tab('Notes', ['Title', 'title'], ['a', 'b']), { campaigns: [], adgroups: [], ads: [] });
});

test('a text cell holding U+FFFD, the replacement character, is refused by its cell', () => {
  refuses(
    () =>
      sheetsFromTabs([
        { sheet: 'campaigns', data: [header, ['Caf\uFFFD Sale', 'clicks', '10', 'daily']] },
        {
          sheet: 'Ad groups',
          data: [
            ['campaign', 'name'],
            ['Spring', 'Plants'],
            ['Spring', 'Gr\uFFFDn'],
          ],
        },
      ]),
    /^workbook_base64: cells campaigns!A2, 'Ad groups'!B3 hold U\+FFFD, the replacement character, which stands for text that was not UTF-8 and could not be read: correct the text, and save the workbook as \.xlsx from a spreadsheet app$/,
  );
});

test('a formula without its computed value, and an error value, are refused by their cells', () => {
  const ads: PartSheet = {
    name: 'Ad groups',
    rows: [
      ['campaign', 'name', 'countries', 'bid'],
      [
        'Spring',
        { inner: '<f>CONCAT("Pl","ants")</f>' },
        'US',
        { attributes: ' t="e"', inner: '<f>NA()</f><v>#N/A</v>' },
      ],
    ],
  };
  const file = xlsxFile([
    campaigns([['Spring', 'clicks', { inner: '<f>10*5</f>' }, 'daily']]),
    ads,
    // Another tab's cells are not read.
    { name: 'Notes', rows: [[{ attributes: ' t="e"', inner: '<v>#REF!</v>' }, { inner: '<f>1+1</f>' }]] },
  ]);
  refuses(
    () => checkedWorkbook(file),
    new RegExp(
      '^workbook_base64: cell campaigns!C2 holds a formula without a computed value: save the workbook in a ' +
        'spreadsheet app so its values are stored; ' +
        "cell 'Ad groups'!B2 holds a formula without a computed value: .*; " +
        "cell 'Ad groups'!D2 holds the error value #N/A: correct its formula, or enter the value itself$",
    ),
  );
  // A formula with its computed value stored is read as that value; so is a formula of text.
  checkedWorkbook(
    xlsxFile([
      campaigns([
        [
          'Spring',
          'clicks',
          { inner: '<f>10*5</f><v>50</v>' },
          { attributes: ' t="str"', inner: '<f>"daily"</f><v>daily</v>' },
        ],
      ]),
    ]),
  );
});

test('a part of the workbook that is not UTF-8 is refused before it is read, by its entry', () => {
  const sheet = campaigns([[{ attributes: ' t="s"', inner: '<v>0</v>' }, 'clicks', 10, 'daily']]);
  const latin1 = Buffer.from('Caf\xe9 Sale', 'latin1');
  refuses(
    () =>
      checkedWorkbook(
        xlsxFile([sheet], {
          'xl/sharedStrings.xml': sharedStringsPart('<?xml version="1.0" encoding="ISO-8859-1"?>', latin1),
        }),
      ),
    /^workbook_base64: the archive's entry xl\/sharedStrings.xml declares the encoding "ISO-8859-1", which cannot be read; save the workbook as .xlsx from a spreadsheet app, which writes UTF-8$/,
  );
  refuses(
    () => checkedWorkbook(xlsxFile([sheet], { 'xl/sharedStrings.xml': sharedStringsPart('', latin1) })),
    /the archive's entry xl\/sharedStrings.xml is not UTF-8 text, which cannot be read/,
  );
  const utf16 = Buffer.concat([
    Buffer.from([0xff, 0xfe]),
    Buffer.from('<?xml version="1.0" encoding="UTF-16"?><sst><si><t>Café Sale</t></si></sst>', 'utf16le'),
  ]);
  refuses(
    () => checkedWorkbook(xlsxFile([sheet], { 'xl/sharedStrings.xml': new Uint8Array(utf16) })),
    /the archive's entry xl\/sharedStrings.xml is UTF-16 text, which cannot be read; save the workbook as .xlsx/,
  );
  checkedWorkbook(
    xlsxFile([sheet], { 'xl/sharedStrings.xml': sharedStringsPart('', Buffer.from('Café Sale')) }),
  );
});

test('a hidden campaigns, adgroups or ads tab is refused: what is planned is what the spreadsheet shows', () => {
  const sheet = campaigns([['Spring', 'clicks', 10, 'daily']]);
  refuses(
    () => checkedWorkbook(xlsxFile([{ ...sheet, state: 'hidden' }])),
    /^workbook_base64: the sheet "campaigns" is hidden in the workbook; unhide it to plan its rows, or rename or delete it/,
  );
  refuses(
    () =>
      checkedWorkbook(
        xlsxFile([sheet, { name: 'Ad groups', rows: [['campaign', 'name']], state: 'veryHidden' }]),
      ),
    /^workbook_base64: the sheet "Ad groups" is hidden in the workbook/,
  );
  // Another tab may be hidden: it is not read.
  checkedWorkbook(xlsxFile([sheet, { name: 'Notes', rows: [['draft']], state: 'hidden' }]));
});

test('hidden rows and columns that hold values are refused: what is planned is what the spreadsheet shows', () => {
  const rows: PartCell[][] = [
    ['Spring', 'clicks', 10, 'daily'],
    ['Summer', 'clicks', 20, 'daily'],
    ['Autumn', 'clicks', 30, 'daily'],
  ];
  refuses(
    () => checkedWorkbook(xlsxFile([campaigns(rows, { hiddenRows: [3, 4], hiddenColumns: [3] })])),
    /^workbook_base64: the sheet "campaigns" hides rows 3, 4 and column C, which hold values: what is planned is what the spreadsheet shows, so unhide them to plan their values, or delete them$/,
  );
  refuses(
    () =>
      checkedWorkbook(
        xlsxFile([
          campaigns(rows, { hiddenColumns: [5] }),
          campaigns(rows, { name: 'Ads', hiddenRows: [2] }),
        ]),
      ),
    /^workbook_base64: the sheet "Ads" hides row 2, which holds values/,
  );
  // A hidden row or column without a value hides nothing that would be planned; another tab is not read.
  checkedWorkbook(
    xlsxFile([
      campaigns([...rows, [null, null, null, null]], { hiddenRows: [5], hiddenColumns: [6] }),
      { name: 'Notes', rows: [['draft']], hiddenRows: [1] },
    ]),
  );
});

test('two tabs that are the same sheet are refused by name, even when the first has no rows', () => {
  refuses(
    () =>
      sheetsFromTabs([
        { sheet: 'Campaigns', data: [['name', 'objective', 'budget', 'budget_type']] },
        {
          sheet: 'campaigns ',
          data: [
            ['name', 'objective', 'budget', 'budget_type'],
            ['Spring', 'clicks', 10, 'daily'],
          ],
        },
      ]),
    /^workbook_base64: the workbook has two campaigns sheets \("Campaigns" and "campaigns "\); keep one$/,
  );
});

test('a file that is not a zip archive is refused as not XLSX', () => {
  refuses(() => inflateWorkbook(strToU8('name,budget\nSpring,10\n')), /not an XLSX file/);
  refuses(() => checkedWorkbook(zipSync({ 'a.txt': strToU8('hello') })), /no xl\/workbook.xml/);
});
