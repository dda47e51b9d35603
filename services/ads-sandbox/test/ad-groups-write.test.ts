import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AdGroupJson } from '../src/ad-groups.ts';
import type { ErrorJson, Sandbox } from './sandbox.ts';
import { startSandbox } from './sandbox.ts';
import { adGroupBody, type Structure, seededStructure } from './structure.ts';

let sb: Sandbox;

before(async () => {
  sb = await startSandbox();
});

after(async () => {
  await sb?.stop();
});

function post<T = AdGroupJson>(s: Structure, path: string, body?: unknown, key?: string) {
  return sb.call<T>('POST', path, {
    token: s.credential,
    ...(body === undefined ? {} : { body }),
    ...(key === undefined ? {} : { headers: { 'idempotency-key': key } }),
  });
}

async function getGroup(s: Structure, id: string): Promise<AdGroupJson> {
  const res = await sb.call<AdGroupJson>('GET', `/ad_groups/${id}`, { token: s.credential });
  assert.equal(res.status, 200);
  return res.body;
}

/** The seeded campaign with the objective "clicks" and the one with "conversions". */
function campaigns(s: Structure) {
  const clicks = s.campaigns.find((c) => c.objective === 'clicks');
  const conversions = s.campaigns.find((c) => c.objective === 'conversions');
  assert.ok(clicks !== undefined && conversions !== undefined);
  return { clicks, conversions };
}

function audience(s: Structure, i = 0): { id: string } {
  const a = s.audiences[i];
  assert.ok(a !== undefined);
  return a;
}

function group(s: Structure, i = 0): AdGroupJson {
  const g = s.adGroups[i];
  assert.ok(g !== undefined);
  return g;
}

describe('POST /ad_groups', () => {
  it('creates an ad group with every field, at revision 1, and lists it', async () => {
    const s = await seededStructure(sb);
    const { conversions } = campaigns(s);
    const body = {
      campaign_id: conversions.id,
      name: 'Returning buyers',
      description: 'People who bought in the last year',
      context_hints: ['running shoes', 'trail'],
      status: 'active',
      bidding_config: {
        billing_event_type: 'impression',
        strategy: 'maximize_conversions',
        max_bid_micros: 30_400_000_000_000,
        custom_audience_bid_multipliers: [
          { custom_audience_id: audience(s).id, bid_multiplier_micros: 1_500_000 },
        ],
      },
      product_set: {
        product_feed_id: s.feeds[1]?.id,
        filters: [
          { field: 'price', operator: 'lte', values: ['99.50'] },
          { field: 'brand', operator: 'in', values: ['Acme', 'Globex'] },
        ],
      },
      landing_page_configuration: { query_string_template: 'utm_source=ads&adg={{ad_group.id}}' },
    };
    const res = await post(s, '/ad_groups', body);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.match(res.body.id, /^adg_[0-9a-f]{16}$/);
    assert.deepEqual(
      {
        campaign_id: res.body.campaign_id,
        name: res.body.name,
        description: res.body.description,
        context_hints: res.body.context_hints,
        status: res.body.status,
        bidding_config: res.body.bidding_config,
        product_set: res.body.product_set,
        landing_page_configuration: res.body.landing_page_configuration,
        revision: res.body.revision,
      },
      { ...body, revision: 1 },
    );
    assert.deepEqual(await getGroup(s, res.body.id), res.body);
    const entries = await sb.ledger(s.accountId, '/ad_groups');
    assert.deepEqual(
      entries.map((e) => [e.request_body, e.response_status, e.response_body]),
      [[body, 201, res.body]],
    );
  });

  it('fills the defaults of a minimal body: maximize_clicks, no product set, no hints', async () => {
    const s = await seededStructure(sb);
    const res = await post(s, '/ad_groups', {
      campaign_id: campaigns(s).clicks.id,
      name: 'Minimal',
      status: 'paused',
      bidding_config: { billing_event_type: 'click' },
    });
    assert.equal(res.status, 201);
    assert.deepEqual(res.body.bidding_config, {
      billing_event_type: 'click',
      strategy: 'maximize_clicks',
      max_bid_micros: null,
      custom_audience_bid_multipliers: [],
    });
    assert.deepEqual(
      [
        res.body.description,
        res.body.context_hints,
        res.body.product_set,
        res.body.landing_page_configuration,
      ],
      [null, [], null, null],
    );
  });

  describe('refuses an invalid create body with 400 naming the field, creating nothing', () => {
    const cases: [string, (c: string) => unknown, string | undefined][] = [
      ['a body that is not an object', () => [1], undefined],
      ['a missing campaign_id', (c) => ({ ...adGroupBody(c), campaign_id: undefined }), 'campaign_id'],
      ['a missing name', (c) => ({ ...adGroupBody(c), name: undefined }), 'name'],
      ['a name of 2 characters', (c) => adGroupBody(c, { name: 'ab' }), 'name'],
      ['a name of 1001 characters', (c) => adGroupBody(c, { name: 'n'.repeat(1001) }), 'name'],
      ['a blank name', (c) => adGroupBody(c, { name: '     ' }), 'name'],
      ['status archived on create', (c) => adGroupBody(c, { status: 'archived' }), 'status'],
      ['a missing status', (c) => ({ ...adGroupBody(c), status: undefined }), 'status'],
      ['a null description', (c) => adGroupBody(c, { description: null }), 'description'],
      ['context_hints not an array', (c) => adGroupBody(c, { context_hints: 'shoes' }), 'context_hints'],
      [
        '2001 context hints',
        (c) => adGroupBody(c, { context_hints: Array.from({ length: 2001 }, () => 'hint') }),
        'context_hints',
      ],
      ['an empty context hint', (c) => adGroupBody(c, { context_hints: ['ok', ''] }), 'context_hints.1'],
      [
        'a missing bidding_config',
        (c) => ({ ...adGroupBody(c), bidding_config: undefined }),
        'bidding_config',
      ],
      [
        'a missing billing_event_type',
        (c) => adGroupBody(c, { bidding_config: { strategy: 'maximize_clicks' } }),
        'bidding_config.billing_event_type',
      ],
      [
        'an unknown billing_event_type',
        (c) => adGroupBody(c, { bidding_config: { billing_event_type: 'view' } }),
        'bidding_config.billing_event_type',
      ],
      [
        'an unknown strategy',
        (c) => adGroupBody(c, { bidding_config: { billing_event_type: 'click', strategy: 'cheapest' } }),
        'bidding_config.strategy',
      ],
      [
        'fixed_bid without max_bid_micros',
        (c) => adGroupBody(c, { bidding_config: { billing_event_type: 'click', strategy: 'fixed_bid' } }),
        'bidding_config.max_bid_micros',
      ],
      [
        'max_bid_micros of 0',
        (c) => adGroupBody(c, { bidding_config: { billing_event_type: 'click', max_bid_micros: 0 } }),
        'bidding_config.max_bid_micros',
      ],
      [
        'max_bid_micros above 30400000000000',
        (c) =>
          adGroupBody(c, {
            bidding_config: { billing_event_type: 'click', max_bid_micros: 30_400_000_000_001 },
          }),
        'bidding_config.max_bid_micros',
      ],
      [
        'a fractional max_bid_micros',
        (c) => adGroupBody(c, { bidding_config: { billing_event_type: 'click', max_bid_micros: 1.5 } }),
        'bidding_config.max_bid_micros',
      ],
      [
        'a bid multiplier below 100000',
        (c) =>
          adGroupBody(c, {
            bidding_config: {
              billing_event_type: 'click',
              custom_audience_bid_multipliers: [{ custom_audience_id: 'a', bid_multiplier_micros: 99_999 }],
            },
          }),
        'bidding_config.custom_audience_bid_multipliers.0.bid_multiplier_micros',
      ],
      [
        'a bid multiplier above 10000000',
        (c) =>
          adGroupBody(c, {
            bidding_config: {
              billing_event_type: 'click',
              custom_audience_bid_multipliers: [
                { custom_audience_id: 'a', bid_multiplier_micros: 10_000_001 },
              ],
            },
          }),
        'bidding_config.custom_audience_bid_multipliers.0.bid_multiplier_micros',
      ],
      [
        'a bid multiplier without its audience',
        (c) =>
          adGroupBody(c, {
            bidding_config: {
              billing_event_type: 'click',
              custom_audience_bid_multipliers: [{ bid_multiplier_micros: 1_000_000 }],
            },
          }),
        'bidding_config.custom_audience_bid_multipliers.0.custom_audience_id',
      ],
      [
        'one audience with two multipliers',
        (c) =>
          adGroupBody(c, {
            bidding_config: {
              billing_event_type: 'click',
              custom_audience_bid_multipliers: [
                { custom_audience_id: 'a', bid_multiplier_micros: 1_000_000 },
                { custom_audience_id: 'a', bid_multiplier_micros: 2_000_000 },
              ],
            },
          }),
        'bidding_config.custom_audience_bid_multipliers.1.custom_audience_id',
      ],
      [
        'an unknown bidding property',
        (c) => adGroupBody(c, { bidding_config: { billing_event_type: 'click', bid: 1 } }),
        'bidding_config.bid',
      ],
      [
        'a product set without its feed',
        (c) => adGroupBody(c, { product_set: { filters: [] } }),
        'product_set.product_feed_id',
      ],
      [
        'an unknown filter operator',
        (c) =>
          adGroupBody(c, {
            product_set: {
              product_feed_id: 'pf_x',
              filters: [{ field: 'brand', operator: 'eq', values: ['a'] }],
            },
          }),
        'product_set.filters.0.operator',
      ],
      [
        'a filter without values',
        (c) =>
          adGroupBody(c, {
            product_set: {
              product_feed_id: 'pf_x',
              filters: [{ field: 'brand', operator: 'in', values: [] }],
            },
          }),
        'product_set.filters.0.values',
      ],
      [
        'gt with a value that is not a number',
        (c) =>
          adGroupBody(c, {
            product_set: {
              product_feed_id: 'pf_x',
              filters: [{ field: 'price', operator: 'gt', values: ['cheap'] }],
            },
          }),
        'product_set.filters.0.values',
      ],
      [
        'a filter field that is not an attribute name',
        (c) =>
          adGroupBody(c, {
            product_set: {
              product_feed_id: 'pf_x',
              filters: [{ field: 'Price ($)', operator: 'in', values: ['1'] }],
            },
          }),
        'product_set.filters.0.field',
      ],
      [
        'a null landing_page_configuration on create',
        (c) => adGroupBody(c, { landing_page_configuration: null }),
        'landing_page_configuration',
      ],
      [
        'a landing_page_configuration without its template',
        (c) => adGroupBody(c, { landing_page_configuration: {} }),
        'landing_page_configuration.query_string_template',
      ],
      ['an unknown property', (c) => adGroupBody(c, { budget_micros: 5 }), 'budget_micros'],
      ['a campaign of no account', () => adGroupBody('cmp_0000000000000000'), 'campaign_id'],
    ];
    for (const [what, body, field] of cases) {
      it(`refuses ${what}`, async () => {
        const s = await seededStructure(sb);
        const res = await post<ErrorJson>(s, '/ad_groups', body(campaigns(s).clicks.id));
        assert.equal(res.status, 400, JSON.stringify(res.body));
        assert.equal(res.body.error.code, 'invalid_request');
        assert.equal(res.body.error.field, field);
        if (field !== undefined) assert.ok(res.body.error.message.includes(field), res.body.error.message);
        assert.deepEqual(await sb.ledger(s.accountId), []);
      });
    }
  });

  it("refuses another account's campaign and product feed as not this account's", async () => {
    const s = await seededStructure(sb);
    const other = await seededStructure(sb);
    const theirCampaign = await post<ErrorJson>(s, '/ad_groups', adGroupBody(campaigns(other).clicks.id));
    assert.equal(theirCampaign.status, 400);
    assert.equal(theirCampaign.body.error.field, 'campaign_id');
    assert.match(theirCampaign.body.error.message, /not a campaign of this account/);
    const theirFeed = await post<ErrorJson>(
      s,
      '/ad_groups',
      adGroupBody(campaigns(s).clicks.id, { product_set: { product_feed_id: other.feeds[0]?.id } }),
    );
    assert.equal(theirFeed.status, 400);
    assert.equal(theirFeed.body.error.field, 'product_set.product_feed_id');
  });

  it("refuses a bid multiplier on another account's or an unknown custom audience, naming the item", async () => {
    const s = await seededStructure(sb);
    const other = await seededStructure(sb);
    const bidding = (...ids: string[]) => ({
      billing_event_type: 'click',
      strategy: 'fixed_bid',
      max_bid_micros: 2_000_000,
      custom_audience_bid_multipliers: ids.map((id) => ({
        custom_audience_id: id,
        bid_multiplier_micros: 1_200_000,
      })),
    });
    const clicks = campaigns(s).clicks.id;
    for (const id of [audience(other).id, 'ca_0000000000000000']) {
      const res = await post<ErrorJson>(
        s,
        '/ad_groups',
        adGroupBody(clicks, { bidding_config: bidding(audience(s).id, id) }),
      );
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.error.code, 'invalid_request');
      assert.equal(
        res.body.error.field,
        'bidding_config.custom_audience_bid_multipliers.1.custom_audience_id',
      );
      assert.match(res.body.error.message, new RegExp(`${id} is not a custom audience of this account`));
    }
    assert.deepEqual(await sb.ledger(s.accountId), []);

    const created = await post(
      s,
      '/ad_groups',
      adGroupBody(clicks, { bidding_config: bidding(audience(s, 1).id) }),
    );
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const g = created.body;
    const update = await post<ErrorJson>(s, `/ad_groups/${g.id}`, {
      bidding_config: {
        custom_audience_bid_multipliers: [
          { custom_audience_id: audience(other).id, bid_multiplier_micros: 2_000_000 },
        ],
      },
    });
    assert.equal(update.status, 400);
    assert.equal(
      update.body.error.field,
      'bidding_config.custom_audience_bid_multipliers.0.custom_audience_id',
    );
    assert.deepEqual(await getGroup(s, g.id), g);

    const own = await post(s, `/ad_groups/${g.id}`, {
      bidding_config: {
        custom_audience_bid_multipliers: [
          { custom_audience_id: audience(s).id, bid_multiplier_micros: 2_000_000 },
        ],
      },
    });
    assert.equal(own.status, 200, JSON.stringify(own.body));
    assert.deepEqual(own.body.bidding_config.custom_audience_bid_multipliers, [
      { custom_audience_id: audience(s).id, bid_multiplier_micros: 2_000_000 },
    ]);
    assert.equal(own.body.revision, g.revision + 1);
  });

  it('refuses maximize_conversions in a campaign whose objective is not conversions', async () => {
    const s = await seededStructure(sb);
    const bidding = { billing_event_type: 'impression', strategy: 'maximize_conversions' };
    const res = await post<ErrorJson>(
      s,
      '/ad_groups',
      adGroupBody(campaigns(s).clicks.id, { bidding_config: bidding }),
    );
    assert.equal(res.status, 400);
    assert.equal(res.body.error.field, 'bidding_config.strategy');
    const ok = await post(
      s,
      '/ad_groups',
      adGroupBody(campaigns(s).conversions.id, { bidding_config: bidding }),
    );
    assert.equal(ok.status, 201);
  });

  it('refuses an archived product feed with 409 product_feed_archived', async () => {
    const s = await seededStructure(sb);
    const feed = s.feeds[1];
    assert.ok(feed !== undefined);
    assert.equal((await post(s, `/feeds/${feed.id}/archive`)).status, 200);
    const res = await post<ErrorJson>(
      s,
      '/ad_groups',
      adGroupBody(campaigns(s).clicks.id, { product_set: { product_feed_id: feed.id } }),
    );
    assert.equal(res.status, 409);
    assert.equal(res.body.error.code, 'product_feed_archived');
    assert.equal(res.body.error.field, 'product_set.product_feed_id');
  });

  it('refuses a name another live ad group of the campaign has, in any case, with 409 duplicate_name', async () => {
    const s = await seededStructure(sb);
    const g = group(s, 0);
    const res = await post<ErrorJson>(
      s,
      '/ad_groups',
      adGroupBody(g.campaign_id, { name: g.name.toUpperCase() }),
    );
    assert.equal(res.status, 409);
    assert.equal(res.body.error.code, 'duplicate_name');
    assert.equal(res.body.error.field, 'name');
    const elsewhere = await post(s, '/ad_groups', adGroupBody(campaigns(s).conversions.id, { name: g.name }));
    assert.equal(elsewhere.status, 201, 'the name is free in another campaign');
    await post(s, `/ad_groups/${g.id}/archive`);
    const afterArchive = await post(s, '/ad_groups', adGroupBody(g.campaign_id, { name: g.name }));
    assert.equal(afterArchive.status, 201, 'an archived ad group frees its name');
  });

  it('replays a create retried with the same key, creating one ad group; another body is 422', async () => {
    const s = await seededStructure(sb);
    const body = adGroupBody(campaigns(s).clicks.id);
    const first = await post(s, '/ad_groups', body, 'create-1');
    const retry = await post(s, '/ad_groups', body, 'create-1');
    assert.equal(first.status, 201);
    assert.equal(retry.status, 201);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(retry.body, first.body);
    const reused = await post<ErrorJson>(s, '/ad_groups', { ...body, name: 'Another name' }, 'create-1');
    assert.equal(reused.status, 422);
    assert.equal(reused.body.error.code, 'idempotency_key_reused');
    const all = await sb.call<{ data: AdGroupJson[] }>('GET', '/ad_groups', { token: s.credential });
    assert.equal(all.body.data.length, 5);
    assert.equal((await sb.ledger(s.accountId)).length, 1);
  });

  it('suffers injected faults like every platform endpoint, and a retry with the key replays', async () => {
    const s = await seededStructure(sb);
    const body = adGroupBody(campaigns(s).clicks.id);
    const fault = (kind: string) =>
      sb.admin('POST', '/_sandbox/faults', {
        account_id: s.accountId,
        method: 'POST',
        path_prefix: '/ad_groups',
        kind,
        count: 1,
      });
    await fault('status_500');
    const refused = await post<ErrorJson>(s, '/ad_groups', body, 'fault-1');
    assert.equal(refused.status, 500);
    assert.deepEqual(await sb.ledger(s.accountId), []);
    await fault('fail_after_commit');
    const lost = await post<ErrorJson>(s, '/ad_groups', body, 'fault-1');
    assert.equal(lost.status, 500);
    const retry = await post(s, '/ad_groups', body, 'fault-1');
    assert.equal(retry.status, 201);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    assert.equal((await sb.ledger(s.accountId)).length, 1);
  });
});

describe('POST /ad_groups/{ad_group_id}', () => {
  it('merges bidding fields, replaces the rest, and bumps the revision once per change', async () => {
    const s = await seededStructure(sb);
    const g = group(s, 0);
    const res = await post(s, `/ad_groups/${g.id}`, {
      name: 'Renamed group',
      description: 'Now with a description',
      bidding_config: { max_bid_micros: 2_500_000 },
      product_set: { filters: [{ field: 'brand', operator: 'starts_with', values: ['Ac'] }] },
      context_hints: ['sale'],
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.revision, 2);
    assert.deepEqual(res.body.bidding_config, { ...g.bidding_config, max_bid_micros: 2_500_000 });
    assert.deepEqual(res.body.product_set, {
      product_feed_id: g.product_set?.product_feed_id,
      filters: [{ field: 'brand', operator: 'starts_with', values: ['Ac'] }],
    });
    assert.equal(res.body.name, 'Renamed group');
    assert.ok(Date.parse(res.body.updated_at) > Date.parse(g.updated_at));

    // Product set fields merge one by one too: another feed keeps the filters left out.
    const otherFeed = s.feeds.find((f) => f.id !== g.product_set?.product_feed_id);
    assert.ok(otherFeed, 'the structure has a second feed');
    const moved = await post(s, `/ad_groups/${g.id}`, { product_set: { product_feed_id: otherFeed.id } });
    assert.equal(moved.status, 200, JSON.stringify(moved.body));
    assert.deepEqual(moved.body.product_set, {
      product_feed_id: otherFeed.id,
      filters: [{ field: 'brand', operator: 'starts_with', values: ['Ac'] }],
    });
    assert.equal(moved.body.revision, 3);

    const cleared = await post(s, `/ad_groups/${g.id}`, {
      description: null,
      landing_page_configuration: null,
      product_set: null,
    });
    assert.deepEqual(
      [cleared.body.description, cleared.body.landing_page_configuration, cleared.body.product_set],
      [null, null, null],
    );
    assert.equal(cleared.body.revision, 4);

    const same = await post(s, `/ad_groups/${g.id}`, { name: 'Renamed group', status: 'active' });
    assert.deepEqual(same.body, cleared.body, 'an update that changes nothing keeps the revision');
  });

  it('refuses a merged bidding config that breaks a rule, and moving to another campaign', async () => {
    const s = await seededStructure(sb);
    const fixed = group(s, 0);
    const removeBid = await post<ErrorJson>(s, `/ad_groups/${fixed.id}`, {
      bidding_config: { max_bid_micros: null },
    });
    assert.equal(removeBid.status, 400);
    assert.equal(removeBid.body.error.field, 'bidding_config.max_bid_micros');
    const auto = group(s, 1);
    const toFixed = await post<ErrorJson>(s, `/ad_groups/${auto.id}`, {
      bidding_config: { strategy: 'fixed_bid' },
    });
    assert.equal(toFixed.body.error.field, 'bidding_config.max_bid_micros');
    const conversions = await post<ErrorJson>(s, `/ad_groups/${auto.id}`, {
      bidding_config: { strategy: 'maximize_conversions' },
    });
    assert.equal(conversions.body.error.field, 'bidding_config.strategy');
    const move = await post<ErrorJson>(s, `/ad_groups/${auto.id}`, {
      campaign_id: campaigns(s).conversions.id,
    });
    assert.equal(move.status, 400);
    assert.equal(move.body.error.field, 'campaign_id');
    const needsFeed = await post<ErrorJson>(s, `/ad_groups/${auto.id}`, { product_set: { filters: [] } });
    assert.equal(needsFeed.body.error.field, 'product_set.product_feed_id');
    assert.deepEqual(await getGroup(s, auto.id), auto);
    assert.deepEqual(await sb.ledger(s.accountId), []);
  });

  it('refuses an invalid update body naming the field', async () => {
    const s = await seededStructure(sb);
    const g = group(s, 0);
    for (const [body, field] of [
      [{ name: 'no' }, 'name'],
      [{ status: 'deleted' }, 'status'],
      [{ bidding_config: { billing_event_type: 'view' } }, 'bidding_config.billing_event_type'],
      [{ context_hints: [1] }, 'context_hints.0'],
      [{ landing_page_configuration: 'x' }, 'landing_page_configuration'],
      [{ unknown: true }, 'unknown'],
    ] as const) {
      const res = await post<ErrorJson>(s, `/ad_groups/${g.id}`, body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error.field, field);
    }
  });
});

describe('ad group status moves', () => {
  it('pauses and activates, bumping the revision only when the status changes', async () => {
    const s = await seededStructure(sb);
    const g = group(s, 1);
    const paused = await post(s, `/ad_groups/${g.id}/pause`);
    assert.deepEqual([paused.status, paused.body.status, paused.body.revision], [200, 'paused', 2]);
    const again = await post(s, `/ad_groups/${g.id}/pause`, {});
    assert.deepEqual(again.body, paused.body);
    const withIssues = await sb.call<AdGroupJson>('GET', `/ad_groups/${g.id}?include=serving_issues`, {
      token: s.credential,
    });
    assert.deepEqual(withIssues.body.serving_issues, [
      { code: 'paused', message: 'The ad group is paused.' },
    ]);
    const active = await post(s, `/ad_groups/${g.id}/activate`);
    assert.deepEqual([active.body.status, active.body.revision], ['active', 3]);
  });

  it('refuses to update, activate or pause an archived ad group with 409 ad_group_archived', async () => {
    const s = await seededStructure(sb);
    const g = group(s, 2);
    const archived = await post(s, `/ad_groups/${g.id}/archive`);
    assert.deepEqual([archived.status, archived.body.status, archived.body.revision], [200, 'archived', 2]);
    for (const [path, body] of [
      [`/ad_groups/${g.id}/activate`, undefined],
      [`/ad_groups/${g.id}/pause`, undefined],
      [`/ad_groups/${g.id}`, { name: 'Revived' }],
      [`/ad_groups/${g.id}`, {}],
    ] as const) {
      const res = await post<ErrorJson>(s, path, body);
      assert.equal(res.status, 409, path);
      assert.equal(res.body.error.code, 'ad_group_archived');
      assert.match(res.body.error.message, /archived/);
    }
    const again = await post(s, `/ad_groups/${g.id}/archive`);
    assert.deepEqual(again.body, archived.body, 'archiving again changes nothing');
    assert.deepEqual(await getGroup(s, g.id), archived.body);
  });

  it('refuses a body with properties and an unknown ad group', async () => {
    const s = await seededStructure(sb);
    const res = await post<ErrorJson>(s, `/ad_groups/${group(s).id}/pause`, { reason: 'x' });
    assert.equal(res.status, 400);
    assert.equal(res.body.error.field, 'reason');
    const missing = await post<ErrorJson>(s, '/ad_groups/adg_0000000000000000/activate');
    assert.equal(missing.status, 404);
  });

  it('reports an archived product feed as a serving issue of the ad groups that use it', async () => {
    const s = await seededStructure(sb);
    const g = group(s, 0);
    await post(s, `/feeds/${g.product_set?.product_feed_id}/archive`);
    const res = await sb.call<AdGroupJson>('GET', `/ad_groups/${g.id}?include=serving_issues`, {
      token: s.credential,
    });
    assert.deepEqual(
      res.body.serving_issues?.map((i) => i.code),
      ['product_feed_archived'],
    );
  });
});
