import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import { planSchedule } from './schedule.ts';

const NY = 'America/New_York';
const plan = (startLocal: string, endLocal: string, ambiguity = '') =>
  planSchedule({ startLocal, endLocal, ambiguity, timeZone: NY });
const refused = (fn: () => unknown, message: RegExp) =>
  assert.throws(fn, (e: unknown) => e instanceof InvalidArgumentError && message.test(e.message));

test('an ordinary local time becomes its instant in UTC and with the zone offset', () => {
  const p = plan('2026-06-01T09:00', '2026-06-30T17:30:15');
  assert.equal(p.start.utc, '2026-06-01T13:00:00Z');
  assert.equal(p.start.withOffset, '2026-06-01T09:00:00-04:00');
  assert.equal(p.end.utc, '2026-06-30T21:30:15Z');
  assert.equal(p.start.note, '');
  const berlin = planSchedule({
    startLocal: '2026-01-10T00:00',
    endLocal: '2026-01-11T00:00',
    ambiguity: '',
    timeZone: 'Europe/Berlin',
  });
  assert.equal(berlin.start.utc, '2026-01-09T23:00:00Z');
  assert.equal(berlin.durationSeconds, 86_400n);
});

test('a local time in the spring-forward gap is refused, or moved by the ambiguity choice', () => {
  // 2026-03-08 02:00 -> 03:00 in New York: 02:30 does not exist.
  refused(
    () => plan('2026-03-08T02:30', '2026-03-09T00:00'),
    /start_local 2026-03-08T02:30:00 does not exist in America\/New_York/,
  );
  refused(() => plan('2026-03-08T02:30', '2026-03-09T00:00', 'reject'), /does not exist/);
  const earlier = plan('2026-03-08T02:30', '2026-03-09T00:00', 'earlier');
  assert.equal(earlier.start.utc, '2026-03-08T06:30:00Z');
  assert.equal(earlier.start.withOffset, '2026-03-08T01:30:00-05:00');
  const later = plan('2026-03-08T02:30', '2026-03-09T00:00', 'later');
  assert.equal(later.start.utc, '2026-03-08T07:30:00Z');
  assert.equal(later.start.withOffset, '2026-03-08T03:30:00-04:00');
  assert.match(later.start.note, /does not exist/);
});

test('a local time in the fall-back overlap is refused, or taken as the earlier or later instant', () => {
  // 2026-11-01 02:00 -> 01:00 in New York: 01:30 happens twice.
  refused(() => plan('2026-10-31T00:00', '2026-11-01T01:30'), /end_local 2026-11-01T01:30:00 happens twice/);
  refused(() => plan('2026-10-31T00:00', '2026-11-01T01:30', 'reject'), /happens twice/);
  const earlier = plan('2026-10-31T00:00', '2026-11-01T01:30', 'earlier');
  assert.equal(earlier.end.utc, '2026-11-01T05:30:00Z');
  assert.equal(earlier.end.withOffset, '2026-11-01T01:30:00-04:00');
  const later = plan('2026-10-31T00:00', '2026-11-01T01:30', 'later');
  assert.equal(later.end.utc, '2026-11-01T06:30:00Z');
  assert.equal(later.end.withOffset, '2026-11-01T01:30:00-05:00');
  assert.match(later.end.note, /took the later one/);
});

test('an end that is not after the start is refused', () => {
  refused(
    () => plan('2026-06-02T09:00', '2026-06-01T09:00'),
    /end_local 2026-06-01T09:00 must be after start_local/,
  );
  refused(() => plan('2026-06-01T09:00', '2026-06-01T09:00:00'), /must be after/);
  // Both fall in the overlap: taken as the earlier instants, 01:10 EDT is before 01:30 EDT.
  refused(
    () =>
      planSchedule({
        startLocal: '2026-11-01T01:30',
        endLocal: '2026-11-01T01:10',
        ambiguity: 'earlier',
        timeZone: NY,
      }),
    /must be after/,
  );
});

test('a malformed or impossible local time is refused naming the field', () => {
  refused(
    () => plan('2026-06-01 09:00', '2026-06-02T09:00'),
    /start_local must be a local time YYYY-MM-DDTHH:mm/,
  );
  refused(() => plan('2026-06-01T09:00Z', '2026-06-02T09:00'), /start_local must be a local time/);
  refused(() => plan('2026-06-01T09:00', '2026-02-30T09:00'), /end_local is not a real date and time/);
  refused(
    () => plan('2026-06-01T09:00', '2026-06-02T09:00', 'nearest'),
    /ambiguity must be one of reject, earlier, later/,
  );
});

test('second 60 is not a real local time: a time zone has no leap seconds', () => {
  refused(
    () => plan('2026-12-01T23:59:60', '2026-12-02T10:00'),
    /^start_local is not a real date and time \(got "2026-12-01T23:59:60"\): a minute has seconds 00 to 59$/,
  );
  refused(() => plan('2026-12-01T10:00', '2026-12-01T23:59:61'), /^end_local is not a real date and time/);
  assert.equal(plan('2026-12-01T23:59:59', '2026-12-02T10:00').start.utc, '2026-12-02T04:59:59Z');
});

test('a local time whose instant RFC 3339 cannot write is refused: a UTC year past 9999 or before 0000', () => {
  refused(
    () => plan('2026-06-01T00:00', '9999-12-31T23:59:59'),
    /^end_local 9999-12-31T23:59:59 is \+010000-01-01T04:59:59Z in UTC, which RFC 3339 cannot write: its years are 0000 to 9999$/,
  );
  refused(
    () =>
      planSchedule({
        startLocal: '0000-01-01T00:00',
        endLocal: '2026-01-01T00:00',
        ambiguity: '',
        timeZone: 'Asia/Tokyo',
      }),
    /^start_local 0000-01-01T00:00 is -000001-12-31T14:41:01Z in UTC, which RFC 3339 cannot write/,
  );
  const last = plan('9999-12-31T18:00', '9999-12-31T18:59:59');
  assert.equal(last.end.utc, '9999-12-31T23:59:59Z');
  assert.equal(last.end.withOffset, '9999-12-31T18:59:59-05:00');
});

test('a local time at a historical offset with seconds is refused, so utc and with_offset never disagree', () => {
  // Before 1883-11-18 12:03:58 New York kept local mean time, -04:56:02.
  refused(
    () => plan('1883-11-18T11:00', '2026-01-01T00:00'),
    /^start_local 1883-11-18T11:00 is at offset -04:56:02 in America\/New_York \(a historical offset with seconds, from before standard time\): RFC 3339 offsets are whole minutes/,
  );
  refused(() => plan('0000-01-01T00:00', '0001-01-01T00:00'), /offset -04:56:02/);
  const standard = plan('1883-11-19T00:00', '1883-11-20T00:00');
  assert.equal(standard.start.utc, '1883-11-19T05:00:00Z');
  assert.equal(standard.start.withOffset, '1883-11-19T00:00:00-05:00');
});
