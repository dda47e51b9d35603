import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createAssetLinks } from './asset-links.ts';

const WORKSPACE = '0b0e4b6a-6a0e-4d8e-9c61-3c1f0f7b8a11';
const ASSET = '5a7c1e2b-9d3f-4b6a-8e1c-2f4d6b8a0c13';
const OTHER_ASSET = '8c0d2e43-2f1a-4b7e-8f57-6a3b9e0c1d24';

function links(now: { t: number }, keyMaterial = 'key material one') {
  return createAssetLinks({
    keyMaterial,
    publicUrl: 'https://ads.example',
    ttlSeconds: 600,
    now: () => now.t,
  });
}

const tokenOf = (url: string) => new URL(url).searchParams.get('token') ?? '';

test('a link works for its asset until it expires, and then is refused as expired', () => {
  const now = { t: Date.UTC(2026, 10, 23, 6, 0, 0) };
  const l = links(now);
  const { url, path, expiresAt } = l.link(WORKSPACE, ASSET);
  assert.ok(url.startsWith(`https://ads.example/assets/${ASSET}?token=`));
  assert.equal(url, `https://ads.example${path}`);
  assert.equal(expiresAt.toISOString(), '2026-11-23T06:10:00.000Z');
  assert.deepEqual(l.check(ASSET, tokenOf(url)), { ok: true, workspaceId: WORKSPACE, expiresAt });
  now.t += 599_000;
  assert.equal(l.check(ASSET, tokenOf(url)).ok, true);
  now.t += 1_000;
  assert.deepEqual(l.check(ASSET, tokenOf(url)), { ok: false, reason: 'expired' });
});

test('a link is refused for another asset, with a changed workspace, expiry or signature, or another key', () => {
  const now = { t: Date.now() };
  const l = links(now);
  const token = tokenOf(l.link(WORKSPACE, ASSET).url);
  const [workspace, expires, sig] = token.split('.') as [string, string, string];
  const invalid = { ok: false, reason: 'invalid' };
  assert.deepEqual(l.check(OTHER_ASSET, token), invalid);
  assert.deepEqual(l.check(ASSET, `${OTHER_ASSET}.${expires}.${sig}`), invalid);
  assert.deepEqual(l.check(ASSET, `${workspace}.${Number(expires) + 3600}.${sig}`), invalid);
  const flipped = `${sig.slice(0, 10)}${sig[10] === 'A' ? 'B' : 'A'}${sig.slice(11)}`;
  assert.deepEqual(l.check(ASSET, `${workspace}.${expires}.${flipped}`), invalid);
  assert.deepEqual(l.check(ASSET, ''), invalid);
  assert.deepEqual(l.check(ASSET, `${token}x`), invalid);
  assert.deepEqual(links(now, 'another key').check(ASSET, token), invalid);
});
