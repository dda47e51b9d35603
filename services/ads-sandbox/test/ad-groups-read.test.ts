import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AdGroupJson } from '../src/ad-groups.ts';
import type { ErrorJson, Sandbox } from './sandbox.ts';
import { startSandbox } from './sandbox.ts';
import { ids, type ListJson, type Structure, seededStructure, walk } from './structure.ts';

let sb: Sandbox;
let s: Structure;

before(async () => {
  sb = await startSandbox();
  s = await seededStructure(sb);
});

after(async () => {
  await sb?.stop();
});

function list(query: string, token = s.credential) {
  return sb.call<ListJson<AdGroupJson>>('GET', `/ad_groups${query}`, { token });
}

describe('seeded ad groups', () => {
  it('seeds 4 active ad groups, 2 per campaign, each with a valid bidding config and revision 1', () => {
    assert.deepEqual(
      s.adGroups.map((g) => g.name),
      [
        'Spring Sale — Group A',
        'Spring Sale — Group B',
        'Summer Launch — Group A',
        'Summer Launch — Group B',
      ],
    );
    for (const g of s.adGroups) {
      assert.match(g.id, /^adg_[0-9a-f]{16}$/);
      assert.equal(g.account_id, s.accountId);
      assert.equal(g.status, 'active');
      assert.equal(g.revision, 1);
      assert.ok(['impression', 'click'].includes(g.bidding_config.billing_event_type));
      if (g.bidding_config.strategy === 'fixed_bid') assert.ok((g.bidding_config.max_bid_micros ?? 0) > 0);
    }
    assert.deepEqual(
      s.adGroups.map((g) => g.campaign_id),
      [s.campaigns[0]?.id, s.campaigns[0]?.id, s.campaigns[1]?.id, s.campaigns[1]?.id],
    );
  });

  it('returns the ad group object with its bidding, product set and timestamps', () => {
    const g = s.adGroups[0];
    assert.ok(g !== undefined);
    assert.deepEqual(Object.keys(g), [
      'id',
      'account_id',
      'campaign_id',
      'name',
      'description',
      'status',
      'context_hints',
      'bidding_config',
      'product_set',
      'landing_page_configuration',
      'revision',
      'created_at',
      'updated_at',
    ]);
    assert.deepEqual(g.bidding_config, {
      billing_event_type: 'click',
      strategy: 'fixed_bid',
      max_bid_micros: 1_500_000,
      custom_audience_bid_multipliers: [],
    });
    assert.deepEqual(Object.keys(g.bidding_config), [
      'billing_event_type',
      'strategy',
      'max_bid_micros',
      'custom_audience_bid_multipliers',
    ]);
    assert.deepEqual(Object.keys(g.product_set ?? {}), ['product_feed_id', 'filters']);
    assert.deepEqual(Object.keys(g.product_set?.filters[0] ?? {}), ['field', 'operator', 'values']);
    assert.equal(g.product_set?.product_feed_id, s.feeds[0]?.id);
    assert.equal(s.adGroups[1]?.product_set, null);
  });
});

describe('GET /ad_groups paging and filters', () => {
  for (const order of ['asc', 'desc'] as const) {
    it(`pages forward with limit 3 in ${order} order over every ad group once`, async () => {
      const pages = await walk<AdGroupJson>(sb, s.credential, '/ad_groups', `limit=3&order=${order}`);
      assert.deepEqual(
        pages.map((p) => p.data.length),
        [3, 1],
      );
      const expected = order === 'asc' ? ids(s.adGroups) : ids(s.adGroups).reverse();
      assert.deepEqual(ids(pages.flatMap((p) => p.data)), expected);
      assert.equal(pages[0]?.paging.before, null);
      const back = await list(`?limit=3&order=${order}&before=${pages[1]?.paging.before}`);
      assert.deepEqual(ids(back.body.data), ids(pages[0]?.data ?? []));
      assert.equal(back.body.paging.before, null);
      assert.equal(back.body.paging.has_more, true);
    });
  }

  it('filters by campaign_id and by a case-insensitive substring of the name', async () => {
    const campaign = s.campaigns[1]?.id;
    const byCampaign = await list(`?campaign_id=${campaign}`);
    assert.deepEqual(ids(byCampaign.body.data), ids(s.adGroups.slice(2)));
    const byName = await list(`?name=${encodeURIComponent('group b')}`);
    assert.deepEqual(
      byName.body.data.map((g) => g.name),
      ['Spring Sale — Group B', 'Summer Launch — Group B'],
    );
    const both = await list(`?campaign_id=${campaign}&name=GROUP%20A`);
    assert.deepEqual(
      both.body.data.map((g) => g.name),
      ['Summer Launch — Group A'],
    );
  });

  it('reports serving issues only with include=serving_issues', async () => {
    const plain = await list('');
    assert.ok(plain.body.data.every((g) => !('serving_issues' in g)));
    const res = await list('?include=serving_issues');
    assert.deepEqual(
      res.body.data.map((g) => g.serving_issues),
      [[], [], [], []],
    );
  });

  it("never lists another account's ad groups", async () => {
    const other = await seededStructure(sb);
    assert.equal(other.adGroups.length, 4);
    const mine = new Set(ids(s.adGroups));
    assert.ok(other.adGroups.every((g) => !mine.has(g.id)));
  });
});

describe('GET /ad_groups validation', () => {
  const adsCursor = Buffer.from('ads:1').toString('base64url');
  const cases: [string, string][] = [
    ['limit=0', 'limit'],
    ['limit=501', 'limit'],
    ['limit=x', 'limit'],
    ['order=newest', 'order'],
    ['after=nope', 'after'],
    [`after=${adsCursor}`, 'after'],
    [`after=${adsCursor}&before=${adsCursor}`, 'before'],
    ['include=ads', 'include'],
    ['name=ab', 'name'],
    ['name=%20%20%20%20', 'name'],
    ['campaign_id=', 'campaign_id'],
    ['campaign_id=a&campaign_id=b', 'campaign_id'],
    ['ad_group_id=adg_1', 'ad_group_id'],
  ];
  for (const [query, field] of cases) {
    it(`refuses ?${query} with 400 naming ${field}`, async () => {
      const res = await sb.call<ErrorJson>('GET', `/ad_groups?${query}`, { token: s.credential });
      assert.equal(res.status, 400);
      assert.equal(res.body.error.code, 'invalid_request');
      assert.equal(res.body.error.field, field);
      assert.match(res.body.error.message, new RegExp(`\\b${field}\\b`));
    });
  }
});

describe('GET /ad_groups/{ad_group_id}', () => {
  it('returns the ad group as the list does, with serving issues when asked', async () => {
    const g = s.adGroups[2];
    assert.ok(g !== undefined);
    const res = await sb.call<AdGroupJson>('GET', `/ad_groups/${g.id}`, { token: s.credential });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, g);
    const withIssues = await sb.call<AdGroupJson>('GET', `/ad_groups/${g.id}?include=serving_issues`, {
      token: s.credential,
    });
    assert.deepEqual(withIssues.body.serving_issues, []);
  });

  it("answers 404 for another account's ad group and an unknown id, and 401 without a credential", async () => {
    const other = await seededStructure(sb);
    for (const id of [other.adGroups[0]?.id, 'adg_0000000000000000']) {
      const res = await sb.call<ErrorJson>('GET', `/ad_groups/${id}`, { token: s.credential });
      assert.equal(res.status, 404);
      assert.equal(res.body.error.code, 'not_found');
    }
    const anonymous = await sb.call<ErrorJson>('GET', `/ad_groups/${s.adGroups[0]?.id}`);
    assert.equal(anonymous.status, 401);
  });
});
