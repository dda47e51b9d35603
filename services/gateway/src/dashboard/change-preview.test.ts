import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ChangeSchema, ChangeStatus } from '@adsmcp/proto/changes/v1/changes_pb';
import { create } from '@bufbuild/protobuf';
import { assetIdsOf, changeDetailHtml, titlesByAsset } from './change-pages.ts';

const ASSET = '5a7c1e2b-9d3f-4b6a-8e1c-2f4d6b8a0c13';
const OTHER = '8c0d2e43-2f1a-4b7e-8f57-6a3b9e0c1d24';

const change = (body: object) =>
  create(ChangeSchema, {
    changeId: '6f1c2a8e-1111-4222-8333-944445555666',
    accountId: 'acc-1',
    state: ChangeStatus.PREPARED,
    summary: 'Create ads',
    operation: { method: 'POST', path: '/ads', bodyJson: JSON.stringify(body) },
    targetBeforeJson: '',
    digest: 'abc123',
    preparedAt: '2026-01-01T00:00:00Z',
    preparedBy: 'credential:x',
  });

test('the asset ids a change uses are found at any depth, once each, and only as UUIDs', () => {
  const body = {
    creative: { asset_id: ASSET.toUpperCase(), title: 'Spring' },
    variants: [{ asset_id: OTHER }, { asset_id: ASSET }, { asset_id: 'not-a-uuid' }, { asset_id: 7 }],
  };
  assert.deepEqual(assetIdsOf(body).sort(), [ASSET, OTHER].sort());
  assert.deepEqual(assetIdsOf({ name: 'no assets' }), []);
  assert.deepEqual(assetIdsOf(undefined), []);
});

test('the review shows the image of each asset the change uses, through its delivery link', () => {
  const path = `/assets/${ASSET}?token=ws.1.sig&x=<"y">`;
  const html = changeDetailHtml(change({ creative: { asset_id: ASSET } }), new Map(), 'csrf', true, {
    conflicts: [],
    assets: [{ assetId: ASSET, path }],
  });
  assert.match(html, /<section id="creative-preview"><h2>Creative preview<\/h2>/);
  assert.ok(html.includes(`<img src="/assets/${ASSET}?token=ws.1.sig&amp;x=&lt;&quot;y&quot;&gt;"`), html);
  assert.ok(html.includes(`alt="Campaign asset ${ASSET}"`));
});

test('a change that uses no asset has no creative preview', () => {
  const html = changeDetailHtml(change({ name: 'x' }), new Map(), 'csrf', true, { conflicts: [] });
  assert.doesNotMatch(html, /creative-preview|<img/);
});

test('each image of a bulk job is shown with the titles of the ads it goes on', () => {
  const ad = (title: string, assetId?: string) => ({
    type: 'create_ad',
    body: { creative: { type: 'chat_card', title, ...(assetId === undefined ? {} : { asset_id: assetId }) } },
  });
  const body = {
    operations: [
      { type: 'create_campaign', body: { name: 'Winter' } },
      ad('Warm <greens>', ASSET),
      ad('Cosy', OTHER.toUpperCase()),
      ad('Also warm', ASSET),
      ad('No picture'),
    ],
  };
  const html = changeDetailHtml(change(body), new Map(), 'csrf', true, {
    conflicts: [],
    assets: [
      { assetId: ASSET, path: `/assets/${ASSET}?token=t` },
      { assetId: OTHER, path: `/assets/${OTHER}?token=t` },
    ],
  });
  const figure = (id: string) =>
    html.slice(html.indexOf(`<figure data-asset="${id}"`)).split('</figure>')[0] ?? '';
  assert.match(figure(ASSET), /Shown on 2 ads titled “Warm &lt;greens&gt;”, “Also warm”/);
  assert.match(figure(OTHER), /Shown on the ad titled “Cosy”/);
  assert.doesNotMatch(html, /No picture”/);
});

test('each image is said to show on the ads whose creatives name it: a batch’s by their titles, an update’s on the ad’s own', () => {
  const batch = {
    operations: [
      { type: 'create_campaign', body: { name: 'Spring' } },
      { type: 'create_ad', body: { creative: { title: 'Two for one', asset_id: ASSET } } },
      { type: 'create_ad', body: { creative: { title: 'Free shipping', asset_id: ASSET.toUpperCase() } } },
      { type: 'create_ad', body: { creative: { title: 'New pots', asset_id: OTHER } } },
      { type: 'create_ad', body: { creative: { title: 'No image' } } },
    ],
  };
  assert.deepEqual(
    [...titlesByAsset(batch)],
    [
      [ASSET, ['Two for one', 'Free shipping']],
      [OTHER, ['New pots']],
    ],
  );
  const before = { id: 'ad_1', creative: { title: 'Live title', file_id: 'file_1' } };
  assert.deepEqual([...titlesByAsset({ creative: { asset_id: ASSET } }, before)], [[ASSET, ['Live title']]]);
  assert.deepEqual(
    [...titlesByAsset({ creative: { asset_id: ASSET, title: 'New title' } }, before)],
    [[ASSET, ['New title']]],
  );
  const html = changeDetailHtml(
    create(ChangeSchema, {
      ...change({ creative: { asset_id: ASSET } }),
      targetBeforeJson: JSON.stringify(before),
    }),
    new Map(),
    'csrf',
    true,
    { conflicts: [], assets: [{ assetId: ASSET, path: `/assets/${ASSET}?token=t` }] },
  );
  assert.ok(html.includes('Shown on the ad titled “Live title”'), html);
});

test('an approved change not yet being applied offers Reject, which withdraws the approval, and no Approve', () => {
  const approved = { ...change({ name: 'x' }), state: ChangeStatus.APPROVED };
  const html = changeDetailHtml(approved, new Map(), 'csrf', true, { conflicts: [] });
  assert.ok(html.includes(`action="/dashboard/changes/${approved.changeId}/reject"`), html);
  assert.match(html, /withdraws the approval; nothing has been sent/);
  assert.ok(!html.includes('id="approve"'), html);
  const applying = changeDetailHtml({ ...approved, state: ChangeStatus.APPLYING }, new Map(), 'csrf', true, {
    conflicts: [],
  });
  assert.ok(!html.includes('/approve"') && !applying.includes('id="reject"'), applying);
});
