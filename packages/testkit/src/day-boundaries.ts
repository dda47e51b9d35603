/**
 * Times for the property tests of the lists whose deep pages are found from counts kept per UTC
 * day (changes, proposals, marketing items): mostly on a few UTC midnights or a microsecond
 * before one, where the day an entry is counted in turns over and a page read from the wrong side
 * of a day's end differs.
 */
import fc from 'fast-check';

/** Some hours before now, or a UTC midnight some days back, or a microsecond before one. */
export type When = { hoursAgo: number } | { midnightsAgo: number; justBefore: boolean };

export const when: fc.Arbitrary<When> = fc.oneof(
  { weight: 1, arbitrary: fc.record({ hoursAgo: fc.integer({ min: 0, max: 24 * 3 }) }) },
  {
    weight: 2,
    arbitrary: fc.record({ midnightsAgo: fc.integer({ min: 0, max: 2 }), justBefore: fc.boolean() }),
  },
);

/**
 * The SQL of a time `w`, its number in parameter `$n`; `dayFunction` is the list's own SQL
 * function giving the start of a time's UTC day (change_day, proposal_day, marketing_item_day).
 */
export function whenSql(dayFunction: string, w: When, n: number): { sql: string; value: number } {
  return 'hoursAgo' in w
    ? { sql: `now() - make_interval(hours => $${n}::int)`, value: w.hoursAgo }
    : {
        sql: `${dayFunction}(now()) - make_interval(days => $${n}::int)${w.justBefore ? " - interval '1 microsecond'" : ''}`,
        value: w.midnightsAgo,
      };
}
