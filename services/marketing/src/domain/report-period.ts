/**
 * A report's period of account-local dates and the preceding period of equal length. Dates are
 * calendar days (YYYY-MM-DD) in the account's time zone, counted as days since the epoch, so no
 * daylight-saving change makes a day longer or shorter here.
 */
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import { localDay } from '@adsmcp/runtime/zoned-format';

/** The longest period a report covers, in days (a leap year). */
export const MAX_PERIOD_DAYS = 366;
/** The earliest date a report's period, or the preceding one, may start on. */
export const EARLIEST_DATE = '2000-01-01';

const DAY_MS = 86_400_000;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** dayNumber is the date's day since 1970-01-01, or undefined when it is no calendar date. */
export function dayNumber(date: string): number | undefined {
  const m = DATE.exec(date);
  if (m === null) return undefined;
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  return new Date(ms).toISOString().slice(0, 10) === date ? ms / DAY_MS : undefined;
}

export const dateOf = (day: number): string => new Date(day * DAY_MS).toISOString().slice(0, 10);

/** todayIn is the current calendar date in the IANA time zone `timeZone`. */
export function todayIn(timeZone: string, now: Date): string {
  try {
    return localDay(now, timeZone);
  } catch {
    throw new InvalidArgumentError(`time_zone must be an IANA time zone (got ${JSON.stringify(timeZone)})`);
  }
}

export interface ReportPeriod {
  since: string;
  until: string;
  previousSince: string;
  previousUntil: string;
  days: number;
  /** The period ends on the current local day, which is not over. */
  preliminary: boolean;
}

function day(field: string, date: string): number {
  const n = dayNumber(date);
  if (n === undefined) {
    throw new InvalidArgumentError(`${field} must be a date YYYY-MM-DD (got ${JSON.stringify(date)})`);
  }
  return n;
}

/**
 * reportPeriod checks since..until (both included) against the account's current local day
 * `today` and returns it with the preceding period of equal length, which ends the day before
 * since. since <= until; at most MAX_PERIOD_DAYS days; until not after today (a later day has no
 * figures yet); the preceding period starts no earlier than EARLIEST_DATE.
 */
export function reportPeriod(since: string, until: string, today: string): ReportPeriod {
  const start = day('since', since);
  const end = day('until', until);
  if (start > end) throw new InvalidArgumentError(`since (${since}) must not be after until (${until})`);
  const days = end - start + 1;
  if (days > MAX_PERIOD_DAYS) {
    throw new InvalidArgumentError(
      `since..until spans ${days} days; a report covers at most ${MAX_PERIOD_DAYS} days`,
    );
  }
  const todayNumber = day('today', today);
  if (end > todayNumber) {
    throw new InvalidArgumentError(
      `until (${until}) is after the account's current local day (${today}); a later day has no figures yet`,
    );
  }
  const previousStart = start - days;
  if (previousStart < (dayNumber(EARLIEST_DATE) ?? 0)) {
    throw new InvalidArgumentError(
      `since (${since}): the preceding period of ${days} days would start before ${EARLIEST_DATE}`,
    );
  }
  return {
    since,
    until,
    previousSince: dateOf(previousStart),
    previousUntil: dateOf(start - 1),
    days,
    preliminary: end === todayNumber,
  };
}
