import assert from 'node:assert/strict';
import { test } from 'node:test';
import { validate } from '../schema.ts';
import { batchTools } from './batch-tools.ts';

const planWorkbook = batchTools.find((t) => t.name === 'ads_plan_workbook');

test('a workbook cell refused under a column name holding a hidden character names the column with it shown as a token', () => {
  assert.ok(planWorkbook);
  const issues = validate(planWorkbook.input, {
    account_id: '3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90',
    sheets: { ads: [{ 'title\u202e': { nested: true } }] },
  });
  assert.deepEqual(
    issues.map((i) => i.message),
    [
      '`sheets.ads[0].title⟨U+202E⟩` must be text (up to 5000 characters), a number, a boolean or a list of text',
    ],
  );
  assert.equal(issues[0]?.path, 'sheets.ads[0].title\u202e');
});

test('a workbook cell or column name that could not be stored (NUL, a lone surrogate) is refused, naming where', () => {
  assert.ok(planWorkbook);
  const issues = validate(planWorkbook.input, {
    account_id: '3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90',
    sheets: {
      campaigns: [{ name: 'Spring \ud800 sale' }],
      adgroups: [{ context_hints: ['ok', 'bad\u0000'] }],
      ads: [{ 'title\udc00': 'x' }],
    },
  });
  assert.deepEqual(
    issues.map((i) => i.message),
    [
      '`sheets.campaigns[0].name` must be well-formed Unicode (it holds a lone surrogate)',
      '`sheets.adgroups[0].context_hints[1]` must not contain the character U+0000 (NUL)',
      'a column name of `sheets.ads[0]` must be well-formed Unicode (it holds a lone surrogate)',
    ],
  );
});
