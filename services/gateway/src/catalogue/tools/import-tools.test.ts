import assert from 'node:assert/strict';
import { test } from 'node:test';
import { validate } from '../schema.ts';
import { importPerformance } from './import-tools.ts';

const META = {
  source: 'vendor_a_ads',
  name: 'October',
  currency: 'EUR',
  timezone: 'Europe/Berlin',
  attribution: '7-day click',
  since: '2026-10-01',
  until: '2026-10-31',
};
const CSV = 'ad_id,impressions,clicks,spend\r\nad_1,1,1,1\r\n';
const issuesOf = (csv: unknown) =>
  validate(importPerformance.input, { ...META, csv }).map((i) => `${i.path}: ${i.message}`);

test('a CSV that starts with a byte-order mark is accepted, as spreadsheets export it', () => {
  assert.deepEqual(issuesOf(`\uFEFF${CSV}`), []);
  assert.deepEqual(issuesOf(CSV), []);
});

test('only one leading byte-order mark is dropped: another U+FEFF is refused by name', () => {
  const refusal = [
    'csv: `csv` must not contain the invisible character U+FEFF: control, format and blank characters hide or change what the text shows (line breaks and tabs are allowed)',
  ];
  assert.deepEqual(issuesOf(`\uFEFF\uFEFF${CSV}`), refusal);
  assert.deepEqual(issuesOf(`ad_id\uFEFF,impressions,clicks,spend\nad_1,1,1,1`), refusal);
});

test('a byte-order mark alone is no CSV, and it is not counted in the length', () => {
  assert.deepEqual(issuesOf('\uFEFF'), ['csv: `csv` must be 1 to 1500000 characters (got 0)']);
  assert.deepEqual(issuesOf(`\uFEFF${'x'.repeat(1_500_000)}`), []);
  assert.deepEqual(issuesOf('x'.repeat(1_500_001)), [
    'csv: `csv` must be 1 to 1500000 characters (got 1500001)',
  ]);
});
