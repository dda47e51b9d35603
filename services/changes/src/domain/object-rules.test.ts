import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import { checkTargetPath, planObject, referencesOf, reviewedResult, rulesFor } from './plan.ts';

test('each object kind declares the references its body makes, for the effects that make them', () => {
  const kinds = (objectType: string, effect: string) =>
    referencesOf(rulesFor(objectType, effect)).map((r) => ('field' in r ? `${r.kind} ${r.field}` : r.kind));
  assert.deepEqual(kinds('ad', 'update'), ['creative-images']);
  assert.deepEqual(kinds('bulk_mutation_job', 'create'), ['creative-images']);
  assert.deepEqual(kinds('custom_audience', 'merge'), ['audiences custom_audience_ids']);
  // A replace names a member file, an archive nothing: no audience is read for them.
  assert.deepEqual(kinds('custom_audience', 'replace'), []);
  assert.deepEqual(kinds('custom_audience', 'archive'), []);
  assert.deepEqual(kinds('conversion_event_setting', 'create'), ['pixels source_ids']);
  assert.deepEqual(kinds('ad_group', 'update'), []);
  assert.deepEqual(kinds('product_feed', 'archive'), []);
});

test('one plan gives both the summary a person reads and the result they review', () => {
  const live = { id: 'ad_1', name: 'Old', status: 'active', creative: { title: 'A', body: 'B' } };
  const body = { creative: { title: 'New title' } };
  const plan = planObject(rulesFor('ad', 'update'), { body, live, accountName: 'Shop' });
  assert.match(plan.summary, /^Update ad "Old" \(ad_1\) on Shop: creative\.title "A" → "New title"/);
  assert.deepEqual(plan.reviewed, { creative: { title: 'New title', body: 'B' } });
  assert.deepEqual(plan.reviewed, reviewedResult('ad', 'update', live, body));
});

test('a target path is required where the effect is about an existing object, and refused for a create', () => {
  assert.throws(
    () => checkTargetPath(rulesFor('ad_group', 'create'), '/ad_groups/ag_1'),
    (e: unknown) =>
      e instanceof InvalidArgumentError &&
      e.message === 'target_path must be empty: a create makes a new ad group',
  );
  assert.throws(
    () => checkTargetPath(rulesFor('ad', 'archive'), ''),
    (e: unknown) =>
      e instanceof InvalidArgumentError && e.message === 'target_path is required to archive a ad',
  );
  checkTargetPath(rulesFor('ad', 'archive'), '/ads/ad_1');
  checkTargetPath(rulesFor('custom_audience', 'merge'), '');
});
