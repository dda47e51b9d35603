import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { localDay, localMinute, partsOf, zonedFormat } from './zoned-format.ts';

describe('zoned dates and times', () => {
  it('gives the date and clock time in the zone, across the date line and a daylight-saving change', () => {
    const lateUtc = new Date('2026-11-23T23:30:00Z');
    assert.equal(localDay(lateUtc, 'Europe/Berlin'), '2026-11-24');
    assert.equal(localDay(lateUtc, 'America/New_York'), '2026-11-23');
    assert.equal(localDay(lateUtc, 'Pacific/Kiritimati'), '2026-11-24');
    assert.equal(localMinute(lateUtc, 'Europe/Berlin'), '2026-11-24 00:30');
    // Berlin leaves summer time at 01:00 UTC on 2026-10-25: 02:59 CEST, then 02:00 CET.
    assert.equal(localMinute(new Date('2026-10-25T00:59:00Z'), 'Europe/Berlin'), '2026-10-25 02:59');
    assert.equal(localMinute(new Date('2026-10-25T01:00:00Z'), 'Europe/Berlin'), '2026-10-25 02:00');
    assert.equal(localMinute(new Date('2026-11-23T00:05:00Z'), 'UTC'), '2026-11-23 00:05');
    const p = partsOf(new Date('2026-11-23T23:59:58Z'), 'America/New_York', 'second');
    assert.deepEqual(
      [p.year, p.month, p.day, p.hour, p.minute, p.second],
      ['2026', '11', '23', '18', '59', '58'],
    );
  });

  it('makes one formatter per zone and precision, and reuses it', () => {
    assert.equal(zonedFormat('Asia/Tokyo', 'day'), zonedFormat('Asia/Tokyo', 'day'));
    assert.notEqual(zonedFormat('Asia/Tokyo', 'day'), zonedFormat('Asia/Tokyo', 'minute'));
    assert.notEqual(zonedFormat('Asia/Tokyo', 'day'), zonedFormat('Asia/Seoul', 'day'));
  });

  it('refuses a zone the runtime does not know, every time, as Intl does', () => {
    for (let i = 0; i < 2; i++) {
      assert.throws(() => localDay(new Date(), 'Mars/Olympus_Mons'), RangeError);
      assert.throws(() => zonedFormat('Mars/Olympus_Mons', 'minute'), RangeError);
    }
    assert.throws(() => localDay(new Date(Number.NaN), 'UTC'), RangeError);
  });
});
