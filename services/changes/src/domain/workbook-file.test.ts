import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import { strToU8, zipSync } from 'fflate';
import { checkedWorkbook, inflateWorkbook, ZIP_LIMITS } from './workbook-file.ts';

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

test('a sheet with more than 1000 rows besides its header is refused before it is parsed', () => {
  const rows = Array.from(
    { length: 1002 },
    (_, i) => `<row r="${i + 1}"><c r="A${i + 1}"><v>1</v></c></row>`,
  );
  const sheet = `<worksheet><sheetData>${rows.join('')}</sheetData></worksheet>`;
  const zip = zipSync({
    'xl/workbook.xml': strToU8('<workbook/>'),
    'xl/worksheets/sheet1.xml': strToU8(sheet),
  });
  refuses(() => checkedWorkbook(zip), /has 1002 rows; a sheet may have at most 1000 rows besides its header/);
});

test('a file that is not a zip archive is refused as not XLSX', () => {
  refuses(() => inflateWorkbook(strToU8('name,budget\nSpring,10\n')), /not an XLSX file/);
  refuses(() => checkedWorkbook(zipSync({ 'a.txt': strToU8('hello') })), /no xl\/workbook.xml/);
});
