import assert from 'node:assert/strict';
import { test } from 'node:test';
import { dateTimeProblem, isDateTime } from './date-time.ts';

test('RFC 3339 date-times with Z or an offset, up to nine fraction digits', () => {
  for (const ok of [
    '2026-11-20T14:30:00+01:00',
    '2026-11-20T14:30:00Z',
    '2026-11-20T14:30:00.123456789-05:45',
    '2028-02-29T23:59:59Z',
    '0001-01-01T00:00:00Z',
    '9999-12-31T23:59:59.999999999Z',
    '0001-01-01T10:00:00+09:00',
    '9999-12-31T10:00:00-13:59',
  ])
    assert.equal(dateTimeProblem(ok), undefined, ok);
});

test('each refusal says what is wrong', () => {
  assert.match(dateTimeProblem('2026-11-20T14:30:00') ?? '', /with Z or an offset/);
  assert.match(dateTimeProblem('2026-11-20 14:30:00Z') ?? '', /YYYY-MM-DDThh:mm:ss/);
  assert.match(dateTimeProblem('2027-02-29T10:00:00Z') ?? '', /2027-02-29 is not a day of the calendar/);
  assert.match(dateTimeProblem('2026-13-01T10:00:00Z') ?? '', /not a day/);
  assert.match(dateTimeProblem('2026-02-10T24:00:00Z') ?? '', /hours run 00 to 23/);
  assert.match(dateTimeProblem('2026-02-10T23:60:00Z') ?? '', /minutes and seconds run 00 to 59/);
  assert.match(dateTimeProblem('2026-02-10T23:59:60Z') ?? '', /minutes and seconds/);
  assert.match(dateTimeProblem('2026-02-10T10:00:00+24:00') ?? '', /offset runs from -23:59 to \+23:59/);
  // In range as written, outside it in UTC.
  assert.match(dateTimeProblem('9999-12-31T23:59:59-14:00') ?? '', /years 0001 to 9999/);
  assert.match(dateTimeProblem('0001-01-01T00:00:00+00:01') ?? '', /years 0001 to 9999/);
  assert.match(dateTimeProblem('0000-12-31T23:59:59Z') ?? '', /years 0001 to 9999|not a day/);
  assert.equal(isDateTime('2026-02-10T24:00:00Z'), false);
  assert.equal(isDateTime('2026-02-10T00:00:00Z'), true);
});
