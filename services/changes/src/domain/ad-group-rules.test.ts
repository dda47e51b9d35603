import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FailedPreconditionError, InvalidArgumentError } from '@adsmcp/runtime/errors';
import { planChange } from './plan.ts';

const liveGroup = {
  id: 'adg_1',
  campaign_id: 'cmp_1',
  name: 'Spring — Group A',
  description: null,
  status: 'active',
  context_hints: [],
  bidding_config: {
    billing_event_type: 'click',
    strategy: 'fixed_bid',
    max_bid_micros: 1_500_000,
    custom_audience_bid_multipliers: [],
  },
  product_set: { product_feed_id: 'feed_1', filters: [] },
  landing_page_configuration: null,
  revision: 3,
};

const plan = (
  effect: string,
  body: Record<string, unknown>,
  live: Record<string, unknown> | undefined = liveGroup,
) => planChange({ objectType: 'ad_group', effect, body, live, accountName: 'Shop' });
const update = (body: Record<string, unknown>, live: Record<string, unknown> = liveGroup) =>
  plan('update', body, live);

function refuses(fn: () => unknown, kind: typeof InvalidArgumentError, message: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof kind, String(err));
    assert.match((err as Error).message, message);
    return true;
  });
}

const newGroup = {
  campaign_id: 'cmp_1',
  name: 'Spring — Group C',
  status: 'paused',
  bidding_config: {
    billing_event_type: 'impression',
    strategy: 'fixed_bid',
    max_bid_micros: 30_400_000_000_000,
  },
};

test('a create is summarised field by field, money as the exact micros', () => {
  const { summary } = plan('create', newGroup, undefined);
  assert.match(
    summary,
    /^Create ad group "Spring — Group C" on Shop: campaign_id "cmp_1"; status "paused"; /,
  );
  assert.match(summary, /"max_bid_micros":30400000000000/);
});

test('a create with status archived or a fixed bid without its amount is refused', () => {
  refuses(
    () => plan('create', { ...newGroup, status: 'archived' }, undefined),
    InvalidArgumentError,
    /`body.status` of a new ad group must be active or paused \(got "archived"\)/,
  );
  refuses(
    () =>
      plan(
        'create',
        { ...newGroup, bidding_config: { billing_event_type: 'click', strategy: 'fixed_bid' } },
        undefined,
      ),
    InvalidArgumentError,
    /`body.bidding_config.max_bid_micros` is required with the strategy "fixed_bid": it is the bid/,
  );
});

test('an update merges bidding fields into the live ones and says what changes', () => {
  const { summary } = update({ bidding_config: { max_bid_micros: 2_000_000 }, status: 'paused' });
  assert.equal(
    summary,
    'Update ad group "Spring — Group A" (adg_1) on Shop: bidding_config.max_bid_micros 1500000 → 2000000; status "active" → "paused"',
  );
});

test('removing the bid of a fixed-bid ad group is refused, naming the kept strategy', () => {
  refuses(
    () => update({ bidding_config: { max_bid_micros: null } }),
    InvalidArgumentError,
    /max_bid_micros` is required with the strategy "fixed_bid" \(the ad group's current bidding_config.strategy\)/,
  );
  const noBid = {
    ...liveGroup,
    bidding_config: { ...liveGroup.bidding_config, strategy: 'maximize_clicks', max_bid_micros: null },
  };
  refuses(
    () => update({ bidding_config: { strategy: 'fixed_bid' } }, noBid),
    InvalidArgumentError,
    /fixed_bid/,
  );
  assert.ok(update({ bidding_config: { strategy: 'fixed_bid', max_bid_micros: 900_000 } }, noBid).summary);
});

test('an ad group stays in its campaign, lists each audience once and compares numbers with one number', () => {
  refuses(
    () => update({ campaign_id: 'cmp_2' }),
    InvalidArgumentError,
    /cannot move to another campaign; it is in cmp_1/,
  );
  refuses(
    () =>
      update({
        bidding_config: {
          custom_audience_bid_multipliers: [
            { custom_audience_id: 'ca_1', bid_multiplier_micros: 200_000 },
            { custom_audience_id: 'ca_1', bid_multiplier_micros: 300_000 },
          ],
        },
      }),
    InvalidArgumentError,
    /lists the custom audience ca_1 twice/,
  );
  refuses(
    () => update({ product_set: { filters: [{ field: 'price', operator: 'lte', values: ['cheap'] }] } }),
    InvalidArgumentError,
    /`body.product_set.filters\[0\].values` must be exactly one decimal number for the operator "lte"/,
  );
  const noSet = { ...liveGroup, product_set: null };
  refuses(
    () => update({ product_set: { filters: [] } }, noSet),
    InvalidArgumentError,
    /`body.product_set.product_feed_id` is required/,
  );
});

test('an update that would change nothing is refused', () => {
  refuses(
    () =>
      update({
        campaign_id: 'cmp_1',
        bidding_config: { strategy: 'fixed_bid' },
        product_set: { product_feed_id: 'feed_1' },
      }),
    FailedPreconditionError,
    /^nothing would change: campaign_id is already "cmp_1"; bidding_config.strategy is already "fixed_bid"; product_set.product_feed_id is already "feed_1"$/,
  );
});

test('an archived ad group cannot be activated, paused or updated, and archiving it again changes nothing', () => {
  const archived = { ...liveGroup, status: 'archived' };
  for (const effect of ['activate', 'pause']) {
    refuses(
      () => plan(effect, {}, archived),
      FailedPreconditionError,
      /is archived; an archived ad group cannot be changed/,
    );
  }
  refuses(() => update({ name: 'Renamed' }, archived), FailedPreconditionError, /is archived/);
  refuses(
    () => plan('archive', {}, archived),
    FailedPreconditionError,
    /^nothing would change: .* is already archived$/,
  );
  refuses(() => plan('activate', {}), FailedPreconditionError, /is already active/);
  assert.equal(
    plan('pause', {}).summary,
    'Pause ad group "Spring — Group A" (adg_1) on Shop (status "active" → "paused")',
  );
});

test('a product feed can only be archived, once', () => {
  const feed = { id: 'feed_1', name: 'Main catalogue', status: 'active', revision: 1 };
  const archive = (live: Record<string, unknown>) =>
    planChange({ objectType: 'product_feed', effect: 'archive', body: {}, live, accountName: 'Shop' });
  assert.equal(
    archive(feed).summary,
    'Archive product feed "Main catalogue" (feed_1) on Shop (status "active" → "archived")',
  );
  refuses(() => archive({ ...feed, status: 'archived' }), FailedPreconditionError, /is already archived/);
  refuses(
    () =>
      planChange({
        objectType: 'product_feed',
        effect: 'update',
        body: { name: 'x' },
        live: feed,
        accountName: 'Shop',
      }),
    InvalidArgumentError,
    /effect for product feed must be one of archive/,
  );
});
