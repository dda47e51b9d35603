import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { CampaignJson } from '../src/campaigns.ts';
import type { FeedJson } from '../src/feeds.ts';
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

describe('GET /campaigns', () => {
  it('returns the seeded campaigns with budgets in micros of the account currency and schedules', async () => {
    const eur = await sb.newAccount({ currency: 'EUR' });
    const res = await sb.call<ListJson<CampaignJson>>('GET', '/campaigns', { token: eur.credential });
    assert.equal(res.status, 200);
    const [spring, summer] = res.body.data;
    assert.ok(spring !== undefined && summer !== undefined);
    assert.deepEqual(Object.keys(spring), [
      'id',
      'account_id',
      'name',
      'status',
      'objective',
      'budget_micros',
      'budget_type',
      'currency',
      'start_time',
      'end_time',
      'revision',
      'created_at',
      'updated_at',
    ]);
    assert.match(spring.id, /^cmp_[0-9a-f]{16}$/);
    assert.deepEqual(
      [
        spring.name,
        spring.status,
        spring.objective,
        spring.budget_micros,
        spring.budget_type,
        spring.currency,
      ],
      ['Spring Sale', 'active', 'clicks', 50_000_000, 'daily', 'EUR'],
    );
    assert.equal(spring.end_time, null);
    assert.deepEqual(
      [summer.name, summer.objective, summer.budget_type, summer.revision],
      ['Summer Launch', 'conversions', 'lifetime', 1],
    );
    assert.ok(Date.parse(summer.end_time ?? '') > Date.parse(summer.start_time ?? ''));
    assert.deepEqual(res.body.paging, { after: null, before: null, has_more: false });
  });

  it('pages with limit, after and before, in both orders', async () => {
    const asc = await walk<CampaignJson>(sb, s.credential, '/campaigns', 'limit=1');
    assert.deepEqual(
      asc.map((p) => ids(p.data)),
      s.campaigns.map((c) => [c.id]),
    );
    const desc = await walk<CampaignJson>(sb, s.credential, '/campaigns', 'limit=1&order=desc');
    assert.deepEqual(ids(desc.flatMap((p) => p.data)), ids(s.campaigns).reverse());
    const back = await sb.call<ListJson<CampaignJson>>(
      'GET',
      `/campaigns?limit=1&before=${asc[1]?.paging.before}`,
      { token: s.credential },
    );
    assert.deepEqual(ids(back.body.data), [s.campaigns[0]?.id]);
  });

  it('filters by status', async () => {
    const active = await sb.call<ListJson<CampaignJson>>('GET', '/campaigns?status=active', {
      token: s.credential,
    });
    assert.equal(active.body.data.length, 2);
    const paused = await sb.call<ListJson<CampaignJson>>('GET', '/campaigns?status=paused', {
      token: s.credential,
    });
    assert.deepEqual(paused.body.data, []);
  });

  for (const [query, field] of [
    ['status=running', 'status'],
    ['limit=501', 'limit'],
    ['order=up', 'order'],
    [`after=${Buffer.from('ad_groups:1').toString('base64url')}`, 'after'],
    ['name=Spring', 'name'],
  ] as const) {
    it(`refuses ?${query} with 400 naming ${field}`, async () => {
      const res = await sb.call<ErrorJson>('GET', `/campaigns?${query}`, { token: s.credential });
      assert.equal(res.status, 400);
      assert.equal(res.body.error.field, field);
    });
  }

  it("gets one campaign, and answers 404 for another account's", async () => {
    const c = s.campaigns[1];
    assert.ok(c !== undefined);
    const res = await sb.call<CampaignJson>('GET', `/campaigns/${c.id}`, { token: s.credential });
    assert.deepEqual(res.body, c);
    const other = await sb.newAccount();
    const theirs = await sb.call<ErrorJson>('GET', `/campaigns/${c.id}`, { token: other.credential });
    assert.equal(theirs.status, 404);
    assert.equal(theirs.body.error.code, 'not_found');
  });
});

describe('product feeds', () => {
  it('seeds two active feeds per account and pages through them', async () => {
    assert.deepEqual(
      s.feeds.map((f) => [f.name, f.status, f.revision]),
      [
        ['Main catalogue', 'active', 1],
        ['Clearance items', 'active', 1],
      ],
    );
    assert.match(s.feeds[0]?.id ?? '', /^pf_[0-9a-f]{16}$/);
    const pages = await walk<FeedJson>(sb, s.credential, '/feeds', 'limit=1&order=desc');
    assert.deepEqual(ids(pages.flatMap((p) => p.data)), ids(s.feeds).reverse());
    const one = await sb.call<FeedJson>('GET', `/feeds/${s.feeds[0]?.id}`, { token: s.credential });
    assert.deepEqual(one.body, s.feeds[0]);
  });

  it('archives a feed once, bumping its revision; again changes nothing; the key replays', async () => {
    const mine = await seededStructure(sb);
    const feed = mine.feeds[1];
    assert.ok(feed !== undefined);
    const archive = (key: string) =>
      sb.call<FeedJson>('POST', `/feeds/${feed.id}/archive`, {
        token: mine.credential,
        headers: { 'idempotency-key': key },
      });
    const first = await archive('archive-feed');
    assert.deepEqual([first.status, first.body.status, first.body.revision], [200, 'archived', 2]);
    const replay = await archive('archive-feed');
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(replay.body, first.body);
    const again = await archive('archive-feed-2');
    assert.deepEqual(again.body, first.body);
    assert.equal((await sb.ledger(mine.accountId, `/feeds/${feed.id}/archive`)).length, 2);
    const archived = await sb.call<ListJson<FeedJson>>('GET', '/feeds?status=archived', {
      token: mine.credential,
    });
    assert.deepEqual(ids(archived.body.data), [feed.id]);
  });

  it("answers 404 for another account's feed, and refuses an archive body with properties", async () => {
    const other = await sb.newAccount();
    const res = await sb.call<ErrorJson>('POST', `/feeds/${s.feeds[0]?.id}/archive`, {
      token: other.credential,
    });
    assert.equal(res.status, 404);
    const withBody = await sb.call<ErrorJson>('POST', `/feeds/${s.feeds[0]?.id}/archive`, {
      token: s.credential,
      body: { force: true },
    });
    assert.equal(withBody.status, 400);
    assert.equal(withBody.body.error.field, 'force');
    assert.equal(
      (await sb.call<FeedJson>('GET', `/feeds/${s.feeds[0]?.id}`, { token: s.credential })).body.status,
      'active',
    );
  });
});
