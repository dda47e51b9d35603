/**
 * Scheduling for planning: local wall-clock times in the ad account's IANA time zone as exact
 * instants. Temporal does the time-zone arithmetic; this module decides what a local time that a
 * daylight-saving change skips (a gap) or repeats (an overlap) means, and refuses it unless told.
 */
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import { Temporal } from 'temporal-polyfill';

export const AMBIGUITIES = ['reject', 'earlier', 'later'] as const;
export type Ambiguity = (typeof AMBIGUITIES)[number];
const LOCAL = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2})?$/;

export interface PlannedInstant {
  local: string;
  utc: string;
  withOffset: string;
  note: string;
}

export interface SchedulePlan {
  timeZone: string;
  start: PlannedInstant;
  end: PlannedInstant;
  durationSeconds: bigint;
}

function parseLocal(value: string, field: string): Temporal.PlainDateTime {
  const hint = `${field} must be a local time YYYY-MM-DDTHH:mm or YYYY-MM-DDTHH:mm:ss (got "${value}")`;
  if (!LOCAL.test(value)) throw new InvalidArgumentError(hint);
  // Temporal reads second 60 as 59 even when told to reject; a time zone has no leap seconds.
  if (value.length > 16 && Number(value.slice(17)) > 59)
    throw new InvalidArgumentError(
      `${field} is not a real date and time (got "${value}"): a minute has seconds 00 to 59`,
    );
  try {
    return Temporal.PlainDateTime.from(value, { overflow: 'reject' });
  } catch {
    throw new InvalidArgumentError(`${field} is not a real date and time (got "${value}")`);
  }
}

/** `local` in `timeZone` as one instant, or refused when it is skipped or repeated and `ambiguity` is reject. */
export function resolveLocal(
  local: Temporal.PlainDateTime,
  timeZone: string,
  ambiguity: Ambiguity,
  field: string,
): { zoned: Temporal.ZonedDateTime; note: string } {
  const earlier = local.toZonedDateTime(timeZone, { disambiguation: 'earlier' });
  const later = local.toZonedDateTime(timeZone, { disambiguation: 'later' });
  if (earlier.epochNanoseconds === later.epochNanoseconds) return { zoned: earlier, note: '' };
  const shown = local.toString();
  // In an overlap both candidates keep the wall-clock time; in a gap they are shifted off it.
  const overlap = earlier.toPlainDateTime().equals(local);
  if (ambiguity === 'reject') {
    throw new InvalidArgumentError(
      overlap
        ? `${field} ${shown} happens twice in ${timeZone} (clocks go back: offsets ${earlier.offset} and ` +
            `${later.offset}); choose ambiguity earlier or later`
        : `${field} ${shown} does not exist in ${timeZone} (clocks skip it going forward); choose ambiguity ` +
            `earlier (${earlier.toPlainDateTime().toString()}) or later (${later.toPlainDateTime().toString()})`,
    );
  }
  const zoned = ambiguity === 'earlier' ? earlier : later;
  const note = overlap
    ? `${shown} happens twice in ${timeZone}; took the ${ambiguity} one (offset ${zoned.offset})`
    : `${shown} does not exist in ${timeZone}; took ${zoned.toPlainDateTime().toString()} (${ambiguity})`;
  return { zoned, note };
}

/** The instants RFC 3339 can write: years 0000 to 9999. */
const FIRST_INSTANT = Temporal.Instant.from('0000-01-01T00:00:00Z');
const LAST_INSTANT = Temporal.Instant.from('9999-12-31T23:59:59.999999999Z');

/**
 * checkRfc3339 refuses the local time `shown` of `field`, `zoned` in its zone, when its instant
 * cannot be written as an RFC 3339 date-time: in UTC with a year outside 0000 to 9999, or, with
 * `offsetToo`, at an offset with seconds (a zone's local mean time before standard time, such as
 * -04:56:02 in New York before 1883), which RFC 3339 cannot write and rounding would make another
 * instant than the UTC one.
 */
export function checkRfc3339(
  zoned: Temporal.ZonedDateTime,
  field: string,
  shown: string,
  offsetToo = true,
): void {
  const instant = zoned.toInstant();
  if (
    Temporal.Instant.compare(instant, FIRST_INSTANT) < 0 ||
    Temporal.Instant.compare(instant, LAST_INSTANT) > 0
  ) {
    throw new InvalidArgumentError(
      `${field} ${shown} is ${instant.toString()} in UTC, which RFC 3339 cannot write: its years are 0000 to 9999`,
    );
  }
  if (offsetToo && zoned.offsetNanoseconds % 60_000_000_000 !== 0) {
    throw new InvalidArgumentError(
      `${field} ${shown} is at offset ${zoned.offset} in ${zoned.timeZoneId} (a historical offset with seconds, ` +
        'from before standard time): RFC 3339 offsets are whole minutes, so it cannot be written with its ' +
        'offset as the same instant; choose a later date',
    );
  }
}

function instantOf(local: string, zoned: Temporal.ZonedDateTime, note: string): PlannedInstant {
  return {
    local,
    utc: zoned.toInstant().toString(),
    withOffset: zoned.toString({ timeZoneName: 'never' }),
    note,
  };
}

/** Plans a start and an end given as local times in `timeZone`; the end must be after the start. */
export function planSchedule(input: {
  startLocal: string;
  endLocal: string;
  ambiguity: string;
  timeZone: string;
}): SchedulePlan {
  const ambiguity = input.ambiguity === '' ? 'reject' : input.ambiguity;
  if (!(AMBIGUITIES as readonly string[]).includes(ambiguity)) {
    throw new InvalidArgumentError(`ambiguity must be one of ${AMBIGUITIES.join(', ')} (got "${ambiguity}")`);
  }
  const chosen = ambiguity as Ambiguity;
  const start = resolveLocal(
    parseLocal(input.startLocal, 'start_local'),
    input.timeZone,
    chosen,
    'start_local',
  );
  const end = resolveLocal(parseLocal(input.endLocal, 'end_local'), input.timeZone, chosen, 'end_local');
  checkRfc3339(start.zoned, 'start_local', input.startLocal);
  checkRfc3339(end.zoned, 'end_local', input.endLocal);
  if (Temporal.ZonedDateTime.compare(end.zoned, start.zoned) <= 0) {
    throw new InvalidArgumentError(
      `end_local ${input.endLocal} must be after start_local ${input.startLocal} (in ${input.timeZone})`,
    );
  }
  return {
    timeZone: input.timeZone,
    start: instantOf(input.startLocal, start.zoned, start.note),
    end: instantOf(input.endLocal, end.zoned, end.note),
    durationSeconds: (end.zoned.epochNanoseconds - start.zoned.epochNanoseconds) / 1_000_000_000n,
  };
}
