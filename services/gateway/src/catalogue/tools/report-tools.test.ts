import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ToolFailure } from '../../mcp/tool-failure.ts';
import { periodsOf, timeRanges } from './report-tools.ts';

test('a period is read in the platform’s ranges of at most 93 days, covering every day once', () => {
  const { current, previous } = periodsOf('2025-01-01', '2025-12-31', '2026-01-05');
  assert.deepEqual(timeRanges(current), [
    '2025-01-01..2025-04-03',
    '2025-04-04..2025-07-05',
    '2025-07-06..2025-10-06',
    '2025-10-07..2025-12-31',
  ]);
  // 2025 has 365 days, so the preceding period starts on 2024-01-02 (2024 is a leap year).
  assert.deepEqual(timeRanges(previous)[0], '2024-01-02..2024-04-03');
  assert.equal(timeRanges(previous).at(-1), '2024-10-07..2024-12-31');
  assert.deepEqual(timeRanges(periodsOf('2025-03-01', '2025-03-01', '2025-03-01').current), [
    '2025-03-01..2025-03-01',
  ]);
});

test('the preceding period has as many days and ends the day before since', () => {
  const { previous } = periodsOf('2024-03-01', '2024-03-31', '2024-04-01');
  assert.deepEqual(timeRanges(previous), ['2024-01-30..2024-02-29']);
});

test('periods the report cannot cover are refused before any read, naming the rule', () => {
  const refused = (since: string, until: string, message: RegExp) =>
    assert.throws(
      () => periodsOf(since, until, '2025-06-30'),
      (err: unknown) =>
        err instanceof ToolFailure && err.code === 'invalid_argument' && message.test(err.message),
    );
  refused('2025-03-08', '2025-03-01', /since \(2025-03-08\) must not be after until/);
  refused('2024-01-01', '2025-03-01', /spans 426 days; a report covers at most 366 days/);
  refused(
    '2025-06-30',
    '2025-07-01',
    /until \(2025-07-01\) is after the account's current local day \(2025-06-30\)/,
  );
  refused('2000-01-05', '2000-01-10', /would start before 2000-01-01/);
});
