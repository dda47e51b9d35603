import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import writeXlsxFile from 'write-excel-file/node';
import { sharedStringsPart, xlsxFile } from '../test/xlsx-parts.ts';
import { planWorkbook } from './workbook-reader.ts';

const cell = (value: string | number) => ({ value });
const write = writeXlsxFile as unknown as (data: unknown, options: unknown) => Promise<Buffer>;
const usd = { name: 'Demo Store (USD)', currency: 'USD', timeZone: 'UTC' };
const flags = { validateOnly: false, partialFailure: true };

test('a real XLSX workbook is read and compiled in a worker thread, its money exact', async () => {
  const xlsx = await write(
    [
      [
        [cell('Name'), cell('Objective'), cell('Budget'), cell('Budget type')],
        [cell('Spring Sale'), cell('clicks'), cell(19.99), cell('daily')],
      ],
      [
        [cell('Campaign'), cell('Name'), cell('Bid'), cell('Countries')],
        [cell('Spring Sale'), cell('Plants'), cell(0.3), cell('US, DE')],
      ],
      [[cell('ignored')]],
    ],
    { sheets: ['Campaigns', 'Ad groups', 'Notes'], buffer: true },
  );
  const { plan, issues } = await planWorkbook({ base64: Buffer.from(xlsx).toString('base64') }, usd, flags);
  assert.deepEqual(issues, []);
  assert.equal(plan.body.partial_failure, true);
  assert.equal(plan.body.operations[0]?.body.budget_micros, 19_990_000);
  assert.deepEqual(plan.body.operations[1]?.body.bidding_config, {
    billing_event_type: 'click',
    strategy: 'fixed_bid',
    max_bid_micros: 300_000,
  });
  assert.deepEqual(plan.adGroups[0]?.countries, ['US', 'DE']);
});

test('a bad XLSX row is reported with its spreadsheet row number', async () => {
  const xlsx = await write(
    [
      [cell('name'), cell('objective'), cell('budget'), cell('budget_type')],
      [cell('Fine'), cell('clicks'), cell(10), cell('daily')],
      [cell('Buyers'), cell('conversions'), cell(10), cell('daily')],
    ],
    { sheet: 'campaigns', buffer: true },
  );
  const { issues } = await planWorkbook({ base64: Buffer.from(xlsx).toString('base64') }, usd, flags);
  assert.deepEqual(
    issues.map((i) => [i.sheet, i.row, i.column]),
    [['campaigns', 3, 'objective']],
  );
});

test('a workbook that is not base64 or not a zip is refused with the reason', async () => {
  const refused = (message: RegExp) => (e: unknown) =>
    e instanceof InvalidArgumentError && message.test(e.message);
  await assert.rejects(planWorkbook({ base64: 'not base64!' }, usd, flags), refused(/base64/));
  await assert.rejects(
    planWorkbook({ base64: Buffer.from('name,budget\n').toString('base64') }, usd, flags),
    refused(/not an XLSX file/),
  );
});

test('an XLSX Context Hints cell holds one hint per line, so a hint keeps its spaces and commas', async () => {
  const xlsx = await write(
    [
      [
        [cell('Name'), cell('Objective'), cell('Budget'), cell('Budget type')],
        [cell('Spring Sale'), cell('clicks'), cell(19.99), cell('daily')],
      ],
      [
        [cell('Campaign'), cell('Name'), cell('Bid'), cell('Countries'), cell('Context Hints')],
        [
          cell('Spring Sale'),
          cell('Plants'),
          cell(0.3),
          cell('US'),
          cell('  indoor plants\ngarden, patio and balcony  '),
        ],
        // A cell of nothing but spaces is empty, as the spreadsheet shows it: no row of its own.
        [cell(' '), cell('  '), null, null, null],
      ],
    ],
    { sheets: ['Campaigns', 'Ad groups'], buffer: true },
  );
  const { plan, issues } = await planWorkbook({ base64: Buffer.from(xlsx).toString('base64') }, usd, flags);
  assert.deepEqual(issues, []);
  // Each hint as written, the spaces at the cell's ends included.
  assert.deepEqual(plan.body.operations[1]?.body.context_hints, [
    '  indoor plants',
    'garden, patio and balcony  ',
  ]);
  assert.equal(plan.body.operations.length, 2);
});

test('a value under a column with no header is refused by sheet, row and column, not dropped', async () => {
  // Columns E to Z have no header and are empty; column AA has no header but a value.
  const blanks = Array.from({ length: 22 }, () => null);
  const xlsx = await write(
    [
      [
        [cell('Name'), cell('Objective'), cell('Budget'), cell('Budget type')],
        [cell('Spring Sale'), cell('clicks'), cell(19.99), cell('daily')],
      ],
      [
        [cell('Campaign'), cell('Name'), cell('Bid'), cell('Countries'), ...blanks, null],
        [cell('Spring Sale'), cell('Plants'), cell(0.3), cell('US'), ...blanks, cell('stray')],
      ],
    ],
    { sheets: ['Campaigns', 'Ad groups'], buffer: true },
  );
  await assert.rejects(planWorkbook({ base64: Buffer.from(xlsx).toString('base64') }, usd, flags), {
    message:
      'workbook_base64: adgroups sheet, row 2, column AA: a value in a column with no header; name the column in the first row or clear the cell',
  });
});

const base64 = (file: Uint8Array) => Buffer.from(file).toString('base64');
const campaignHeader = ['Name', 'Objective', 'Budget', 'Budget type'];

test('the rows with a value count, not the empty formatted rows a spreadsheet app writes after them', async () => {
  const rows = Array.from({ length: 999 }, (_, i) => [`Campaign ${i + 1}`, 'clicks', 10, 'daily']);
  const file = xlsxFile([{ name: 'Campaigns', rows: [campaignHeader, ...rows], emptyRowsAfter: 5 }]);
  const { plan, issues } = await planWorkbook({ base64: base64(file) }, usd, flags);
  assert.deepEqual(issues, []);
  assert.equal(plan.campaignCount, 999);
});

test('a formula without its computed value or an error value is refused by its cell, never read as empty', async () => {
  const file = xlsxFile([
    {
      name: 'Campaigns',
      rows: [campaignHeader, ['Spring Sale', 'clicks', { inner: '<f>10*5</f>' }, 'daily']],
    },
    {
      name: 'ads',
      rows: [
        ['Ad group', 'Name', 'Title', 'Target URL', 'Body'],
        [
          'Plants',
          'Ad one',
          'Two for one',
          'https://shop.example.com/a',
          { attributes: ' t="e"', inner: '<v>#N/A</v>' },
        ],
      ],
    },
  ]);
  await assert.rejects(planWorkbook({ base64: base64(file) }, usd, flags), {
    message:
      'workbook_base64: cell Campaigns!C2 holds a formula without a computed value: save the workbook in a ' +
      'spreadsheet app so its values are stored; cell ads!E2 holds the error value #N/A: correct its formula, ' +
      'or enter the value itself',
  });
});

test('text that is not UTF-8 is refused, never planned with U+FFFD in place of what could not be read', async () => {
  const sheet = {
    name: 'Campaigns',
    rows: [campaignHeader, [{ attributes: ' t="s"', inner: '<v>0</v>' }, 'clicks', 10, 'daily']],
  };
  const latin1 = xlsxFile([sheet], {
    'xl/sharedStrings.xml': sharedStringsPart(
      '<?xml version="1.0" encoding="ISO-8859-1"?>',
      Buffer.from('Caf\xe9 Sale', 'latin1'),
    ),
  });
  await assert.rejects(planWorkbook({ base64: base64(latin1) }, usd, flags), {
    message:
      'workbook_base64: the archive\'s entry xl/sharedStrings.xml declares the encoding "ISO-8859-1", which ' +
      'cannot be read; save the workbook as .xlsx from a spreadsheet app, which writes UTF-8',
  });
  // UTF-8 text that holds the replacement character already: its cell is named.
  const replaced = xlsxFile([sheet], {
    'xl/sharedStrings.xml': sharedStringsPart('', Buffer.from('Caf\uFFFD Sale')),
  });
  await assert.rejects(planWorkbook({ base64: base64(replaced) }, usd, flags), {
    message:
      'workbook_base64: cell Campaigns!A2 holds U+FFFD, the replacement character, which stands for text that ' +
      'was not UTF-8 and could not be read: correct the text, and save the workbook as .xlsx from a spreadsheet app',
  });
});

test('a header two columns share is refused, naming the sheet, the header and both columns', async () => {
  const file = xlsxFile([
    {
      name: 'Campaigns',
      rows: [
        [...campaignHeader, 'name'],
        ['Alpha Sale', 'clicks', 10, 'daily', 'Beta Sale'],
      ],
    },
  ]);
  await assert.rejects(planWorkbook({ base64: base64(file) }, usd, flags), {
    message:
      'workbook_base64: campaigns sheet, row 1: the header "name" appears 2 times, in columns A (column 1) and ' +
      'E (column 5); headers must be unique (they are matched without regard to case, spaces and hyphens)',
  });
});
