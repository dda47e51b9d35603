import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { spreadsheetSafeCell, startsLikeFormula } from './csv-cell.ts';

const FORMULA_STARTS = ['=', '+', '-', '@', '\uFF1D', '\uFF0B', '\uFF0D', '\uFF20'];
const BLANKS = [' ', '\t', '\r', '\n', '\u00A0', '\u2003', '\u3000', '\u200B', '\uFEFF', '\u202E'];

test('cells a spreadsheet would evaluate get a leading single quote', () => {
  for (const cell of [
    '=1+1',
    '+1',
    '-2+3',
    '@SUM(A1)',
    "=cmd|' /C calc'!A0",
    ' =1+1',
    '\u00A0=HYPERLINK("http://x","y")',
    '\u3000@SUM(A1)',
    '\u200B=1',
    '\uFF1D1+1',
    ' \uFF0B1',
    '\uFF0D1',
    '\uFF20SUM(A1)',
    '\tanything',
    '\ranything',
    '\r\n=1',
  ]) {
    assert.equal(spreadsheetSafeCell(cell), `'${cell}`, JSON.stringify(cell));
  }
});

test('ordinary text, empty cells and a pipe not behind a formula character are left as they are', () => {
  for (const cell of ['', 'Spring sale', 'a=b', 'x - y', 'mail@example', 'a|b', '|', ' ', '\u00A0', "'=1"])
    assert.equal(spreadsheetSafeCell(cell), cell, JSON.stringify(cell));
});

test('a figure that is a plain decimal stays a number; any other figure is neutralised', () => {
  for (const n of ['-12', '0', '3.25', '-0.5', '']) assert.equal(spreadsheetSafeCell(n, { number: true }), n);
  for (const n of ['-1+1', '-12 ', ' -12', '+12', '-1e3'])
    assert.equal(spreadsheetSafeCell(n, { number: true }), `'${n}`, n);
  assert.equal(spreadsheetSafeCell('-12'), "'-12", 'a text cell "-12" is neutralised');
});

/** Any text, weighted towards what matters here: formula characters after blanks. */
const cellText = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc
    .tuple(
      fc.array(fc.constantFrom(...BLANKS), { maxLength: 4 }),
      fc.constantFrom(...FORMULA_STARTS, '|', 'a', '1', "'"),
      fc.string({ unit: 'binary' }),
    )
    .map(([blanks, first, rest]) => `${blanks.join('')}${first}${rest}`),
);

test('property: the cell is kept whole, with at most one quote added in front', () => {
  fc.assert(
    fc.property(cellText, fc.boolean(), (text, number) => {
      const safe = spreadsheetSafeCell(text, { number });
      assert.ok(safe === text || safe === `'${text}`);
    }),
  );
});

test('property: no neutralised cell starts a formula, after any blanks, in ASCII or full width', () => {
  fc.assert(
    fc.property(cellText, (text) => {
      const safe = spreadsheetSafeCell(text);
      assert.equal(startsLikeFormula(safe), false);
      const visible = safe.replace(/^[\s\p{Cc}\p{Cf}\p{Zs}]*/u, '');
      assert.ok(
        !FORMULA_STARTS.some((c) => visible.startsWith(c)) || safe.startsWith("'"),
        JSON.stringify(safe),
      );
      assert.ok(!/^[\t\r]/.test(safe));
    }),
  );
});

test('property: neutralising twice is neutralising once', () => {
  fc.assert(
    fc.property(cellText, fc.boolean(), (text, number) => {
      const once = spreadsheetSafeCell(text, { number });
      assert.equal(spreadsheetSafeCell(once, { number }), once);
    }),
  );
});

test('property: every text that starts with blanks and a formula character is neutralised', () => {
  fc.assert(
    fc.property(
      fc.array(fc.constantFrom(...BLANKS), { maxLength: 4 }),
      fc.constantFrom(...FORMULA_STARTS),
      fc.string({ unit: 'binary' }),
      (blanks, first, rest) => {
        const text = `${blanks.join('')}${first}${rest}`;
        assert.equal(spreadsheetSafeCell(text), `'${text}`);
      },
    ),
  );
});
