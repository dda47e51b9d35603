import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FailedPreconditionError, InvalidArgumentError } from '@adsmcp/runtime/errors';
import { appliedDifferences, planChange, reviewedResult } from './plan.ts';

const liveAd = {
  id: 'ad_1',
  name: 'Spring — Ad 1',
  status: 'active',
  revision: 4,
  creative: {
    type: 'chat_card',
    title: 'Offer 1',
    body: 'Chat with us',
    target_url: 'https://shop.example.com/a',
    file_id: 'file_1',
    image_crop: { x: 0.1, y: 0, width: 0.8, height: 0.8 },
  },
  landing_page_configuration: null,
};

const update = (body: Record<string, unknown>, live: Record<string, unknown> = liveAd) =>
  planChange({ objectType: 'ad', effect: 'update', body, live, accountName: 'Shop' });

function refuses(fn: () => unknown, kind: typeof InvalidArgumentError, message: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof kind, String(err));
    assert.match((err as Error).message, message);
    return true;
  });
}

test('an update is summarised by what it changes, against the live ad', () => {
  const { summary } = update({ name: 'Spring — Ad 1', status: 'paused', creative: { title: 'Offer 2' } });
  assert.equal(
    summary,
    'Update ad "Spring — Ad 1" (ad_1) on Shop: status "active" → "paused"; creative.title "Offer 1" → "Offer 2"',
  );
});

test('an update giving the ad a campaign asset says which image it replaces', () => {
  const asset = '0b0e4b6a-6a0e-4d8e-9c61-3c1f0f7b8a11';
  assert.equal(
    update({ creative: { title: 'Offer 2', asset_id: asset } }).summary,
    `Update ad "Spring — Ad 1" (ad_1) on Shop: creative.title "Offer 1" → "Offer 2"; creative image file "file_1" → campaign asset "${asset}", uploaded when the change is applied`,
  );
  const { file_id: _, image_crop: __, ...noImage } = liveAd.creative;
  assert.match(
    update({ creative: { asset_id: asset } }, { ...liveAd, creative: noImage }).summary,
    /: creative image \(none\) → campaign asset "0b0e4b6a-[^"]+", uploaded when the change is applied$/,
  );
});

test('a landing page whose host is not plain ASCII is summarised by its ASCII host, with the Unicode form and the warning beside it', () => {
  const { summary } = update({ creative: { target_url: 'https://shop.ex\u0430mple.com/spring' } });
  assert.equal(
    summary,
    'Update ad "Spring — Ad 1" (ad_1) on Shop: creative.target_url "https://shop.example.com/a" → "https://shop.xn--exmple-4nf.com/spring" (its host shop.xn--exmple-4nf.com is shown as "shop.ex\u0430mple.com": mixed Latin and Cyrillic letters; looks like shop.example.com)',
  );
  // Never the Unicode form alone: it appears only as what the host is shown as.
  assert.equal(summary.split('ex\u0430mple').length, 2);
  assert.match(
    update({ creative: { target_url: 'https://bücher.example/' } }).summary,
    /→ "https:\/\/xn--bcher-kva\.example\/" \(its host xn--bcher-kva\.example is shown as "bücher\.example"\)$/,
  );
});

test('an update that would change nothing is refused, saying what each field already is', () => {
  refuses(
    () => update({ name: 'Spring — Ad 1', status: 'active' }),
    FailedPreconditionError,
    /^nothing would change: name is already "Spring — Ad 1"; status is already "active"$/,
  );
  refuses(() => update({}), InvalidArgumentError, /`body` must change at least one field/);
});

test('switching to a product template while the ad keeps its crop is refused at prepare', () => {
  refuses(
    () => update({ creative: { type: 'product_ad_template' } }),
    InvalidArgumentError,
    /image_crop` is only for chat_card creatives, and the ad would have a product_ad_template creative with an image_crop \(the ad's current image_crop\)/,
  );
});

test('a crop must be within the image and on a creative with an image', () => {
  refuses(
    () => update({ creative: { image_crop: { x: 0.5, y: 0, width: 0.6, height: 0.6 } } }),
    InvalidArgumentError,
    /must lie within the image: x \+ width \(1.1\)/,
  );
  const noImage = { ...liveAd, creative: { type: 'chat_card', title: 'T', body: 'B' } };
  refuses(
    () => update({ creative: { image_crop: { x: 0, y: 0, width: 0.5, height: 0.5 } } }, noImage),
    InvalidArgumentError,
    /needs an image to crop: `body.creative.file_id` or `body.creative.asset_id`/,
  );
  // Within by a rounding error is within: 0.2 + 0.8 is 1.0000000000000002 in binary floating point.
  assert.ok(update({ creative: { image_crop: { x: 0.2, y: 0.2, width: 0.8, height: 0.8 } } }).summary);
});

test('archiving an archived ad would change nothing, and an archived ad cannot be updated', () => {
  const archived = { ...liveAd, status: 'archived' };
  refuses(
    () => planChange({ objectType: 'ad', effect: 'archive', body: {}, live: archived, accountName: 'Shop' }),
    FailedPreconditionError,
    /^nothing would change: ad "Spring — Ad 1" \(ad_1\) is already archived$/,
  );
  refuses(() => update({ name: 'New name' }, archived), FailedPreconditionError, /is archived/);
  const { summary } = planChange({
    objectType: 'ad',
    effect: 'archive',
    body: {},
    live: liveAd,
    accountName: 'Shop',
  });
  assert.equal(summary, 'Archive ad "Spring — Ad 1" (ad_1) on Shop (status "active" → "archived")');
});

test('an update whose merged field is an empty object is refused naming the field, not with an empty reason', () => {
  refuses(
    () => update({ creative: {} }),
    InvalidArgumentError,
    /^`body.creative` is empty: name at least one of its fields to change, or leave it out$/,
  );
  refuses(
    () => update({ name: 'Another name', creative: {} }),
    InvalidArgumentError,
    /^`body.creative` is empty/,
  );
  const liveGroup = {
    id: 'adg_1',
    name: 'Plants',
    status: 'active',
    campaign_id: 'cmp_1',
    bidding_config: { billing_event_type: 'click', strategy: 'fixed_bid', max_bid_micros: 300000 },
  };
  for (const field of ['bidding_config', 'product_set']) {
    refuses(
      () =>
        planChange({
          objectType: 'ad_group',
          effect: 'update',
          body: { [field]: {} },
          live: liveGroup,
          accountName: 'Shop',
        }),
      InvalidArgumentError,
      new RegExp(`^\`body.${field}\` is empty: name at least one of its fields to change`),
    );
  }
});

test("what was reviewed: an update's fields (a merged one as merged), a status, a create's fields; nothing for a merge", () => {
  assert.deepEqual(reviewedResult('ad', 'update', liveAd, { name: 'New', creative: { title: 'T' } }), {
    name: 'New',
    creative: { ...liveAd.creative, title: 'T' },
  });
  assert.deepEqual(reviewedResult('ad', 'archive', liveAd, {}), { status: 'archived' });
  assert.deepEqual(reviewedResult('ad_group', 'pause', { status: 'active' }, {}), { status: 'paused' });
  const created = { name: 'Web pixel', client_type: 'web' };
  assert.deepEqual(reviewedResult('conversion_source', 'create', undefined, created), created);
  assert.deepEqual(
    reviewedResult('custom_audience', 'merge', undefined, { name: 'All', custom_audience_ids: ['a'] }),
    {},
  );
  assert.deepEqual(reviewedResult('bulk_mutation_job', 'create', undefined, { input: [] }), {});
});

test('the applied answer is held against what was reviewed, field by field', () => {
  const reviewed = reviewedResult(
    'ad_group',
    'update',
    { id: 'g', product_set: { product_feed_id: 'f1', filters: [1] } },
    {
      name: 'Group',
      product_set: { product_feed_id: 'f2' },
    },
  );
  // The same result, keys in another order, and fields the platform adds: no difference.
  const same = {
    revision: 2,
    product_set: { filters: [1], product_feed_id: 'f2', extra: true },
    name: 'Group',
  };
  assert.deepEqual(appliedDifferences(reviewed, JSON.stringify(same)), []);
  // A merged field's part dropped, and a field not taken: each named, reviewed and applied.
  const other = { name: 'Old', product_set: { product_feed_id: 'f2', filters: [] } };
  assert.deepEqual(appliedDifferences(reviewed, JSON.stringify(other)), [
    'name: reviewed "Group", applied "Old"',
    'product_set.filters: reviewed [1], applied []',
  ]);
  // A field the answer does not show is not compared; an answer that is no object compares nothing.
  assert.deepEqual(appliedDifferences(reviewed, JSON.stringify({ id: 'g' })), []);
  assert.deepEqual(appliedDifferences(reviewed, 'not json'), []);
  assert.deepEqual(appliedDifferences({ status: 'paused' }, JSON.stringify({ status: 'active' })), [
    'status: reviewed "paused", applied "active"',
  ]);
  assert.deepEqual(appliedDifferences({ description: null }, JSON.stringify({ description: 'kept' })), [
    'description: reviewed null, applied "kept"',
  ]);
});
