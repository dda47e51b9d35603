import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import writeXlsxFile from 'write-excel-file/node';
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
