import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FailedPreconditionError, InvalidArgumentError } from '@adsmcp/runtime/errors';
import { planChange } from './plan.ts';

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

test('a crop must be square, within the image and on a creative with an image', () => {
  refuses(
    () => update({ creative: { image_crop: { x: 0, y: 0, width: 0.5, height: 0.4 } } }),
    InvalidArgumentError,
    /must be square: width 0.5 and height 0.4 differ/,
  );
  refuses(
    () => update({ creative: { image_crop: { x: 0.5, y: 0, width: 0.6, height: 0.6 } } }),
    InvalidArgumentError,
    /must lie within the image: x \+ width \(1.1\)/,
  );
  const noImage = { ...liveAd, creative: { type: 'chat_card', title: 'T', body: 'B' } };
  refuses(
    () => update({ creative: { image_crop: { x: 0, y: 0, width: 0.5, height: 0.5 } } }, noImage),
    InvalidArgumentError,
    /needs `body.creative.file_id`/,
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
