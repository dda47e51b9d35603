/**
 * Creating and changing ad groups, with the rules that need the database: the campaign is the
 * account's and not archived, the product feed is the account's and not archived, the audiences
 * of the bid multipliers are the account's, the name is free within the campaign. Shared by the ad group routes and bulk mutation jobs.
 */
import type { Queryable } from '@adsmcp/runtime/db';
import {
  type AdGroup,
  type AdGroupCreate,
  type BiddingConfig,
  canonicalBidding,
  changed,
  checkStrategyFitsCampaign,
} from './ad-groups.ts';
import type { Campaign } from './campaigns.ts';
import { invalidRequest, notFound, PlatformHttpError } from './errors.ts';
import { newId } from './ids.ts';
import {
  adGroupNameTaken,
  findAdGroup,
  insertAdGroup,
  lockCampaignNames,
  saveAdGroup,
} from './store/ad-group-store.ts';
import { existingAudienceIds } from './store/audience-store.ts';
import { findCampaign } from './store/campaign-store.ts';
import { findFeed } from './store/feed-store.ts';

export const adGroupNotFound = (id: string) => notFound(`no ad group ${id} in this account`);

function campaignArchived(id: string): PlatformHttpError {
  return new PlatformHttpError(
    409,
    'campaign_archived',
    `the campaign ${id} is archived; its ad groups can only be paused or archived, and no ad group can be added to it`,
    { field: 'campaign_id' },
  );
}

async function requireCampaign(db: Queryable, accountId: string, id: string): Promise<Campaign> {
  const campaign = await findCampaign(db, accountId, id, { forShare: true });
  if (campaign === undefined) {
    throw invalidRequest('campaign_id', `campaign_id ${id} is not a campaign of this account`);
  }
  return campaign;
}

/** requireUsableFeed refuses a product feed that is not the account's (400) or is archived (409). */
async function requireUsableFeed(db: Queryable, accountId: string, feedId: string): Promise<void> {
  const field = 'product_set.product_feed_id';
  const feed = await findFeed(db, accountId, feedId, { lock: 'share' });
  if (feed === undefined) {
    throw invalidRequest(field, `${field} ${feedId} is not a product feed of this account`);
  }
  if (feed.status === 'archived') {
    throw new PlatformHttpError(
      409,
      'product_feed_archived',
      `the product feed ${feedId} is archived; an archived feed cannot be used in a product set`,
      { field },
    );
  }
}

/** requireAudiences refuses a bid multiplier whose custom audience is not the account's (400). */
async function requireAudiences(db: Queryable, accountId: string, bidding: BiddingConfig): Promise<void> {
  const multipliers = bidding.custom_audience_bid_multipliers;
  if (multipliers.length === 0) return;
  const existing = await existingAudienceIds(
    db,
    accountId,
    multipliers.map((m) => m.custom_audience_id),
  );
  multipliers.forEach((m, i) => {
    const field = `bidding_config.custom_audience_bid_multipliers.${i}.custom_audience_id`;
    if (!existing.has(m.custom_audience_id)) {
      throw invalidRequest(
        field,
        `${field} ${m.custom_audience_id} is not a custom audience of this account`,
      );
    }
  });
}

async function requireFreeName(
  db: Queryable,
  g: { accountId: string; campaignId: string; name: string; exceptId: string | undefined },
): Promise<void> {
  await lockCampaignNames(db, g.campaignId);
  if (await adGroupNameTaken(db, g)) {
    throw new PlatformHttpError(
      409,
      'duplicate_name',
      `name "${g.name}" is already used by another ad group of the campaign ${g.campaignId} that is not archived`,
      { field: 'name' },
    );
  }
}

/** createAdGroup creates the validated ad group `input` in `accountId` and returns it. */
export async function createAdGroup(
  db: Queryable,
  accountId: string,
  input: AdGroupCreate,
): Promise<AdGroup> {
  const campaign = await requireCampaign(db, accountId, input.campaignId);
  if (campaign.status === 'archived') throw campaignArchived(campaign.id);
  checkStrategyFitsCampaign(input.biddingConfig, campaign.objective);
  await requireAudiences(db, accountId, input.biddingConfig);
  if (input.productSet !== null) await requireUsableFeed(db, accountId, input.productSet.product_feed_id);
  await requireFreeName(db, { accountId, campaignId: campaign.id, name: input.name, exceptId: undefined });
  const id = await insertAdGroup(db, { ...input, id: newId('adg'), accountId });
  const created = await findAdGroup(db, accountId, id);
  if (created === undefined) throw new Error(`ad group ${id} vanished after its creation`);
  return created;
}

/** The rules a changed ad group must keep against its surroundings. */
async function checkChange(db: Queryable, before: AdGroup, next: AdGroup): Promise<void> {
  if (next.status === 'active' && before.status !== 'active' && before.campaignStatus === 'archived') {
    throw campaignArchived(before.campaignId);
  }
  if (
    JSON.stringify(canonicalBidding(next.biddingConfig)) !==
    JSON.stringify(canonicalBidding(before.biddingConfig))
  ) {
    checkStrategyFitsCampaign(next.biddingConfig, before.campaignObjective);
    await requireAudiences(db, before.accountId, next.biddingConfig);
  }
  const feed = next.productSet?.product_feed_id;
  if (feed !== undefined && feed !== before.productSet?.product_feed_id) {
    await requireUsableFeed(db, before.accountId, feed);
  }
  if (next.name.toLowerCase() !== before.name.toLowerCase() && next.status !== 'archived') {
    await requireFreeName(db, {
      accountId: before.accountId,
      campaignId: before.campaignId,
      name: next.name,
      exceptId: before.id,
    });
  }
}

/**
 * changeAdGroup applies `change` to the (locked) ad group `id` and returns it as stored; its
 * revision goes up by one when anything changed, and stays when nothing did.
 */
export async function changeAdGroup(
  db: Queryable,
  accountId: string,
  id: string,
  change: (g: AdGroup) => AdGroup,
): Promise<AdGroup> {
  const before = await findAdGroup(db, accountId, id, { forUpdate: true });
  if (before === undefined) throw adGroupNotFound(id);
  const next = change(before);
  if (!changed(before, next)) return before;
  await checkChange(db, before, next);
  await saveAdGroup(db, next);
  const saved = await findAdGroup(db, accountId, id);
  if (saved === undefined) throw new Error(`ad group ${id} vanished while being saved`);
  return saved;
}
