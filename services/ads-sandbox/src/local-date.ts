/**
 * Calendar dates (`YYYY-MM-DD`) as an account sees them: which day it is in the account's IANA
 * time zone (Intl's time zone database), and arithmetic on dates, which needs no time zone.
 */

import { partsOf } from '@adsmcp/runtime/zoned-format';

const DATE_PATTERN = /^(\d{4})-(\d{2})-(\d{2})$/;
const MS_PER_DAY = 86_400_000;

/** isValidDate tells whether `s` is a real `YYYY-MM-DD` calendar date (no 2026-02-30). */
export function isValidDate(s: string): boolean {
  const m = DATE_PATTERN.exec(s);
  if (m === null) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const d = new Date(Date.UTC(year, month - 1, day));
  return d.getUTCFullYear() === year && d.getUTCMonth() === month - 1 && d.getUTCDate() === day;
}

/** dayNumber returns the days since 1970-01-01 of a valid date: a count dates can be compared by. */
export function dayNumber(date: string): number {
  return Math.round(Date.parse(`${date}T00:00:00Z`) / MS_PER_DAY);
}

/** dateOfDay is dayNumber's inverse. */
export function dateOfDay(day: number): string {
  return new Date(day * MS_PER_DAY).toISOString().slice(0, 10);
}

/** addDays returns the date `n` days after `date` (before, for negative `n`). */
export function addDays(date: string, n: number): string {
  return dateOfDay(dayNumber(date) + n);
}

/** isoWeekday returns 1 (Monday) to 7 (Sunday). */
export function isoWeekday(date: string): number {
  const d = new Date(`${date}T00:00:00Z`).getUTCDay();
  return d === 0 ? 7 : d;
}

/** weekStart returns the Monday of the ISO week `date` is in. */
export function weekStart(date: string): string {
  return addDays(date, 1 - isoWeekday(date));
}

/** monthStart returns the first day of the month `date` is in. */
export function monthStart(date: string): string {
  return `${date.slice(0, 8)}01`;
}

export interface LocalTime {
  /** The account-local calendar date. */
  date: string;
  /** How much of that local day has passed, 0 (midnight) to just under 1. */
  dayFraction: number;
}

/** localTime returns the date and time of day at instant `ms` in the IANA time zone `timeZone`. */
export function localTime(ms: number, timeZone: string): LocalTime {
  const parts = partsOf(new Date(ms), timeZone, 'second');
  const seconds = Number(parts.hour) * 3600 + Number(parts.minute) * 60 + Number(parts.second);
  return { date: `${parts.year}-${parts.month}-${parts.day}`, dayFraction: seconds / 86_400 };
}
