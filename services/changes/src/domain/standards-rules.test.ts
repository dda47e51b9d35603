import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type SpendCaps, type Standard, standardViolations, stopsServing } from './standards-rules.ts';

const noCaps: SpendCaps = { maxDailyBudgetMicros: null, maxBidMicros: null };
const at = { today: '2026-06-15', timeZone: 'Europe/Berlin', stopsServing: false };
const standard = (name: string, data: Record<string, unknown>): Standard => ({
  standardId: 'std',
  name,
  revision: 1,
  data,
});

/** A bulk job body: a campaign, an ad group and an ad, created together. */
const bulk = (campaign: Record<string, unknown>, ad: Record<string, unknown> = {}) => ({
  operations: [
    { type: 'create_campaign', ref: 'c', body: { name: 'ACME-Spring', objective: 'clicks', ...campaign } },
    {
      type: 'create_ad_group',
      ref: 'g',
      body: {
        campaign_id: 'ref:c',
        name: 'ACME-Group',
        bidding_config: { billing_event_type: 'click', max_bid_micros: 1_000_000 },
      },
    },
    {
      type: 'create_ad',
      body: {
        ad_group_id: 'ref:g',
        name: 'ACME-Ad',
        creative: { title: 'T', target_url: 'https://example.com/?utm_source=ads' },
        ...ad,
      },
    },
  ],
});

describe('standards on a bulk job body', () => {
  test('every name in every operation is held to the naming prefix', () => {
    const body = bulk({ name: 'Spring' }, { name: 'Ad' });
    assert.deepEqual(standardViolations(body, [standard('Naming', { naming_prefix: 'ACME-' })], noCaps, at), [
      'body.operations[0].body.name must start with ACME- (standard Naming)',
      'body.operations[2].body.name must start with ACME- (standard Naming)',
    ]);
  });

  test("a campaign's schedule must lie within the operating window, by the account-local date", () => {
    const window = standard('Season', { operating_start: '2026-06-01', operating_end: '2026-06-30' });
    // 22:30 UTC on June 30 is already July 1 in Berlin.
    const body = bulk({ start_time: '2026-06-10T08:00:00Z', end_time: '2026-06-30T22:30:00Z' });
    assert.deepEqual(standardViolations(body, [window], noCaps, at), [
      'body.operations[0].body.end_time 2026-06-30T22:30:00Z (2026-07-01 in Europe/Berlin) must lie within the operating window 2026-06-01 to 2026-06-30 (standard Season)',
    ]);
    const inside = bulk({ start_time: '2026-06-10T08:00:00Z', end_time: '2026-06-30T20:00:00Z' });
    assert.deepEqual(standardViolations(inside, [window], noCaps, at), []);
  });

  test('a daily budget over the cap is refused naming the cap; a lifetime budget is not a daily one', () => {
    const caps = { maxDailyBudgetMicros: 500_000_000n, maxBidMicros: null };
    const daily = bulk({ budget_micros: 600_000_000, budget_type: 'daily' });
    assert.deepEqual(standardViolations(daily, [], caps, at), [
      "body.operations[0].body.budget_micros 600000000 exceeds this account's daily budget cap 500000000 (spend guard)",
    ]);
    const lifetime = bulk({ budget_micros: 600_000_000, budget_type: 'lifetime' });
    assert.deepEqual(standardViolations(lifetime, [], caps, at), []);
  });

  test('a bid over the cap in any operation is refused', () => {
    const caps = { maxDailyBudgetMicros: null, maxBidMicros: 999_999n };
    assert.deepEqual(standardViolations(bulk({}), [], caps, at), [
      "body.operations[1].body.bidding_config.max_bid_micros 1000000 exceeds this account's bid cap 999999 (spend guard)",
    ]);
  });

  test('a bid under the cap that a custom audience multiplier raises above it is refused', () => {
    const caps = { maxDailyBudgetMicros: null, maxBidMicros: 2_000_000n };
    const bidding = (multiplier: number) => ({
      bidding_config: {
        strategy: 'fixed_bid',
        max_bid_micros: 1_900_000,
        custom_audience_bid_multipliers: [
          { custom_audience_id: 'aud_1', bid_multiplier_micros: 1_000_000 },
          { custom_audience_id: 'aud_2', bid_multiplier_micros: multiplier },
        ],
      },
    });
    assert.deepEqual(standardViolations(bidding(10_000_000), [], caps, at), [
      "body.bidding_config.custom_audience_bid_multipliers[1]: the bid 1900000 times custom audience aud_2's multiplier 10000000 (micros) is 19000000 micros, above this account's bid cap 2000000 (spend guard)",
    ]);
    // 1.9 x 1.05 = 1.995: within the cap.
    assert.deepEqual(standardViolations(bidding(1_050_000), [], caps, at), []);
    // An update that sets only the multipliers is held against the bid the ad group keeps.
    const body = {
      bidding_config: {
        custom_audience_bid_multipliers: [{ custom_audience_id: 'aud_2', bid_multiplier_micros: 1_100_000 }],
      },
    };
    const result = {
      bidding_config: { strategy: 'fixed_bid', max_bid_micros: 1_900_000, ...body.bidding_config },
    };
    assert.deepEqual(standardViolations(body, [], caps, at), []);
    assert.equal(standardViolations(body, [], caps, at, result).length, 1);
    // In a bulk job's operations too.
    assert.match(
      standardViolations(
        { operations: [{ kind: 'create_ad_group', body: bidding(3_000_000) }] },
        [],
        caps,
        at,
      )[0] ?? '',
      /^body\.operations\[0\]\.body\.bidding_config\.custom_audience_bid_multipliers\[1\]: .* is 5700000 micros/,
    );
  });
});

describe('target URLs', () => {
  test('a subdomain of an allowed domain is allowed, a look-alike domain is not', () => {
    const links = standard('Links', { allowed_domains: ['example.com'] });
    const url = (u: string) => ({ creative: { target_url: u } });
    assert.deepEqual(standardViolations(url('https://shop.example.com/a'), [links], noCaps, at), []);
    assert.deepEqual(standardViolations(url('https://badexample.com/a'), [links], noCaps, at), [
      'body.creative.target_url must link to an allowed domain (example.com), not badexample.com (standard Links)',
    ]);
  });

  test('a UTM value given twice is refused, even when one of them is right', () => {
    const utm = standard('Tracking', { utm: { utm_source: 'ads' } });
    const body = { creative: { target_url: 'https://example.com/?utm_source=ads&utm_source=x' } };
    assert.deepEqual(standardViolations(body, [utm], noCaps, at), [
      'body.creative.target_url must carry utm_source=ads in its query (it has utm_source=ads, utm_source=x) (standard Tracking)',
    ]);
  });
});

test('only a pause or an archive stops serving, by its path or by a body that sets only the status', () => {
  assert.equal(stopsServing('/ad_groups/ag_1/pause'), true);
  assert.equal(stopsServing('/ads/ad_1/archive'), true);
  assert.equal(stopsServing('/ad_groups/ag_1/activate'), false);
  assert.equal(stopsServing('/ad_groups/ag_1'), false);
  // An update that only pauses or archives stops serving; one that also changes anything else does not.
  assert.equal(stopsServing('/ads/ad_1', { status: 'paused' }), true);
  assert.equal(stopsServing('/ad_groups/ag_1', { status: 'archived' }), true);
  assert.equal(stopsServing('/ads/ad_1', { status: 'active' }), false);
  assert.equal(stopsServing('/ads/ad_1', { status: 'paused', name: 'Renamed' }), false);
});
