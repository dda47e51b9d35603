import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AdListJson, ErrorJson, Sandbox, SandboxAccount } from './sandbox.ts';
import { startSandbox } from './sandbox.ts';

interface PixelJson {
  id: string;
  account_id: string;
  name: string;
  client_type: string;
  status: string;
  created_at: string;
}
interface Page<T> {
  data: T[];
  paging: { after: string | null; before: string | null; has_more: boolean };
}
interface EventJson {
  id: string;
  pixel_id: string;
  event_type: string;
  event_at: string;
  received_at: string;
  value_micros: number | null;
  [key: string]: unknown;
}
interface EventSettingJson {
  id: string;
  name: string;
  event_type: string;
  custom_event_name: string | null;
  attribution_window_days: number;
  source_ids: string[];
}
type ConversionRow = Record<string, string | number | boolean | undefined>;
interface ConversionInsightsJson {
  aggregation_level: string;
  data: ConversionRow[];
}

/** The fake clock, a little after the real one so the seeded pixel (90 days old) has events. */
let clock = Date.now() + 3600_000;
let sb: Sandbox;

before(async () => {
  sb = await startSandbox({ now: () => clock });
});

after(async () => {
  await sb?.stop();
});

const call = <T>(a: SandboxAccount, method: string, path: string, body?: unknown, key?: string) =>
  sb.call<T>(method, path, {
    token: a.credential,
    ...(body === undefined ? {} : { body }),
    ...(key === undefined ? {} : { headers: { 'idempotency-key': key } }),
  });

async function pixels(a: SandboxAccount, query = ''): Promise<Page<PixelJson>> {
  const res = await call<Page<PixelJson>>(a, 'GET', `/conversions/pixels${query}`);
  assert.equal(res.status, 200);
  return res.body;
}

describe('conversion pixels', () => {
  it('lists the seeded web pixel of a new account', async () => {
    const a = await sb.newAccount();
    const page = await pixels(a);
    assert.equal(page.data.length, 1);
    assert.equal(page.data[0]?.name, 'Website pixel');
    assert.equal(page.data[0]?.client_type, 'web');
    assert.match(page.data[0]?.id ?? '', /^px_[0-9a-f]{16}$/);
    assert.deepEqual(page.paging, { after: null, before: null, has_more: false });
  });

  it('creates a pixel and lists it after the seeded one', async () => {
    const a = await sb.newAccount();
    const res = await call<PixelJson>(a, 'POST', '/conversions/pixels', {
      name: 'Checkout pixel',
      client_type: 'web',
    });
    assert.equal(res.status, 201);
    assert.equal(res.body.name, 'Checkout pixel');
    assert.equal(res.body.account_id, a.accountId);
    assert.equal(res.body.created_at, new Date(clock).toISOString());
    const page = await pixels(a);
    assert.deepEqual(page.data[1], res.body);
  });

  it('pages through pixels with cursors in either order', async () => {
    const a = await sb.newAccount();
    for (const name of ['Pixel two', 'Pixel three', 'Pixel four']) {
      await call(a, 'POST', '/conversions/pixels', { name, client_type: 'web' });
    }
    const first = await pixels(a, '?limit=2');
    assert.deepEqual(
      first.data.map((p) => p.name),
      ['Website pixel', 'Pixel two'],
    );
    assert.equal(first.paging.has_more, true);
    const second = await pixels(a, `?limit=2&after=${first.paging.after}`);
    assert.deepEqual(
      second.data.map((p) => p.name),
      ['Pixel three', 'Pixel four'],
    );
    assert.equal(second.paging.has_more, false);
    const back = await pixels(a, `?limit=2&before=${second.paging.before}`);
    assert.deepEqual(back.data, first.data);
    const desc = await pixels(a, '?order=desc&limit=1');
    assert.equal(desc.data[0]?.name, 'Pixel four');

    const bad = await call<ErrorJson>(a, 'GET', '/conversions/pixels?limit=501');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.field, 'limit');
    const foreign = await call<ErrorJson>(
      a,
      'GET',
      `/conversions/event_settings?after=${first.paging.after}`,
    );
    assert.equal(foreign.status, 400);
    assert.equal(foreign.body.error.field, 'after');
  });

  it('refuses a bad pixel body, naming the field', async () => {
    const a = await sb.newAccount();
    const cases: [unknown, string][] = [
      [{ name: 'ab', client_type: 'web' }, 'name'],
      [{ name: '     ', client_type: 'web' }, 'name'],
      [{ name: 'x'.repeat(1001), client_type: 'web' }, 'name'],
      [{ name: 'Good name', client_type: 'app' }, 'client_type'],
      [{ name: 'Good name' }, 'client_type'],
      [{ name: 'Good name', client_type: 'web', colour: 'red' }, 'colour'],
    ];
    for (const [body, field] of cases) {
      const res = await call<ErrorJson>(a, 'POST', '/conversions/pixels', body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error.field, field, JSON.stringify(body));
    }
    assert.equal((await pixels(a)).data.length, 1);
    const blank = await call<ErrorJson>(a, 'POST', '/conversions/pixels', {
      name: '   ',
      client_type: 'web',
    });
    assert.equal(blank.body.error.message, 'body.name must contain a non-whitespace character');
  });

  it('replays a creation retried with the same Idempotency-Key, creating one pixel', async () => {
    const a = await sb.newAccount();
    const body = { name: 'Retried pixel', client_type: 'web' };
    const first = await call<PixelJson>(a, 'POST', '/conversions/pixels', body, 'px-key-1');
    const retry = await call<PixelJson>(a, 'POST', '/conversions/pixels', body, 'px-key-1');
    assert.equal(first.status, 201);
    assert.equal(retry.status, 201);
    assert.deepEqual(retry.body, first.body);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    assert.equal((await pixels(a)).data.length, 2);
    assert.equal((await sb.ledger(a.accountId, '/conversions/pixels')).length, 1);

    const other = await call<ErrorJson>(
      a,
      'POST',
      '/conversions/pixels',
      { ...body, name: 'Other' },
      'px-key-1',
    );
    assert.equal(other.status, 422);
    assert.equal(other.body.error.code, 'idempotency_key_reused');
  });

  it('suffers injected faults: a 500 creates nothing, a lost answer is recovered by a retry', async () => {
    const a = await sb.newAccount();
    const fault = (kind: string) =>
      sb.admin('POST', '/_sandbox/faults', {
        account_id: a.accountId,
        method: 'POST',
        path_prefix: '/conversions/pixels',
        kind,
        count: 1,
      });
    const body = { name: 'Faulty pixel', client_type: 'web' };
    await fault('status_500');
    const refused = await call<ErrorJson>(a, 'POST', '/conversions/pixels', body, 'fault-1');
    assert.equal(refused.status, 500);
    assert.equal((await pixels(a)).data.length, 1);

    await fault('fail_after_commit');
    const lost = await call<ErrorJson>(a, 'POST', '/conversions/pixels', body, 'fault-2');
    assert.equal(lost.status, 500);
    const retry = await call<PixelJson>(a, 'POST', '/conversions/pixels', body, 'fault-2');
    assert.equal(retry.status, 201);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    assert.equal((await pixels(a)).data.length, 2);
  });
});

describe('GET /conversions/events', () => {
  it('returns recent sampled events of a pixel, newest first, the same within a ten-minute slot', async () => {
    const a = await sb.newAccount();
    const pixel = (await pixels(a)).data[0];
    assert.ok(pixel !== undefined);
    const first = await call<Page<EventJson>>(a, 'GET', `/conversions/events?pid=${pixel.id}&limit=50`);
    assert.equal(first.status, 200);
    assert.equal(first.body.data.length, 50);
    const times = first.body.data.map((e) => Date.parse(e.event_at));
    assert.deepEqual(
      times,
      [...times].sort((x, y) => y - x),
    );
    for (const e of first.body.data) {
      assert.equal(e.pixel_id, pixel.id);
      assert.ok(Date.parse(e.received_at) <= clock);
      assert.ok(Date.parse(e.received_at) >= Date.parse(e.event_at));
    }
    const again = await call<Page<EventJson>>(a, 'GET', `/conversions/events?pid=${pixel.id}&limit=50`);
    assert.deepEqual(again.body, first.body);
    const few = await call<Page<EventJson>>(a, 'GET', `/conversions/events?pid=${pixel.id}&limit=3`);
    assert.deepEqual(few.body.data, first.body.data.slice(0, 3));
  });

  it('carries no personal data', async () => {
    const a = await sb.newAccount();
    const pixel = (await pixels(a)).data[0];
    const res = await call<Page<EventJson>>(a, 'GET', `/conversions/events?pid=${pixel?.id}&limit=50`);
    const keys = new Set(res.body.data.flatMap((e) => Object.keys(e)));
    for (const personal of ['email', 'phone', 'ip', 'ip_address', 'user_agent', 'click_id', 'user_id']) {
      assert.equal(keys.has(personal), false, personal);
    }
    const text = JSON.stringify(res.body);
    assert.doesNotMatch(text, /@/);
  });

  it('has no events for a pixel until its first ten minutes have passed', async () => {
    const a = await sb.newAccount();
    const created = await call<PixelJson>(a, 'POST', '/conversions/pixels', {
      name: 'New pixel',
      client_type: 'web',
    });
    const now = await call<Page<EventJson>>(a, 'GET', `/conversions/events?pid=${created.body.id}`);
    assert.deepEqual(now.body.data, []);
    const saved = clock;
    try {
      clock += 25 * 60_000;
      const later = await call<Page<EventJson>>(a, 'GET', `/conversions/events?pid=${created.body.id}`);
      assert.ok(later.body.data.length >= 1 && later.body.data.length <= 3);
      for (const e of later.body.data)
        assert.ok(Date.parse(e.event_at) >= Date.parse(created.body.created_at));
    } finally {
      clock = saved;
    }
  });

  it('refuses a missing pid or a limit out of 1 to 50, and answers 404 for another account’s pixel', async () => {
    const a = await sb.newAccount();
    const b = await sb.newAccount();
    const pixel = (await pixels(a)).data[0];
    const missing = await call<ErrorJson>(a, 'GET', '/conversions/events');
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error.field, 'pid');
    for (const limit of ['0', '51', 'ten']) {
      const res = await call<ErrorJson>(a, 'GET', `/conversions/events?pid=${pixel?.id}&limit=${limit}`);
      assert.equal(res.status, 400);
      assert.equal(res.body.error.field, 'limit');
    }
    const foreign = await call<ErrorJson>(b, 'GET', `/conversions/events?pid=${pixel?.id}`);
    assert.equal(foreign.status, 404);
  });
});

describe('conversion event settings', () => {
  it('lists the seeded purchase setting and creates one counting events of existing pixels', async () => {
    const a = await sb.newAccount();
    const pixel = (await pixels(a)).data[0];
    assert.ok(pixel !== undefined);
    const seededList = await call<Page<EventSettingJson>>(a, 'GET', '/conversions/event_settings');
    assert.equal(seededList.body.data.length, 1);
    assert.equal(seededList.body.data[0]?.event_type, 'purchase');
    assert.deepEqual(seededList.body.data[0]?.source_ids, [pixel.id]);

    const res = await call<EventSettingJson>(a, 'POST', '/conversions/event_settings', {
      name: 'Newsletter sign-ups',
      event_type: 'custom',
      custom_event_name: 'newsletter_signup',
      attribution_window_days: 28,
      source_ids: [pixel.id],
    });
    assert.equal(res.status, 201);
    assert.match(res.body.id, /^evs_[0-9a-f]{16}$/);
    assert.equal(res.body.custom_event_name, 'newsletter_signup');
    const list = await call<Page<EventSettingJson>>(
      a,
      'GET',
      '/conversions/event_settings?limit=1&order=desc',
    );
    assert.deepEqual(list.body.data, [res.body]);
    assert.equal(list.body.paging.has_more, true);
  });

  it('refuses a bad setting, naming the field', async () => {
    const a = await sb.newAccount();
    const b = await sb.newAccount();
    const pixel = (await pixels(a)).data[0]?.id ?? '';
    const foreignPixel = (await pixels(b)).data[0]?.id ?? '';
    const good = { name: 'Leads', event_type: 'lead', attribution_window_days: 7, source_ids: [pixel] };
    const cases: [unknown, string][] = [
      [{ ...good, attribution_window_days: 3 }, 'attribution_window_days'],
      [{ ...good, event_type: 'purchased' }, 'event_type'],
      [{ ...good, name: '' }, 'name'],
      [{ ...good, source_ids: [] }, 'source_ids'],
      [{ ...good, source_ids: [pixel, 'px_0000000000000000'] }, 'source_ids.1'],
      [{ ...good, source_ids: [foreignPixel] }, 'source_ids.0'],
      [{ ...good, event_type: 'custom' }, 'custom_event_name'],
      [{ ...good, custom_event_name: 'lead_form' }, 'custom_event_name'],
      [{ name: 'Leads', event_type: 'lead', source_ids: [pixel] }, 'attribution_window_days'],
    ];
    for (const [body, field] of cases) {
      const res = await call<ErrorJson>(a, 'POST', '/conversions/event_settings', body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error.field, field, JSON.stringify(body));
    }
    const list = await call<Page<EventSettingJson>>(a, 'GET', '/conversions/event_settings');
    assert.equal(list.body.data.length, 1);
    const window = await call<ErrorJson>(a, 'POST', '/conversions/event_settings', {
      ...good,
      attribution_window_days: 30,
    });
    assert.equal(window.body.error.message, 'body.attribution_window_days must be one of 1, 7, 28');
  });

  it('replays a creation retried with the same Idempotency-Key', async () => {
    const a = await sb.newAccount();
    const pixel = (await pixels(a)).data[0]?.id ?? '';
    const body = {
      name: 'Carts',
      event_type: 'add_to_cart',
      attribution_window_days: 1,
      source_ids: [pixel],
    };
    const first = await call<EventSettingJson>(a, 'POST', '/conversions/event_settings', body, 'evs-1');
    const retry = await call<EventSettingJson>(a, 'POST', '/conversions/event_settings', body, 'evs-1');
    assert.deepEqual(retry.body, first.body);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    const list = await call<Page<EventSettingJson>>(a, 'GET', '/conversions/event_settings');
    assert.equal(list.body.data.length, 2);
  });
});

describe('POST /conversions/insights', () => {
  const RANGE = '2026-10-01..2026-10-14';

  async function adGroupConversions(a: SandboxAccount, groupId: string): Promise<number> {
    const res = await call<{ data: { conversions: number }[] }>(
      a,
      'GET',
      `/ad_groups/${groupId}/insights?time_ranges=${RANGE}&fields=conversions`,
    );
    return res.body.data[0]?.conversions ?? 0;
  }

  it('totals the account’s attributed conversions, agreeing with the ad group insights', async () => {
    const a = await sb.newAccount();
    const ads = await call<AdListJson>(a, 'GET', '/ads?limit=500');
    const groups = [...new Set(ads.body.data.map((ad) => ad.ad_group_id))];
    let expected = 0;
    for (const g of groups) expected += await adGroupConversions(a, g);

    const res = await call<ConversionInsightsJson>(a, 'POST', '/conversions/insights', {
      aggregation_level: 'account',
      time_ranges: [RANGE],
    });
    assert.equal(res.status, 200);
    assert.equal(res.body.data.length, 1);
    const row = res.body.data[0] ?? {};
    assert.equal(row.conversions, expected);
    assert.equal(Number(row.click_through_conversions) + Number(row.view_through_conversions), expected);
    assert.equal(row.preliminary, false);

    const byGroup = await call<ConversionInsightsJson>(a, 'POST', '/conversions/insights', {
      aggregation_level: 'ad_group',
      time_ranges: [RANGE],
      group_by_entity: true,
      include_zero_rows: true,
    });
    assert.deepEqual(byGroup.body.data.map((r) => r.entity_id).sort(), [...groups].sort());
    for (const r of byGroup.body.data) {
      assert.equal(r.conversions, await adGroupConversions(a, String(r.entity_id)));
    }
  });

  it('gives daily values per device for the entities asked for, deterministically', async () => {
    const a = await sb.newAccount();
    const ads = await call<AdListJson>(a, 'GET', '/ads?limit=500');
    const campaign = ads.body.data[0]?.campaign_id ?? '';
    const body = {
      aggregation_level: 'campaign',
      entity_ids: [campaign],
      time_granularity: 'daily',
      breakdown: 'device',
      time_ranges: ['2026-10-01..2026-10-03'],
      include_zero_rows: true,
    };
    const res = await call<ConversionInsightsJson>(a, 'POST', '/conversions/insights', body);
    assert.equal(res.status, 200);
    assert.equal(res.body.data.length, 9);
    assert.deepEqual(
      res.body.data.slice(0, 3).map((r) => [r.date_start, r.device]),
      [
        ['2026-10-01', 'mobile'],
        ['2026-10-01', 'desktop'],
        ['2026-10-01', 'tablet'],
      ],
    );
    const again = await call<ConversionInsightsJson>(a, 'POST', '/conversions/insights', body);
    assert.deepEqual(again.body, res.body);
    const noZeros = await call<ConversionInsightsJson>(a, 'POST', '/conversions/insights', {
      ...body,
      include_zero_rows: false,
    });
    assert.deepEqual(
      noZeros.body.data,
      res.body.data.filter((r) => Number(r.conversions) > 0),
    );
  });

  it('refuses a bad body, naming the field', async () => {
    const a = await sb.newAccount();
    const good = { aggregation_level: 'account', time_ranges: [RANGE] };
    const cases: [unknown, string][] = [
      [{ time_ranges: [RANGE] }, 'aggregation_level'],
      [{ ...good, aggregation_level: 'keyword' }, 'aggregation_level'],
      [{ ...good, time_granularity: 'weekly' }, 'time_granularity'],
      [{ ...good, breakdown: 'age' }, 'breakdown'],
      [{ aggregation_level: 'account' }, 'time_ranges'],
      [{ ...good, time_ranges: ['last week'] }, 'time_ranges'],
      [{ ...good, aggregation_level: 'ad', entity_ids: ['ad_0000000000000000'] }, 'entity_ids.0'],
      [{ ...good, include_zero_rows: 'yes' }, 'include_zero_rows'],
      [{ ...good, colour: 'red' }, 'colour'],
    ];
    for (const [body, field] of cases) {
      const res = await call<ErrorJson>(a, 'POST', '/conversions/insights', body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error.field, field, JSON.stringify(body));
    }
  });
});
