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
