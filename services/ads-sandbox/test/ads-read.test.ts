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

let sb: Sandbox;
let account: SandboxAccount;
/** The account's ads in creation order, as the list returns them in one page. */
let all: AdJson[];

before(async () => {
  sb = await startSandbox();
  account = await sb.newAccount();
  const res = await list('?limit=500');
  assert.equal(res.status, 200);
  all = res.body.data;
});

after(async () => {
  await sb?.stop();
});

function list(query: string, token = account.credential) {
  return sb.call<AdListJson>('GET', `/ads${query}`, { token });
}

const ids = (ads: AdJson[]) => ads.map((a) => a.id);

/** Walks every page from the first, following paging.after; returns the pages. */
async function walkForward(query: string): Promise<AdListJson[]> {
  const pages: AdListJson[] = [];
  let cursor: string | null = null;
  do {
    const res = await list(`?${query}${cursor === null ? '' : `&after=${cursor}`}`);
    assert.equal(res.status, 200);
    pages.push(res.body);
    cursor = res.body.paging.after;
    assert.ok(pages.length <= 20, 'paging does not end');
  } while (cursor !== null);
  return pages;
}

describe('seeded ads', () => {
  it('seeds 12 ads, 3 in each of 4 ad groups, 2 ad groups in each of 2 campaigns', async () => {
    assert.equal(all.length, 12);
    const groupsOfCampaign = new Map<string, Set<string>>();
    const adsOfGroup = new Map<string, number>();
    for (const ad of all) {
      assert.match(ad.id, /^ad_[0-9a-f]{16}$/);
      assert.match(ad.campaign_id, /^cmp_[0-9a-f]{16}$/);
      assert.match(ad.ad_group_id, /^adg_[0-9a-f]{16}$/);
      assert.equal(ad.account_id, account.accountId);
      assert.equal(ad.revision, 1);
      const groups = groupsOfCampaign.get(ad.campaign_id) ?? new Set();
      groups.add(ad.ad_group_id);
      groupsOfCampaign.set(ad.campaign_id, groups);
      adsOfGroup.set(ad.ad_group_id, (adsOfGroup.get(ad.ad_group_id) ?? 0) + 1);
    }
    assert.equal(groupsOfCampaign.size, 2);
    for (const groups of groupsOfCampaign.values()) assert.equal(groups.size, 2);
    assert.deepEqual([...adsOfGroup.values()], [3, 3, 3, 3]);

    const { rows } = await sb.pool.query<{ campaigns: number; ad_groups: number }>(
      `SELECT (SELECT count(*) FROM campaigns WHERE account_id = $1) AS campaigns,
              (SELECT count(*) FROM ad_groups WHERE account_id = $1) AS ad_groups`,
      [account.accountId],
    );
    assert.deepEqual(rows[0], { campaigns: 2, ad_groups: 4 });
  });

  it('names seeded ads "<campaign> — <group> — Ad <n>" in creation order, mostly active, some paused', () => {
    const expected: string[] = [];
    for (const campaign of ['Spring Sale', 'Summer Launch'])
      for (const group of ['Group A', 'Group B'])
        for (const n of [1, 2, 3]) expected.push(`${campaign} — ${group} — Ad ${n}`);
    assert.deepEqual(
      all.map((a) => a.name),
      expected,
    );
    const paused = all.filter((a) => a.status === 'paused').length;
    const active = all.filter((a) => a.status === 'active').length;
    assert.ok(paused >= 1 && active > paused, `active ${active}, paused ${paused}`);
    assert.equal(active + paused, 12);
  });

  it('gives each account its own seeded ads', async () => {
    const other = await sb.newAccount();
    const res = await list('?limit=500', other.credential);
    assert.equal(res.body.data.length, 12);
    assert.ok(res.body.data.every((a) => a.account_id === other.accountId));
    const mine = new Set(ids(all));
    assert.ok(res.body.data.every((a) => !mine.has(a.id)));
  });

  it('returns the ad object with its creative, landing page configuration and timestamps', () => {
    const ad = all[0];
    assert.ok(ad !== undefined);
    assert.deepEqual(Object.keys(ad), [
      'id',
      'account_id',
      'campaign_id',
      'ad_group_id',
      'name',
      'status',
      'creative',
      'landing_page_configuration',
      'revision',
      'created_at',
      'updated_at',
    ]);
    assert.ok(['chat_card', 'product_ad_template'].includes(ad.creative.type));
    assert.equal(typeof ad.creative.title, 'string');
    assert.equal(typeof ad.creative.body, 'string');
    assert.ok(!Number.isNaN(Date.parse(ad.created_at)));
    assert.ok(all.some((a) => a.landing_page_configuration === null));
    assert.ok(all.some((a) => typeof a.landing_page_configuration?.query_string_template === 'string'));
  });
});

describe('GET /ads paging', () => {
  for (const order of ['asc', 'desc'] as const) {
    it(`pages forward with limit 5 in ${order} order over every ad once, in order`, async () => {
      const pages = await walkForward(`limit=5&order=${order}`);
      assert.deepEqual(
        pages.map((p) => p.data.length),
        [5, 5, 2],
      );
      assert.deepEqual(
        pages.map((p) => p.paging.has_more),
        [true, true, false],
      );
      assert.equal(pages[0]?.paging.before, null);
      assert.ok(pages.slice(1).every((p) => p.paging.before !== null));
      const expected = order === 'asc' ? ids(all) : ids(all).reverse();
      assert.deepEqual(ids(pages.flatMap((p) => p.data)), expected);
    });

    it(`pages backward with before from the last page to the first in ${order} order`, async () => {
      const forward = await walkForward(`limit=5&order=${order}`);
      const backward: AdListJson[] = [forward[forward.length - 1] as AdListJson];
      let cursor = backward[0]?.paging.before ?? null;
      while (cursor !== null) {
        const res = await list(`?limit=5&order=${order}&before=${cursor}`);
        assert.equal(res.status, 200);
        backward.push(res.body);
        cursor = res.body.paging.before;
        assert.ok(backward.length <= 20, 'paging does not end');
      }
      assert.deepEqual(
        backward.map((p) => ids(p.data)),
        forward.map((p) => ids(p.data)).reverse(),
      );
      // A page reached backwards still points forward to the page after it.
      assert.deepEqual(
        backward.map((p) => p.paging.after !== null),
        [false, true, true],
      );
      const next = await list(`?limit=5&order=${order}&after=${backward[1]?.paging.after}`);
      assert.deepEqual(ids(next.body.data), ids(forward[2]?.data ?? []));
    });
  }

  it('defaults to 25 ads per page in ascending order', async () => {
    const res = await list('');
    assert.deepEqual(ids(res.body.data), ids(all));
    assert.deepEqual(res.body.paging, { after: null, before: null, has_more: false });
  });

  it('returns exactly limit ads with has_more when more remain', async () => {
    const res = await list('?limit=12');
    assert.equal(res.body.data.length, 12);
    assert.equal(res.body.paging.has_more, false);
    const one = await list('?limit=1&order=desc');
    assert.deepEqual(ids(one.body.data), [all[11]?.id]);
    assert.equal(one.body.paging.has_more, true);
  });
});

describe('GET /ads filters', () => {
  it('filters by ad_group_id', async () => {
    const group = all[3]?.ad_group_id;
    const res = await list(`?ad_group_id=${group}`);
    assert.deepEqual(ids(res.body.data), ids(all.filter((a) => a.ad_group_id === group)));
    assert.equal(res.body.data.length, 3);
    const none = await list('?ad_group_id=adg_0000000000000000');
    assert.deepEqual(none.body.data, []);
  });

  it('filters by a case-insensitive substring of the name', async () => {
    const res = await list(`?name=${encodeURIComponent('group b')}`);
    assert.deepEqual(
      res.body.data.map((a) => a.name),
      all.map((a) => a.name).filter((n) => n.includes('Group B')),
    );
    assert.equal(res.body.data.length, 6);
    const exact = await list(`?name=${encodeURIComponent('SUMMER LAUNCH — GROUP A — AD 2')}`);
    assert.deepEqual(
      exact.body.data.map((a) => a.name),
      ['Summer Launch — Group A — Ad 2'],
    );
  });

  it('pages through a filtered list without the ads the filter excludes', async () => {
    const pages = await walkForward(`name=${encodeURIComponent('spring')}&limit=4&order=desc`);
    assert.deepEqual(
      pages.map((p) => p.data.length),
      [4, 2],
    );
    assert.deepEqual(
      ids(pages.flatMap((p) => p.data)),
      ids(all.filter((a) => a.name.startsWith('Spring Sale'))).reverse(),
    );
  });

  it('combines the ad_group_id and name filters', async () => {
    const group = all[0]?.ad_group_id;
    const res = await list(`?ad_group_id=${group}&name=Ad%203`);
    assert.deepEqual(
      res.body.data.map((a) => a.name),
      ['Spring Sale — Group A — Ad 3'],
    );
  });
});

describe('serving issues', () => {
  it('reports serving issues only with include=serving_issues', async () => {
    const plain = await list('?limit=500');
    assert.ok(plain.body.data.every((a) => !('serving_issues' in a)));

    const res = await list('?limit=500&include=serving_issues');
    assert.equal(res.status, 200);
    for (const ad of res.body.data) {
      const issues = ad.serving_issues ?? [];
      if (ad.status === 'paused') {
        assert.deepEqual(issues, [{ code: 'paused', message: 'The ad is paused.' }], ad.name);
      }
    }
    const unreachable = res.body.data.filter((a) =>
      a.serving_issues?.some((i) => i.code === 'landing_page_unreachable'),
    );
    assert.equal(unreachable.length, 1);
    assert.equal(unreachable[0]?.status, 'active');
    assert.match(unreachable[0]?.serving_issues?.[0]?.message ?? '', /landing page .* could not be reached/);
    const clean = res.body.data.filter((a) => a.serving_issues?.length === 0);
    assert.equal(clean.length, res.body.data.filter((a) => a.status === 'active').length - 1);
  });

  it('accepts include repeated, and on GET /ads/{ad_id}', async () => {
    const paused = all.find((a) => a.status === 'paused');
    assert.ok(paused !== undefined);
    const res = await sb.call<AdJson>(
      'GET',
      `/ads/${paused.id}?include=serving_issues&include=serving_issues`,
      {
        token: account.credential,
      },
    );
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.serving_issues, [{ code: 'paused', message: 'The ad is paused.' }]);
    const plain = await sb.call<AdJson>('GET', `/ads/${paused.id}`, { token: account.credential });
    assert.equal('serving_issues' in plain.body, false);
  });
});

describe('GET /ads validation', () => {
  const validCursor = Buffer.from('ads:1').toString('base64url');
  const cases: [string, string][] = [
    ['limit=0', 'limit'],
    ['limit=501', 'limit'],
    ['limit=abc', 'limit'],
    ['limit=1.5', 'limit'],
    ['limit=-1', 'limit'],
    ['limit=5&limit=6', 'limit'],
    ['order=up', 'order'],
    ['order=ASC', 'order'],
    ['after=not-a-cursor', 'after'],
    ['after=', 'after'],
    [`after=${Buffer.from('ads:abc').toString('base64url')}`, 'after'],
    ['before=%2F%2F', 'before'],
    [`after=${validCursor}&before=${validCursor}`, 'before'],
    ['include=insights', 'include'],
    ['include=serving_issues&include=bogus', 'include'],
    ['name=ab', 'name'],
    ['name=%20%20%20', 'name'],
    ['ad_group_id=', 'ad_group_id'],
    ['campaign_id=cmp_1', 'campaign_id'],
  ];
  for (const [query, field] of cases) {
    it(`refuses ?${query} with 400 naming ${field}`, async () => {
      const res = await sb.call<ErrorJson>('GET', `/ads?${query}`, { token: account.credential });
      assert.equal(res.status, 400);
      assert.equal(res.body.error.code, 'invalid_request');
      assert.equal(res.body.error.field, field);
      assert.match(res.body.error.message, new RegExp(`\\b${field}\\b`));
    });
  }

  it('refuses an unknown query parameter on GET /ads/{ad_id}', async () => {
    const res = await sb.call<ErrorJson>('GET', `/ads/${all[0]?.id}?limit=1`, { token: account.credential });
    assert.equal(res.status, 400);
    assert.equal(res.body.error.field, 'limit');
  });
});

describe('GET /ads/{ad_id}', () => {
  it('returns the ad as the list does', async () => {
    const ad = all[7];
    assert.ok(ad !== undefined);
    const res = await sb.call<AdJson>('GET', `/ads/${ad.id}`, { token: account.credential });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, ad);
  });

  it("answers 404 for another account's ad and for an unknown id", async () => {
    const other = await sb.newAccount();
    const theirs = (await list('?limit=1', other.credential)).body.data[0];
    assert.ok(theirs !== undefined);
    // An id as long as the tools accept (255 characters) is looked up, not refused as too long.
    for (const id of [theirs.id, 'ad_0000000000000000', `ad_${'0'.repeat(252)}`]) {
      const res = await sb.call<ErrorJson>('GET', `/ads/${id}`, { token: account.credential });
      assert.equal(res.status, 404);
      assert.equal(res.body.error.code, 'not_found');
    }
    const own = await sb.call<AdJson>('GET', `/ads/${theirs.id}`, { token: other.credential });
    assert.equal(own.status, 200);
  });

  it('refuses the ad endpoints without a valid credential with 401 unauthorized', async () => {
    const id = all[0]?.id;
    for (const [method, path, token] of [
      ['GET', '/ads', undefined],
      ['GET', `/ads/${id}`, 'sbx_wrong'],
      ['POST', `/ads/${id}`, undefined],
      ['POST', `/ads/${id}/archive`, 'sbx_wrong'],
    ] as const) {
      const res = await sb.call<ErrorJson>(method, path, {
        ...(token === undefined ? {} : { token }),
        ...(method === 'POST' ? { body: {} } : {}),
      });
      assert.equal(res.status, 401, `${method} ${path}`);
      assert.equal(res.body.error.code, 'unauthorized');
    }
    const still = await sb.call<AdJson>('GET', `/ads/${id}`, { token: account.credential });
    assert.equal(still.body.status, all[0]?.status);
  });
});
