import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { daysOf, exactCount, sumInsights, sumRanges } from './insights.ts';

const METRICS = ['impressions', 'spend_micros'] as const;

test('a range is its days, both ends included, across a month end', () => {
  assert.deepEqual(daysOf('2026-02-27..2026-03-02'), [
    '2026-02-27',
    '2026-02-28',
    '2026-03-01',
    '2026-03-02',
  ]);
  assert.throws(
    () => daysOf('2026-03-02..2026-03-01'),
    /the first day not after the last \(got "2026-03-02\.\.2026-03-01"\)/,
  );
});

test('counts past 2^53 are summed to the unit, where floats would lose it', () => {
  const big = Number.MAX_SAFE_INTEGER;
  const rows = [
    { ad_id: 'a', date_start: '2026-11-01', impressions: big, spend_micros: '9007199254740993' },
    { ad_id: 'a', date_start: '2026-11-02', impressions: big, spend_micros: 1 },
  ];
  const sums = sumInsights(rows, { metrics: METRICS, range: '2026-11-01..2026-11-02', entityKey: 'ad_id' });
  const a = sums.byEntity.get('a');
  assert.equal(a?.counts.impressions, 2n * BigInt(big));
  assert.equal(a?.counts.spend_micros, 9007199254740994n);
});

test('a metric a row gives no whole count for is unknown, never 0', () => {
  for (const bad of [1.5, -1, null, 'x', Number.NaN, undefined]) {
    const rows = [
      { ad_id: 'a', date_start: '2026-11-01', impressions: 10, spend_micros: 1 },
      { ad_id: 'a', date_start: '2026-11-02', impressions: bad, spend_micros: 1 },
    ];
    const a = sumInsights(rows, {
      metrics: METRICS,
      range: '2026-11-01..2026-11-02',
      entityKey: 'ad_id',
    }).byEntity.get('a');
    assert.equal(a?.counts.impressions, undefined, `impressions ${String(bad)}`);
    assert.equal(a?.counts.spend_micros, 2n);
  }
  assert.equal(exactCount('12345678901234567890'), 12345678901234567890n);
});

test('the days covered are reported: per ad, and the range days no row covered', () => {
  const rows = [
    { ad_id: 'a', date_start: '2026-11-01', impressions: 1, spend_micros: 1 },
    { ad_id: 'a', date_start: '2026-11-03', impressions: 1, spend_micros: 1 },
    { ad_id: 'b', date_start: '2026-11-03', impressions: 1, spend_micros: 1 },
    { ad_id: 'b', date_start: '2026-10-31', impressions: 1, spend_micros: 1 },
  ];
  const sums = sumInsights(rows, { metrics: METRICS, range: '2026-11-01..2026-11-04', entityKey: 'ad_id' });
  assert.deepEqual(sums.byEntity.get('a')?.days, ['2026-11-01', '2026-11-03']);
  assert.deepEqual(sums.byEntity.get('b')?.days, ['2026-11-03']);
  assert.deepEqual(sums.missingDays, ['2026-11-02', '2026-11-04']);
  assert.equal(sums.skippedRows, 1);
});

const day = fc.integer({ min: 1, max: 28 }).map((d) => `2026-02-${String(d).padStart(2, '0')}`);
const row = fc.record({
  ad_id: fc.constantFrom('a', 'b', 'c'),
  date_start: day,
  impressions: fc
    .bigInt({ min: 0n, max: 2n ** 70n })
    .map((v) => (v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : String(v))),
  spend_micros: fc.bigInt({ min: 0n, max: BigInt(Number.MAX_SAFE_INTEGER) }).map(Number),
});

test('property: each ad sums to the exact total of its rows, in any order and any split of the rows', () => {
  fc.assert(
    fc.property(fc.array(row, { maxLength: 60 }), fc.integer({ min: 0, max: 60 }), (rows, cut) => {
      const opts = { metrics: METRICS, range: '2026-02-01..2026-02-28', entityKey: 'ad_id' };
      const whole = sumInsights(rows, opts);
      const reversed = sumInsights([...rows].reverse(), opts);
      const first = sumInsights(rows.slice(0, cut), opts);
      const second = sumInsights(rows.slice(cut), opts);
      for (const ad of ['a', 'b', 'c']) {
        const mine = rows.filter((r) => r.ad_id === ad);
        const expect = mine.reduce((t, r) => t + BigInt(r.impressions), 0n);
        const got = whole.byEntity.get(ad);
        if (mine.length === 0) {
          assert.equal(got, undefined);
          continue;
        }
        assert.equal(got?.counts.impressions, expect);
        assert.equal(reversed.byEntity.get(ad)?.counts.impressions, expect);
        const parts =
          (first.byEntity.get(ad)?.counts.impressions ?? 0n) +
          (second.byEntity.get(ad)?.counts.impressions ?? 0n);
        assert.equal(parts, expect);
        assert.deepEqual(got?.days, [...new Set(mine.map((r) => r.date_start))].sort());
      }
      const covered = new Set(rows.map((r) => r.date_start));
      assert.equal(whole.missingDays.length + covered.size, 28);
    }),
  );
});

test('range rows are summed exactly per entity; a range that gave an entity no row leaves its sums unknown', () => {
  const ranges = ['2026-01-01..2026-03-31', '2026-04-01..2026-04-30'];
  const rows = [
    { ad_id: 'a', time_range: ranges[0], impressions: Number.MAX_SAFE_INTEGER, spend_micros: 1 },
    { ad_id: 'a', time_range: ranges[1], impressions: 2, spend_micros: '9007199254740993' },
    { ad_id: 'b', time_range: ranges[1], impressions: 5, spend_micros: 5 },
    { ad_id: 'a', time_range: '2025-01-01..2025-01-31', impressions: 100, spend_micros: 100 },
  ];
  const sums = sumRanges(rows, { metrics: METRICS, ranges, entityKey: 'ad_id' });
  assert.deepEqual(sums.get('a')?.counts, {
    impressions: BigInt(Number.MAX_SAFE_INTEGER) + 2n,
    spend_micros: 9007199254740994n,
  });
  assert.equal(sums.get('a')?.ranges, 2);
  assert.deepEqual(sums.get('b')?.counts, { impressions: undefined, spend_micros: undefined });
  assert.equal(sums.get('b')?.first.impressions, 5);
});
