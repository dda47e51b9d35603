import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AdJson } from '../src/ads.ts';
import {
  type AdListJson,
  type ErrorJson,
  type Sandbox,
  type SandboxAccount,
  startSandbox,
} from './sandbox.ts';

type Row = Record<string, string | number | boolean | null>;
interface InsightsJson {
  data: Row[];
  paging: { after: string | null; before: string | null; has_more: boolean };
  totals?: Row;
  currency: string;
  time_zone: string;
}

/** The fake clock: 2026-11-20 10:00 UTC, which is 02:00 that day in Los Angeles. */
let clock = Date.parse('2026-11-20T10:00:00Z');
let sb: Sandbox;

before(async () => {
  sb = await startSandbox({ now: () => clock });
});

after(async () => {
  await sb?.stop();
});

interface Seeded extends SandboxAccount {
  ads: AdJson[];
  /** The first seeded ad group and its ads. */
  groupId: string;
  groupAds: AdJson[];
}

async function seeded(timeZone = 'UTC'): Promise<Seeded> {
  const account = await sb.newAccount({ time_zone: timeZone });
  const res = await sb.call<AdListJson>('GET', '/ads?limit=500', { token: account.credential });
  const ads = res.body.data;
  const groupId = ads[0]?.ad_group_id ?? '';
  return { ...account, ads, groupId, groupAds: ads.filter((a) => a.ad_group_id === groupId) };
}

function insights<T = InsightsJson>(a: SandboxAccount, path: string, query: [string, string][] = []) {
  const qs = new URLSearchParams(query).toString();
  return sb.call<T>('GET', `${path}${qs === '' ? '' : `?${qs}`}`, { token: a.credential });
}

const groupPath = (a: Seeded) => `/ad_groups/${a.groupId}/insights`;
const PAST_WEEK: [string, string] = ['time_ranges', '2026-11-01..2026-11-07'];

describe('GET /ad_groups/{ad_group_id}/insights', () => {
  it('aggregates the ad group’s ads: each metric is the sum over its ads', async () => {
    const a = await seeded();
    const group = await insights(a, groupPath(a), [PAST_WEEK]);
    assert.equal(group.status, 200);
    assert.equal(group.body.data.length, 1);
    const row = group.body.data[0] ?? {};
    assert.equal(row.ad_group_id, a.groupId);
    assert.equal(row.date_start, '2026-11-01');
    assert.equal(row.date_end, '2026-11-07');
    assert.equal(row.preliminary, false);
    let impressions = 0;
    let spend = 0;
    for (const ad of a.groupAds) {
      const one = await insights(a, `/ads/${ad.id}/insights`, [PAST_WEEK]);
      assert.equal(one.status, 200);
      impressions += Number(one.body.data[0]?.impressions);
      spend += Number(one.body.data[0]?.spend_micros);
    }
    assert.ok(impressions > 0);
    assert.equal(row.impressions, impressions);
    assert.equal(row.spend_micros, spend);
    assert.equal(group.body.currency, 'USD');
    assert.equal(group.body.time_zone, 'UTC');
  });

  it('answers the same question with the same numbers every time', async () => {
    const a = await seeded();
    const q: [string, string][] = [PAST_WEEK, ['time_granularity', 'daily'], ['segments', 'device']];
    const first = await insights(a, groupPath(a), q);
    const second = await insights(a, groupPath(a), q);
    assert.equal(first.status, 200);
    assert.deepEqual(second.body, first.body);
  });

  it('returns the default fields, derived ratios included, and only the fields asked for', async () => {
    const a = await seeded();
    const all = await insights(a, groupPath(a), [PAST_WEEK]);
    const row = all.body.data[0] ?? {};
    for (const f of [
      'impressions',
      'clicks',
      'ctr',
      'spend_micros',
      'cpc_micros',
      'conversions',
      'conversion_value_micros',
    ]) {
      assert.ok(f in row, `default field ${f}`);
    }
    assert.equal(row.ctr, Number((Number(row.clicks) / Number(row.impressions)).toFixed(6)));
    assert.equal(row.cpc_micros, Math.round(Number(row.spend_micros) / Number(row.clicks)));

    const some = await insights(a, groupPath(a), [PAST_WEEK, ['fields', 'roas'], ['fields', 'clicks']]);
    const picked = some.body.data[0] ?? {};
    assert.equal(picked.clicks, row.clicks);
    assert.equal(typeof picked.roas, 'number');
    assert.equal('impressions' in picked, false);
  });

  it('refuses an unknown metric, naming it', async () => {
    const a = await seeded();
    const res = await insights<ErrorJson>(a, groupPath(a), [
      ['fields', 'clicks'],
      ['fields', 'likes'],
    ]);
    assert.equal(res.status, 400);
    assert.equal(res.body.error.field, 'fields');
    assert.match(res.body.error.message, /"likes" is not a metric/);
  });

  it('splits a range by day, ISO week (Monday to Sunday) and calendar month', async () => {
    const a = await seeded();
    const range: [string, string] = ['time_ranges', '2026-09-28..2026-10-14'];
    const daily = await insights(a, groupPath(a), [range, ['time_granularity', 'daily']]);
    assert.equal(daily.body.data.length, 17);
    assert.equal(daily.body.data[0]?.date_start, '2026-09-28');
    assert.equal(daily.body.data[16]?.date_end, '2026-10-14');

    const weekly = await insights(a, groupPath(a), [range, ['time_granularity', 'weekly']]);
    assert.deepEqual(
      weekly.body.data.map((r) => [r.date_start, r.date_end]),
      [
        ['2026-09-28', '2026-10-04'],
        ['2026-10-05', '2026-10-11'],
        ['2026-10-12', '2026-10-14'],
      ],
    );
    const monthly = await insights(a, groupPath(a), [range, ['time_granularity', 'monthly']]);
    assert.deepEqual(
      monthly.body.data.map((r) => [r.date_start, r.date_end]),
      [
        ['2026-09-28', '2026-09-30'],
        ['2026-10-01', '2026-10-14'],
      ],
    );
    const total = await insights(a, groupPath(a), [range]);
    const sum = (rows: Row[]) => rows.reduce((s, r) => s + Number(r.clicks), 0);
    assert.equal(sum(daily.body.data), total.body.data[0]?.clicks);
    assert.equal(sum(weekly.body.data), total.body.data[0]?.clicks);
    assert.equal(sum(monthly.body.data), total.body.data[0]?.clicks);
  });

  it('counts days in the account’s time zone and marks the current local day preliminary', async () => {
    // 10:00 UTC on 2026-11-20 is 02:00 that day in Los Angeles, and already 2026-11-21 on Kiritimati (UTC+14).
    const la = await seeded('America/Los_Angeles');
    const res = await insights(la, groupPath(la), [
      ['time_ranges', '2026-11-18..2026-11-22'],
      ['time_granularity', 'daily'],
    ]);
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.body.data.map((r) => [r.date_start, r.preliminary]),
      [
        ['2026-11-18', false],
        ['2026-11-19', false],
        ['2026-11-20', true],
      ],
    );
    const kiritimati = await seeded('Pacific/Kiritimati');
    const ki = await insights(kiritimati, groupPath(kiritimati), [
      ['time_ranges', '2026-11-18..2026-11-22'],
      ['time_granularity', 'daily'],
    ]);
    assert.deepEqual(
      ki.body.data.map((r) => [r.date_start, r.preliminary]),
      [
        ['2026-11-18', false],
        ['2026-11-19', false],
        ['2026-11-20', false],
        ['2026-11-21', true],
      ],
    );
  });

  it('lets the current local day grow as the day passes', async () => {
    const a = await seeded('America/Los_Angeles');
    const q: [string, string][] = [
      ['time_ranges', '2026-11-20..2026-11-20'],
      ['fields', 'impressions'],
    ];
    const saved = clock;
    try {
      const early = await insights(a, groupPath(a), q);
      clock += 12 * 3600_000;
      const later = await insights(a, groupPath(a), q);
      assert.ok(Number(later.body.data[0]?.impressions) > Number(early.body.data[0]?.impressions));
      assert.equal(later.body.data[0]?.preliminary, true);
    } finally {
      clock = saved;
    }
  });

  it('defaults to the last seven local days, the current one included', async () => {
    const a = await seeded();
    const res = await insights(a, groupPath(a), [['time_granularity', 'daily']]);
    assert.deepEqual(
      res.body.data.map((r) => r.date_start),
      ['2026-11-14', '2026-11-15', '2026-11-16', '2026-11-17', '2026-11-18', '2026-11-19', '2026-11-20'],
    );
    assert.equal(res.body.data[0]?.time_range, '2026-11-14..2026-11-20');
  });

  it('splits by segment, the parts adding up to the whole, grouped in the order asked for', async () => {
    const a = await seeded();
    const whole = await insights(a, groupPath(a), [PAST_WEEK]);
    const byDevice = await insights(a, groupPath(a), [PAST_WEEK, ['segments', 'device']]);
    assert.deepEqual(
      byDevice.body.data.map((r) => r.device),
      ['mobile', 'desktop', 'tablet'],
    );
    const sum = byDevice.body.data.reduce((s, r) => s + Number(r.impressions), 0);
    assert.equal(sum, whole.body.data[0]?.impressions);

    const both = await insights(a, groupPath(a), [
      PAST_WEEK,
      ['segments', 'device'],
      ['segments', 'country'],
    ]);
    assert.equal(both.body.data.length, 18);
    assert.deepEqual(
      both.body.data.slice(0, 2).map((r) => [r.device, r.country]),
      [
        ['mobile', 'US'],
        ['mobile', 'GB'],
      ],
    );
    const regrouped = await insights(a, groupPath(a), [
      PAST_WEEK,
      ['segments', 'device'],
      ['segments', 'country'],
      ['override_segment_group_order', 'country'],
      ['override_segment_group_order', 'device'],
    ]);
    assert.deepEqual(
      regrouped.body.data.slice(0, 2).map((r) => [r.country, r.device]),
      [
        ['US', 'mobile'],
        ['US', 'desktop'],
      ],
    );
    const bad = await insights<ErrorJson>(a, groupPath(a), [
      ['segments', 'device'],
      ['override_segment_group_order', 'country'],
    ]);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.field, 'override_segment_group_order');
  });

  it('reports one row per ad at the ad aggregation level, with names on request', async () => {
    const a = await seeded();
    const res = await insights(a, groupPath(a), [
      PAST_WEEK,
      ['aggregation_level', 'ad'],
      ['includes', 'entity_name'],
    ]);
    assert.deepEqual(
      res.body.data.map((r) => r.ad_id),
      a.groupAds.map((ad) => ad.id),
    );
    assert.equal(res.body.data[0]?.ad_name, a.groupAds[0]?.name);
    assert.equal(typeof res.body.data[0]?.ad_group_name, 'string');
  });

  it('sorts and filters by metrics, and totals the rows it lists', async () => {
    const a = await seeded();
    const q: [string, string][] = [
      ['time_ranges', '2026-10-01..2026-10-31'],
      ['time_granularity', 'daily'],
      ['fields', 'clicks'],
    ];
    const all = await insights(a, groupPath(a), q);
    const clicks = all.body.data.map((r) => Number(r.clicks));
    const median = [...clicks].sort((x, y) => x - y)[15] ?? 0;
    const res = await insights(a, groupPath(a), [
      ...q,
      ['sort', 'clicks:desc'],
      ['filters', `clicks:gte:${median}`],
      ['includes', 'totals'],
    ]);
    assert.equal(res.status, 200);
    const got = res.body.data.map((r) => Number(r.clicks));
    assert.deepEqual(
      got,
      clicks.filter((c) => c >= median).sort((x, y) => y - x),
    );
    assert.equal(
      res.body.totals?.clicks,
      got.reduce((s, c) => s + c, 0),
    );
  });

  it('pages with after and before cursors', async () => {
    const a = await seeded();
    const q: [string, string][] = [
      ['time_ranges', '2026-10-01..2026-10-10'],
      ['time_granularity', 'daily'],
    ];
    const first = await insights(a, groupPath(a), [...q, ['limit', '4']]);
    assert.deepEqual(
      first.body.data.map((r) => r.date_start),
      ['2026-10-01', '2026-10-02', '2026-10-03', '2026-10-04'],
    );
    assert.equal(first.body.paging.has_more, true);
    assert.equal(first.body.paging.before, null);
    const second = await insights(a, groupPath(a), [
      ...q,
      ['limit', '4'],
      ['after', first.body.paging.after ?? ''],
    ]);
    assert.deepEqual(
      second.body.data.map((r) => r.date_start),
      ['2026-10-05', '2026-10-06', '2026-10-07', '2026-10-08'],
    );
    const third = await insights(a, groupPath(a), [
      ...q,
      ['limit', '4'],
      ['after', second.body.paging.after ?? ''],
    ]);
    assert.deepEqual(
      third.body.data.map((r) => r.date_start),
      ['2026-10-09', '2026-10-10'],
    );
    assert.equal(third.body.paging.has_more, false);
    assert.equal(third.body.paging.after, null);
    const back = await insights(a, groupPath(a), [
      ...q,
      ['limit', '4'],
      ['before', third.body.paging.before ?? ''],
    ]);
    assert.deepEqual(back.body.data, second.body.data);

    const other = await insights<ErrorJson>(a, groupPath(a), [
      ['time_granularity', 'weekly'],
      ['after', first.body.paging.after ?? ''],
    ]);
    assert.equal(other.status, 400);
    assert.equal(other.body.error.field, 'after');
  });

  it('refuses bad arguments with a 400 naming the parameter', async () => {
    const a = await seeded();
    const cases: [[string, string][], string][] = [
      [[['limit', '2001']], 'limit'],
      [[['limit', '0']], 'limit'],
      [[['time_granularity', 'hourly']], 'time_granularity'],
      [[['aggregation_level', 'campaign']], 'aggregation_level'],
      [[['time_ranges', '2026-11-07..2026-11-01']], 'time_ranges'],
      [[['time_ranges', '2026-02-30..2026-03-01']], 'time_ranges'],
      [[['time_ranges', '2026-01-01..2026-12-31']], 'time_ranges'],
      [[['sort', 'clicks:up']], 'sort'],
      [[['filters', 'clicks:between:3']], 'filters'],
      [[['filters', 'clicks:gt:many']], 'filters'],
      [[['segments', 'age']], 'segments'],
      [[['includes', 'everything']], 'includes'],
      [[['after', 'not-a-cursor']], 'after'],
      [[['colour', 'blue']], 'colour'],
    ];
    for (const [query, field] of cases) {
      const res = await insights<ErrorJson>(a, groupPath(a), query);
      assert.equal(res.status, 400, JSON.stringify(query));
      assert.equal(res.body.error.code, 'invalid_request');
      assert.equal(res.body.error.field, field, JSON.stringify(query));
    }
    const ok = await insights(a, groupPath(a), [['limit', '2000']]);
    assert.equal(ok.status, 200);
  });

  it('answers 404 for an ad group that does not exist or is another account’s', async () => {
    const a = await seeded();
    const b = await seeded();
    const missing = await insights<ErrorJson>(a, '/ad_groups/adg_0000000000000000/insights');
    assert.equal(missing.status, 404);
    const foreign = await insights<ErrorJson>(a, groupPath(b));
    assert.equal(foreign.status, 404);
    assert.equal(foreign.body.error.code, 'not_found');
  });
});

describe('GET /ads/{ad_id}/insights', () => {
  it('reports one ad at the ad level only, and 404 for an unknown ad', async () => {
    const a = await seeded();
    const ad = a.ads[0];
    assert.ok(ad !== undefined);
    const res = await insights(a, `/ads/${ad.id}/insights`, [PAST_WEEK, ['includes', 'entity_name']]);
    assert.equal(res.status, 200);
    assert.equal(res.body.data[0]?.ad_id, ad.id);
    assert.equal(res.body.data[0]?.ad_group_id, ad.ad_group_id);
    assert.equal(res.body.data[0]?.ad_name, ad.name);
    const level = await insights<ErrorJson>(a, `/ads/${ad.id}/insights`, [['aggregation_level', 'ad_group']]);
    assert.equal(level.status, 400);
    assert.equal(level.body.error.field, 'aggregation_level');
    const missing = await insights<ErrorJson>(a, '/ads/ad_0000000000000000/insights');
    assert.equal(missing.status, 404);
  });

  it('is rate limited like every platform endpoint, with Retry-After', async () => {
    const a = await seeded();
    const path = `/ads/${a.ads[0]?.id}/insights`;
    const fault = await sb.admin('POST', '/_sandbox/faults', {
      account_id: a.accountId,
      method: 'GET',
      path_prefix: path,
      kind: 'rate_limit',
      retry_after_seconds: 7,
      count: 1,
    });
    assert.equal(fault.status, 201);
    const limited = await insights<ErrorJson>(a, path);
    assert.equal(limited.status, 429);
    assert.equal(limited.headers.get('retry-after'), '7');
    assert.equal(limited.body.error.code, 'rate_limited');
    assert.equal((await insights(a, path)).status, 200);
  });

  it('needs the account credential', async () => {
    const a = await seeded();
    const res = await sb.call<ErrorJson>('GET', `/ads/${a.ads[0]?.id}/insights`);
    assert.equal(res.status, 401);
  });
});
