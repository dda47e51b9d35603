import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { GeoTarget } from '../src/geo/geo-lookup.ts';
import type { ErrorJson, Sandbox, SandboxAccount } from './sandbox.ts';
import { startSandbox } from './sandbox.ts';

let sb: Sandbox;
let account: SandboxAccount;

before(async () => {
  sb = await startSandbox();
  account = await sb.newAccount();
});

after(async () => {
  await sb?.stop();
});

function search(query: string) {
  return sb.call<{ data: GeoTarget[] }>('GET', `/geo_lookup/search?${query}`, { token: account.credential });
}

describe('GET /geo_lookup/search', () => {
  it('finds a DMA by its code first', async () => {
    const res = await search('q=501');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.data[0], { code: '501', name: 'New York, NY', type: 'dma', country: 'US' });
  });

  it('finds DMAs and ISO 3166-2 regions by name, case-insensitively', async () => {
    const res = await search('q=new%20york&limit=100');
    const found = res.body.data.map((t) => `${t.type}:${t.code}`);
    assert.ok(found.includes('dma:501'), found.join());
    assert.ok(found.includes('region:US-NY'), found.join());
    const region = res.body.data.find((t) => t.code === 'US-NY');
    assert.deepEqual(region, { code: 'US-NY', name: 'New York', type: 'region', country: 'US' });
  });

  it('finds regions of every country by code, and ignores accents', async () => {
    const byCode = await search('q=de-by');
    assert.deepEqual(byCode.body.data[0], { code: 'DE-BY', name: 'Bayern', type: 'region', country: 'DE' });
    const accentless = await search('q=zurich');
    assert.ok(
      accentless.body.data.some((t) => t.code === 'CH-ZH'),
      JSON.stringify(accentless.body.data),
    );
  });

  it('returns at most limit results, 10 by default, and none for no match', async () => {
    assert.equal((await search('q=a')).body.data.length, 10);
    assert.equal((await search('q=a&limit=100')).body.data.length, 100);
    assert.equal((await search('q=a&limit=3')).body.data.length, 3);
    assert.deepEqual((await search('q=qqqqzzzz')).body.data, []);
  });

  for (const [query, field] of [
    ['', 'q'],
    ['q=', 'q'],
    ['q=%20%20', 'q'],
    [`q=${'x'.repeat(201)}`, 'q'],
    ['q=a&limit=0', 'limit'],
    ['q=a&limit=101', 'limit'],
    ['q=a&q=b', 'q'],
    ['q=a&country=US', 'country'],
  ] as const) {
    it(`refuses ?${query.slice(0, 30)} with 400 naming ${field}`, async () => {
      const res = await sb.call<ErrorJson>('GET', `/geo_lookup/search?${query}`, {
        token: account.credential,
      });
      assert.equal(res.status, 400);
      assert.equal(res.body.error.field, field);
    });
  }

  it('needs the account credential', async () => {
    const res = await sb.call<ErrorJson>('GET', '/geo_lookup/search?q=501');
    assert.equal(res.status, 401);
  });
});
