import assert from 'node:assert/strict';
import { test } from 'node:test';
import { changeRows, describeDiff, diffRows } from './change-diff.ts';

const ad = {
  name: 'Old',
  status: 'active',
  creative: { title: 'T', body: 'B' },
  landing_page_configuration: null,
};

test('each field the body sets is paired with its earlier value, nested objects field by field', () => {
  assert.deepEqual(
    diffRows(ad, {
      name: 'New',
      creative: { title: 'T2' },
      landing_page_configuration: { query_string_template: 'q' },
    }),
    [
      { field: 'name', before: 'Old', after: 'New' },
      { field: 'creative.title', before: 'T', after: 'T2' },
      { field: 'landing_page_configuration', before: null, after: { query_string_template: 'q' } },
    ],
  );
});

test('the summary says the same, with unset earlier values named', () => {
  assert.deepEqual(describeDiff(ad, { status: 'paused', creative: { price: '9' } }), [
    'status "active" → "paused"',
    'creative.price (unset) → "9"',
  ]);
});

test('an archive, pause or activate of an object is reviewed as the status it sets', () => {
  const group = { id: 'adg_1', status: 'active' };
  assert.deepEqual(changeRows('/ad_groups/adg_1/pause', group, {}), [
    { field: 'status', before: 'active', after: 'paused' },
  ]);
  assert.deepEqual(changeRows('/ad_groups/adg_1/activate', { ...group, status: 'paused' }, {}), [
    { field: 'status', before: 'paused', after: 'active' },
  ]);
  assert.deepEqual(changeRows('/feeds/feed_1/archive', { status: 'active' }, {}), [
    { field: 'status', before: 'active', after: 'archived' },
  ]);
  // An update of an object whose id happens to be an action's name is an update.
  assert.deepEqual(changeRows('/ads/pause', ad, { name: 'New' }), [
    { field: 'name', before: 'Old', after: 'New' },
  ]);
});
