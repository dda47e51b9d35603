/**
 * RFC 3339 date-times as tools take them: `2026-11-20T14:30:00+01:00`, with a time zone (`Z` or
 * an offset), up to nine fraction digits. Stricter than `Date.parse`, which also takes hour 24
 * (as midnight of the next day) and instants beyond what PostgreSQL's timestamptz can write back.
 */

const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(?:Z|([+-])(\d{2}):(\d{2}))$/;

/** Midnight UTC of a day; years below 100 taken as written (Date.UTC would add 1900). */
function utc(year: number, month: number, day: number): number {
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(0, 0, 0, 0);
  return d.getTime();
}

/** The instants a date-time may name, in UTC: 0001-01-01T00:00:00Z up to the end of 9999. */
const EARLIEST = utc(1, 1, 1);
const AFTER_LATEST = utc(10000, 1, 1);

/**
 * Why `text` is not a date-time tools take, in words that follow "must be a date-time (RFC 3339,
 * with a time zone)"; undefined when it is one.
 */
export function dateTimeProblem(text: string): string | undefined {
  const m = DATE_TIME.exec(text);
  if (m === null) return 'written as YYYY-MM-DDThh:mm:ss with Z or an offset such as +01:00';
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const date = new Date(utc(year, month, day));
  if (month < 1 || month > 12 || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day)
    return `${m[1]}-${m[2]}-${m[3]} is not a day of the calendar`;
  if (hour > 23) return 'hours run 00 to 23 (for midnight at the end of a day, write 00:00 of the next day)';
  if (minute > 59 || second > 59) return 'minutes and seconds run 00 to 59';
  const offsetHours = m[8] === undefined ? 0 : Number(m[8]);
  const offsetMinutes = m[9] === undefined ? 0 : Number(m[9]);
  if (offsetHours > 23 || offsetMinutes > 59) return 'an offset runs from -23:59 to +23:59';
  const sign = m[7] === '-' ? -1 : 1;
  const instant =
    date.getTime() + ((hour * 60 + minute - sign * (offsetHours * 60 + offsetMinutes)) * 60 + second) * 1000;
  if (instant < EARLIEST || instant >= AFTER_LATEST)
    return 'its instant in UTC must fall in the years 0001 to 9999';
  return undefined;
}

/** Whether `text` is written as a date-time (digits in their places), whatever its values. */
export function shapedAsDateTime(text: string): boolean {
  return DATE_TIME.test(text);
}

/** Whether `text` is a date-time tools take (see dateTimeProblem). */
export function isDateTime(text: string): boolean {
  return dateTimeProblem(text) === undefined;
}
