/**
 * The rules an ad group must keep as a whole, checked on the ad group a create or an update would
 * produce (for an update, the live ad group with the update merged in), so that a change the ad
 * platform would refuse is refused when it is prepared, not when it is applied. Rules that need
 * other objects (the campaign's objective and status, the feed's status, the audiences, a free
 * name) are the platform's to check at apply.
 */

import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import { isRecord } from '@adsmcp/runtime/json';

type Fields = Record<string, unknown>;

function asObject(v: unknown): Fields | undefined {
  return isRecord(v) ? v : undefined;
}

/** Said of a value the ad group keeps from its live state rather than from the body. */
function kept(patch: Fields, section: string, field: string): string {
  const supplied = asObject(patch[section]);
  return supplied !== undefined && field in supplied ? '' : ` (the ad group's current ${section}.${field})`;
}

function checkBidding(bidding: Fields, patch: Fields): void {
  if (
    bidding.strategy === 'fixed_bid' &&
    (bidding.max_bid_micros === undefined || bidding.max_bid_micros === null)
  ) {
    throw new InvalidArgumentError(
      `\`body.bidding_config.max_bid_micros\` is required with the strategy "fixed_bid"${kept(patch, 'bidding_config', 'strategy')}: it is the bid`,
    );
  }
  const multipliers = bidding.custom_audience_bid_multipliers;
  if (!Array.isArray(multipliers)) return;
  const seen = new Set<string>();
  for (const m of multipliers) {
    const id = String(asObject(m)?.custom_audience_id ?? '');
    if (seen.has(id)) {
      throw new InvalidArgumentError(
        `\`body.bidding_config.custom_audience_bid_multipliers\` lists the custom audience ${id} twice; each audience once`,
      );
    }
    seen.add(id);
  }
}

/** Comparisons with a number take exactly one decimal number. */
const NUMERIC_OPERATORS = ['gt', 'gte', 'lt', 'lte'];
const DECIMAL = /^-?\d+(\.\d+)?$/;

function checkProductSet(set: Fields): void {
  if (typeof set.product_feed_id !== 'string' || set.product_feed_id === '') {
    throw new InvalidArgumentError(
      '`body.product_set.product_feed_id` is required: the ad group has no product set whose feed it would keep',
    );
  }
  const filters = Array.isArray(set.filters) ? set.filters : [];
  filters.forEach((f, i) => {
    const filter = asObject(f) ?? {};
    const values = Array.isArray(filter.values) ? filter.values : [];
    if (NUMERIC_OPERATORS.includes(String(filter.operator))) {
      if (values.length !== 1 || !DECIMAL.test(String(values[0]))) {
        throw new InvalidArgumentError(
          `\`body.product_set.filters[${i}].values\` must be exactly one decimal number for the operator "${String(filter.operator)}"`,
        );
      }
    }
  });
}

/**
 * checkAdGroup refuses an ad group the platform would refuse, naming the field and the rule.
 * `live` is the ad group before an update; a create has none.
 */
export function checkAdGroup(group: Fields, patch: Fields, live?: Fields): void {
  if (live === undefined && group.status !== 'active' && group.status !== 'paused') {
    throw new InvalidArgumentError(
      `\`body.status\` of a new ad group must be active or paused (got ${JSON.stringify(group.status)})`,
    );
  }
  if (live !== undefined && patch.campaign_id !== undefined && patch.campaign_id !== live.campaign_id) {
    throw new InvalidArgumentError(
      `\`body.campaign_id\`: an ad group cannot move to another campaign; it is in ${String(live.campaign_id)} (create a new ad group in ${String(patch.campaign_id)} instead)`,
    );
  }
  const bidding = asObject(group.bidding_config);
  if (bidding !== undefined) checkBidding(bidding, patch);
  const set = asObject(group.product_set);
  if (set !== undefined) checkProductSet(set);
}
