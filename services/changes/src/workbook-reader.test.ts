import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import writeXlsxFile from 'write-excel-file/node';
import { readWorkbook } from './workbook-reader.ts';

const cell = (value: string | number) => ({ value });

test('a real XLSX workbook is read in a worker thread, numbers kept as their decimal text', async () => {
  const xlsx = await (writeXlsxFile as unknown as (data: unknown, options: unknown) => Promise<Buffer>)(
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
    ] as never,
    { sheets: ['Campaigns', 'Ad groups', 'Notes'], buffer: true } as never,
  );
  const sheets = await readWorkbook(Buffer.from(xlsx).toString('base64'));
  assert.deepEqual(sheets.campaigns, [
    { row: 2, cells: { name: 'Spring Sale', objective: 'clicks', budget: '19.99', budget_type: 'daily' } },
  ]);
  assert.deepEqual(sheets.adgroups[0]?.cells, {
    campaign: 'Spring Sale',
    name: 'Plants',
    bid: '0.3',
    countries: 'US, DE',
  });
  assert.deepEqual(sheets.ads, []);
});

test('a workbook that is not base64 or not a zip is refused with the reason', async () => {
  await assert.rejects(
    readWorkbook('not base64!'),
    (e: unknown) => e instanceof InvalidArgumentError && /base64/.test(e.message),
  );
  await assert.rejects(
    readWorkbook(Buffer.from('name,budget\n').toString('base64')),
    (e: unknown) => e instanceof InvalidArgumentError && /not an XLSX file/.test(e.message),
  );
});
