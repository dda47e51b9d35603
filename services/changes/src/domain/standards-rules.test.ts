import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  type CheckMoment,
  lookalikeHostViolations,
  type SpendCaps,
  type Standard,
  standardContradictions,
  standardViolations,
  stopsServing,
} from './standards-rules.ts';

const noCaps: SpendCaps = { maxDailyBudgetMicros: null, maxBidMicros: null };
const at: CheckMoment = {
  today: '2026-06-15',
  timeZone: 'Europe/Berlin',
  stopsServing: false,
  wireFormat: 'single',
};
/** A bulk mutation job is checked in the bulk wire format. */
const bulkAt: CheckMoment = { ...at, wireFormat: 'bulk' };
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
    assert.deepEqual(
      standardViolations(body, [standard('Naming', { naming_prefix: 'ACME-' })], noCaps, bulkAt),
      [
        'body.operations[0].body.name must start with ACME- (standard Naming)',
        'body.operations[2].body.name must start with ACME- (standard Naming)',
      ],
    );
  });

  test("a campaign's schedule must lie within the operating window, by the account-local date", () => {
    const window = standard('Season', { operating_start: '2026-06-01', operating_end: '2026-06-30' });
    // 22:30 UTC on June 30 is already July 1 in Berlin.
    const body = bulk({ start_time: '2026-06-10T08:00:00Z', end_time: '2026-06-30T22:30:00Z' });
    assert.deepEqual(standardViolations(body, [window], noCaps, bulkAt), [
      'body.operations[0].body.end_time 2026-06-30T22:30:00Z (2026-07-01 in Europe/Berlin) must lie within the operating window 2026-06-01 to 2026-06-30 (standard Season)',
    ]);
    const inside = bulk({ start_time: '2026-06-10T08:00:00Z', end_time: '2026-06-30T20:00:00Z' });
    assert.deepEqual(standardViolations(inside, [window], noCaps, bulkAt), []);
  });

  test('a daily budget over the cap is refused naming the cap; a lifetime budget is not a daily one', () => {
    const caps = { maxDailyBudgetMicros: 500_000_000n, maxBidMicros: null };
    const daily = bulk({ budget_micros: 600_000_000, budget_type: 'daily' });
    assert.deepEqual(standardViolations(daily, [], caps, bulkAt), [
      "body.operations[0].body.budget_micros 600000000 exceeds this account's daily budget cap 500000000 (spend guard)",
    ]);
    const lifetime = bulk({ budget_micros: 600_000_000, budget_type: 'lifetime' });
    assert.deepEqual(standardViolations(lifetime, [], caps, bulkAt), []);
  });

  test('a bid over the cap in any operation is refused', () => {
    const caps = { maxDailyBudgetMicros: null, maxBidMicros: 999_999n };
    assert.deepEqual(standardViolations(bulk({}), [], caps, bulkAt), [
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
        bulkAt,
      )[0] ?? '',
      /^body\.operations\[0\]\.body\.bidding_config\.custom_audience_bid_multipliers\[1\]: .* is 5700000 micros/,
    );
  });
});

describe('the bid cap, per click or per thousand impressions', () => {
  const caps = { maxDailyBudgetMicros: null, maxBidMicros: 2_000_000n };
  /** An ad group's bidding, as ads_create_ad_group sends it (the single wire format). */
  const impression = (bid: number, multipliers: Record<string, unknown>[] = []) => ({
    bidding_config: {
      billing_event_type: 'impression',
      strategy: 'fixed_bid',
      max_bid_micros: bid,
      custom_audience_bid_multipliers: multipliers,
    },
  });
  /** A bulk job creating one ad group billed per impression, its bid a CPM. */
  const bulkCpm = (bid: number, multipliers: Record<string, unknown>[] = []) => ({
    operations: [{ type: 'create_ad_group', ref: 'g', body: { name: 'G', ...impression(bid, multipliers) } }],
  });
  const tenfold = [{ custom_audience_id: 'aud_2', bid_multiplier_micros: 10_000_000 }];

  test('an impression bid in the single wire format is held to the cap as its CPM, a click bid as it is', () => {
    assert.deepEqual(standardViolations(impression(2_500), [], caps, at), [
      "body.bidding_config.max_bid_micros 2500 per impression is a CPM of 2500000 micros, above this account's bid cap 2000000 (spend guard; impression bids are held to it per thousand impressions)",
    ]);
    // 1.99 per impression is a CPM of 1,990: far above a cap of 2.00.
    assert.equal(standardViolations(impression(1_990_000), [], caps, at).length, 1);
    // A CPM of 1.999 is within it.
    assert.deepEqual(standardViolations(impression(1_999), [], caps, at), []);
    assert.deepEqual(standardViolations(impression(2_000), [], caps, at), []);
    const click = { bidding_config: { billing_event_type: 'click', max_bid_micros: 2_500_000 } };
    assert.deepEqual(standardViolations(click, [], caps, at), [
      "body.bidding_config.max_bid_micros 2500000 exceeds this account's bid cap 2000000 (spend guard)",
    ]);
  });

  test("a bulk job's impression bid is a CPM, held to the cap as it is", () => {
    assert.deepEqual(standardViolations(bulkCpm(1_500_000), [], caps, bulkAt), []);
    assert.deepEqual(standardViolations(bulkCpm(5_000_000), [], caps, bulkAt), [
      "body.operations[0].body.bidding_config.max_bid_micros 5000000 per thousand impressions (a CPM) exceeds this account's bid cap 2000000 (spend guard; impression bids are held to it per thousand impressions)",
    ]);
  });

  test('an update setting only the bid of an ad group billed per impression is held per thousand impressions', () => {
    const body = { bidding_config: { max_bid_micros: 2_500 } };
    // The ad group as the update leaves it: its billing event type kept.
    const result = { bidding_config: { ...impression(2_500).bidding_config } };
    assert.deepEqual(standardViolations(body, [], caps, at, result), [
      "body.bidding_config.max_bid_micros 2500 per impression is a CPM of 2500000 micros, above this account's bid cap 2000000 (spend guard; impression bids are held to it per thousand impressions)",
    ]);
    const within = { bidding_config: { max_bid_micros: 1_500 } };
    const withinResult = { bidding_config: { ...impression(1_500).bidding_config } };
    assert.deepEqual(standardViolations(within, [], caps, at, withinResult), []);
  });

  test('an update switching only the billing to impressions holds the bid the ad group keeps as its CPM', () => {
    const body = { bidding_config: { billing_event_type: 'impression' } };
    const result = { bidding_config: { ...impression(1_500_000).bidding_config } };
    assert.deepEqual(standardViolations(body, [], caps, at, result), [
      "body.bidding_config.billing_event_type impression makes the max_bid_micros 1500000 it keeps a bid per impression, a CPM of 1500000000 micros, above this account's bid cap 2000000 (spend guard; impression bids are held to it per thousand impressions)",
    ]);
    const small = { bidding_config: { ...impression(1_500).bidding_config } };
    assert.deepEqual(standardViolations(body, [], caps, at, small), []);
  });

  test('a custom audience multiplier raises an impression bid held per thousand impressions, in both wire formats', () => {
    // 1900 per impression is a CPM of 1.90; ten times that is 19.00.
    assert.deepEqual(standardViolations(impression(1_900, tenfold), [], caps, at), [
      "body.bidding_config.custom_audience_bid_multipliers[0]: the bid 1900 per impression times custom audience aud_2's multiplier 10000000 (micros) is a CPM of 19000000 micros, above this account's bid cap 2000000 (spend guard; impression bids are held to it per thousand impressions)",
    ]);
    const slight = [{ custom_audience_id: 'aud_2', bid_multiplier_micros: 1_050_000 }];
    assert.deepEqual(standardViolations(impression(1_900, slight), [], caps, at), []);
    // A bulk job's CPM of 1.90, ten times: checked on the job's body (a bulk job has no other result).
    assert.deepEqual(standardViolations(bulkCpm(1_900_000, tenfold), [], caps, bulkAt, {}), [
      "body.operations[0].body.bidding_config.custom_audience_bid_multipliers[0]: the bid 1900000 per thousand impressions times custom audience aud_2's multiplier 10000000 (micros) is 19000000 micros per thousand impressions, above this account's bid cap 2000000 (spend guard; impression bids are held to it per thousand impressions)",
    ]);
    assert.deepEqual(standardViolations(bulkCpm(1_900_000, slight), [], caps, bulkAt, {}), []);
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

/** `shop.example.com` with a Cyrillic "а" (U+0430): its ASCII form is shop.xn--exmple-4nf.com. */
const LOOKALIKE_URL = 'https://shop.ex\u0430mple.com/spring';
const MIXED =
  'shop.xn--exmple-4nf.com (shown as "shop.ex\u0430mple.com": mixed Latin and Cyrillic letters; looks like shop.example.com)';

describe('look-alike hosts (UTS #39)', () => {
  const adUrl = (u: string) => ({ creative: { target_url: u } });

  test('a host mixing Latin and Cyrillic letters is refused, named by field, in ASCII form with the warning', () => {
    assert.deepEqual(lookalikeHostViolations(adUrl(LOOKALIKE_URL), []), [
      `body.creative.target_url must not link to a look-alike host: ${MIXED} mixes scripts in its label "ex\u0430mple" (UTS #39, highly restrictive); a standard of this account must list shop.xn--exmple-4nf.com in allowed_domains for it to be used`,
    ]);
    // Written as its A-label it is the same host.
    assert.equal(lookalikeHostViolations(adUrl('https://shop.xn--exmple-4nf.com/'), []).length, 1);
    // Any URL field: a link_url, an image's url.
    assert.equal(
      lookalikeHostViolations({ link_url: LOOKALIKE_URL, image: { url: LOOKALIKE_URL } }, []).length,
      2,
    );
  });

  test("a look-alike host listed exactly in allowed_domains, as its A-label or in Unicode, is the account's own", () => {
    for (const listed of ['shop.xn--exmple-4nf.com', 'shop.ex\u0430mple.com']) {
      const own = standard('Domains', { allowed_domains: [listed] });
      assert.deepEqual(lookalikeHostViolations(adUrl(LOOKALIKE_URL), [own]), [], listed);
      // Listed, it is also within the allowed domains.
      assert.deepEqual(standardViolations(adUrl(LOOKALIKE_URL), [own], noCaps, at), [], listed);
    }
    // Its domain alone vouches for no other host: each look-alike host is listed by name.
    const parent = standard('Domains', { allowed_domains: ['xn--exmple-4nf.com'] });
    assert.equal(lookalikeHostViolations(adUrl(LOOKALIKE_URL), [parent]).length, 1);
  });

  test("a single-script host whose skeleton is an allowed domain's (or within one) is refused", () => {
    const domains = standard('Domains', { allowed_domains: ['example.com'] });
    assert.deepEqual(lookalikeHostViolations(adUrl('https://examp1e.com/a'), [domains]), [
      'body.creative.target_url must not link to a look-alike host: examp1e.com (looks like example.com) is not the allowed domain example.com of standard "Domains" (UTS #39 confusables); a standard of this account must list examp1e.com in allowed_domains for it to be used',
    ]);
    assert.equal(lookalikeHostViolations(adUrl('https://shop.exarnple.com/a'), [domains]).length, 1);
    assert.deepEqual(lookalikeHostViolations(adUrl('https://shop.example.com/a'), [domains]), []);
    assert.deepEqual(lookalikeHostViolations(adUrl('https://other.test/a'), [domains]), []);
  });

  test('a host that looks like the one the object links to now, without being it, is refused', () => {
    const live = { creative: { target_url: 'https://shop.example.com/a' } };
    assert.deepEqual(lookalikeHostViolations(adUrl('https://shop.examp1e.com/b'), [], live), [
      'body.creative.target_url must not link to a look-alike host: shop.examp1e.com (looks like shop.example.com) is not shop.example.com, which the creative.target_url links to now (UTS #39 confusables); a standard of this account must list shop.examp1e.com in allowed_domains for it to be used',
    ]);
    assert.deepEqual(lookalikeHostViolations(adUrl('https://shop.example.com/b'), [], live), []);
    const own = standard('Domains', { allowed_domains: ['shop.examp1e.com'] });
    assert.deepEqual(lookalikeHostViolations(adUrl('https://shop.examp1e.com/b'), [own], live), []);
  });

  test('a plain or single-script Unicode host that looks like nothing the account has is not refused', () => {
    for (const u of ['https://shop.example.com/', 'https://bücher.example/', 'https://пример.рф/'])
      assert.deepEqual(lookalikeHostViolations(adUrl(u), []), [], u);
  });

  test('in a bulk job each URL is named by its operation and what it creates', () => {
    const body = bulk({}, { name: 'ACME-Ad', creative: { target_url: LOOKALIKE_URL } });
    const [message] = lookalikeHostViolations(body, []);
    assert.match(
      message ?? '',
      /^body\.operations\[2\]\.body\.creative\.target_url \(the ad "ACME-Ad"\) must not link to a look-alike host: shop\.xn--exmple-4nf\.com/,
    );
  });

  test('allowed domains compare in ASCII form: one written in Unicode allows its A-label and the other way round', () => {
    const unicode = standard('Domains', { allowed_domains: ['bücher.example'] });
    const ascii = standard('Domains', { allowed_domains: ['xn--bcher-kva.example'] });
    for (const s of [unicode, ascii]) {
      assert.deepEqual(standardViolations(adUrl('https://shop.xn--bcher-kva.example/'), [s], noCaps, at), []);
      assert.deepEqual(standardViolations(adUrl('https://shop.bücher.example/'), [s], noCaps, at), []);
    }
    assert.deepEqual(standardViolations(adUrl('https://bucher.example/'), [unicode], noCaps, at), [
      'body.creative.target_url must link to an allowed domain (xn--bcher-kva.example), not bucher.example (standard Domains)',
    ]);
    assert.deepEqual(
      standardContradictions({ allowed_domains: ['bücher.example'] }, [
        { ...ascii, standardId: 'std-1', name: 'House' },
      ]),
      [],
    );
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

describe('standards that contradict each other', () => {
  const house = (data: Record<string, unknown>): Standard => ({
    standardId: 'std-1',
    name: 'House style',
    revision: 1,
    data,
  });
  const against = (mine: Record<string, unknown>, theirs: Record<string, unknown>) =>
    standardContradictions(mine, [house(theirs)]);

  test('two naming prefixes contradict unless one starts with the other, compared case-sensitively as enforced', () => {
    assert.deepEqual(against({ naming_prefix: 'BETA-' }, { naming_prefix: 'ACME-' }), [
      '`data.naming_prefix` "BETA-" contradicts standard "House style" (std-1), whose naming_prefix is "ACME-": no name can start with both; archive or change one of them',
    ]);
    assert.deepEqual(against({ naming_prefix: 'ACME-EU-' }, { naming_prefix: 'ACME-' }), []);
    assert.deepEqual(against({ naming_prefix: 'ACME-' }, { naming_prefix: 'ACME-EU-' }), []);
    assert.deepEqual(against({ naming_prefix: 'ACME-' }, { naming_prefix: 'ACME-' }), []);
    // Enforcement compares prefixes case-sensitively: no name starts with both acme- and ACME-.
    assert.equal(against({ naming_prefix: 'acme-' }, { naming_prefix: 'ACME-' }).length, 1);
    // Enforcement agrees: a name starting with ACME-EU- keeps both.
    assert.deepEqual(
      standardViolations(
        { name: 'ACME-EU-Spring' },
        [house({ naming_prefix: 'ACME-' }), house({ naming_prefix: 'ACME-EU-' })],
        noCaps,
        at,
      ),
      [],
    );
  });

  test('allowed domains contradict when no hostname is within a domain of each list, subdomains counting as enforced', () => {
    assert.deepEqual(
      against({ allowed_domains: ['beta.test', 'beta.example'] }, { allowed_domains: ['example.com'] }),
      [
        '`data.allowed_domains` ["beta.test","beta.example"] contradicts standard "House style" (std-1), whose allowed_domains are ["example.com"]: no target URL can link to a domain allowed by both (a subdomain is within its domain); archive or change one of them',
      ],
    );
    // shop.example.com is within example.com: a link to it keeps both.
    assert.deepEqual(
      against({ allowed_domains: ['shop.example.com'] }, { allowed_domains: ['example.com'] }),
      [],
    );
    assert.deepEqual(
      against({ allowed_domains: ['example.com'] }, { allowed_domains: ['x.test', 'shop.example.com'] }),
      [],
    );
    // A look-alike is not a subdomain; domains are compared in any case, as a URL's host is.
    assert.equal(
      against({ allowed_domains: ['badexample.com'] }, { allowed_domains: ['example.com'] }).length,
      1,
    );
    assert.deepEqual(against({ allowed_domains: ['Example.COM'] }, { allowed_domains: ['example.com'] }), []);
    // An empty list is no rule.
    assert.deepEqual(against({ allowed_domains: [] }, { allowed_domains: ['example.com'] }), []);
    const both = [
      house({ allowed_domains: ['example.com'] }),
      house({ allowed_domains: ['shop.example.com'] }),
    ];
    assert.deepEqual(
      standardViolations({ creative: { target_url: 'https://shop.example.com/a' } }, both, noCaps, at),
      [],
    );
  });

  test('two values of the same UTM parameter contradict; different parameters, or the same value, do not', () => {
    assert.deepEqual(against({ utm: { utm_campaign: 'autumn' } }, { utm: { utm_campaign: 'spring' } }), [
      '`data.utm.utm_campaign` "autumn" contradicts standard "House style" (std-1), whose utm_campaign is "spring": a target URL must carry utm_campaign exactly once, so it cannot carry both values; archive or change one of them',
    ]);
    assert.equal(against({ utm: { utm_campaign: 'Spring' } }, { utm: { utm_campaign: 'spring' } }).length, 1);
    assert.deepEqual(against({ utm: { utm_campaign: 'spring' } }, { utm: { utm_campaign: 'spring' } }), []);
    assert.deepEqual(against({ utm: { utm_source: 'ads' } }, { utm: { utm_campaign: 'spring' } }), []);
  });

  test('operating windows contradict when they share no day; a window ending on the day another starts shares it', () => {
    const march = { operating_start: '2026-03-01', operating_end: '2026-03-31' };
    assert.deepEqual(against({ operating_start: '2026-04-01', operating_end: '2026-04-30' }, march), [
      '`data.operating_start` "2026-04-01" contradicts standard "House style" (std-1), whose operating window is 2026-03-01 to 2026-03-31: this window, 2026-04-01 to 2026-04-30, shares no day with it; archive or change one of them',
    ]);
    assert.deepEqual(against({ operating_end: '2026-02-28' }, march), [
      '`data.operating_end` "2026-02-28" contradicts standard "House style" (std-1), whose operating window is 2026-03-01 to 2026-03-31: this window, until 2026-02-28, shares no day with it; archive or change one of them',
    ]);
    // Both ends are days of the window, so the 31st is a day of both.
    assert.deepEqual(against({ operating_start: '2026-03-31' }, march), []);
    assert.deepEqual(against({ operating_end: '2026-03-01' }, march), []);
    assert.deepEqual(against({ operating_start: '2026-01-01' }, { operating_start: '2026-06-01' }), []);
    // Enforcement agrees: on the 31st a change keeps both windows.
    const both = [house(march), house({ operating_start: '2026-03-31' })];
    assert.deepEqual(standardViolations({}, both, noCaps, { ...at, today: '2026-03-31' }), []);
  });

  test('rules on different fields never contradict, and each contradiction with each standard is named', () => {
    assert.deepEqual(against({ naming_prefix: 'BETA-' }, { utm: { utm_campaign: 'spring' } }), []);
    const found = standardContradictions({ naming_prefix: 'BETA-', utm: { utm_source: 'mail' } }, [
      house({ naming_prefix: 'ACME-' }),
      { standardId: 'std-2', name: 'Tracking', revision: 3, data: { utm: { utm_source: 'ads' } } },
    ]);
    assert.equal(found.length, 2);
    assert.match(
      found[0] ?? '',
      /^`data\.naming_prefix` "BETA-" contradicts standard "House style" \(std-1\)/,
    );
    assert.match(found[1] ?? '', /^`data\.utm\.utm_source` "mail" contradicts standard "Tracking" \(std-2\)/);
  });
});
