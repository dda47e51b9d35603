/**
 * The ad structure every new sandbox account starts with: 2 product feeds and 2 campaigns, each
 * with 2 ad groups, each with 3 ads (12 ads). Names, statuses, budgets, bidding and creatives are
 * the same for every account; only the ids (and the campaigns' schedules, which start at the
 * account's creation) differ. Three ads are paused, the rest active, and one active ad's landing
 * page is on an unreachable host, so that it reports a serving issue. Each chat card shows an image
 * that is a file of the account, as if uploaded. Its conversion tracking and custom audiences are
 * seeded by seed-conversions.ts.
 */
import type { Queryable } from '@adsmcp/runtime/db';
import type { BiddingConfig, ProductSet } from './ad-groups.ts';
import type { AdStatus, Creative, LandingPageConfiguration } from './ads.ts';
import type { CampaignCreate } from './campaigns.ts';
import { fileIdOf } from './files.ts';
import { newId, sha256Hex } from './ids.ts';
import { seedConversionsAndAudiences } from './seed-conversions.ts';
import { insertAdGroup } from './store/ad-group-store.ts';
import { insertAd } from './store/ad-store.ts';
import { insertCampaign } from './store/campaign-store.ts';
import { insertFeed } from './store/feed-store.ts';
import { insertFile } from './store/file-store.ts';

export const SEED_CAMPAIGNS = ['Spring Sale', 'Summer Launch'] as const;
export const SEED_AD_GROUPS = ['Group A', 'Group B'] as const;
export const SEED_ADS_PER_GROUP = 3;

export const SEED_FEEDS = [
  { name: 'Main catalogue', sourceUrl: 'https://shop.example.com/feeds/main.xml', productCount: 1240 },
  { name: 'Clearance items', sourceUrl: 'https://shop.example.com/feeds/clearance.csv', productCount: 85 },
] as const;

const DAY_MS = 86_400_000;

/** The seeded campaigns' budgets and schedules: one daily, one lifetime over 90 days. */
function seedCampaign(name: (typeof SEED_CAMPAIGNS)[number], now: Date): CampaignCreate {
  if (name === 'Spring Sale') {
    return {
      name,
      objective: 'clicks',
      budgetMicros: 50_000_000,
      budgetType: 'daily',
      startTime: now,
      endTime: null,
    };
  }
  return {
    name,
    objective: 'conversions',
    budgetMicros: 3_000_000_000,
    budgetType: 'lifetime',
    startTime: now,
    endTime: new Date(now.getTime() + 90 * DAY_MS),
  };
}

/** Group A bids a fixed amount per click on the main catalogue; group B lets the platform bid. */
function seedBidding(group: (typeof SEED_AD_GROUPS)[number], campaign: CampaignCreate): BiddingConfig {
  if (group === 'Group A') {
    return {
      billing_event_type: 'click',
      strategy: 'fixed_bid',
      max_bid_micros: 1_500_000,
      custom_audience_bid_multipliers: [],
    };
  }
  return {
    billing_event_type: 'impression',
    strategy: campaign.objective === 'conversions' ? 'maximize_conversions' : 'maximize_clicks',
    max_bid_micros: null,
    custom_audience_bid_multipliers: [],
  };
}

/** Seeded ads (by position in creation order, from 0) that are paused. */
const PAUSED = new Set([2, 5, 10]);
/** The seeded (active) ad whose landing page is unreachable. */
const UNREACHABLE = 4;

const slug = (s: string): string => s.toLowerCase().replace(/[^a-z0-9]+/g, '-');

/** Seeded ads at even positions are chat cards with an image; the others product ads. */
const isChatCard = (index: number): boolean => index % 2 === 0;

/**
 * seedImage records the image of the `n`th seeded ad as a file of the account and returns its id.
 * Metadata only, as the sandbox keeps of an upload: a square PNG whose hash is that of a fixed
 * descriptor (there are no bytes), and whose id is derived from it as an upload's is.
 */
async function seedImage(db: Queryable, accountId: string, n: number, now: Date): Promise<string> {
  const sha256 = sha256Hex(`seed image ${n}`);
  const id = fileIdOf(accountId, sha256);
  await insertFile(db, {
    id,
    accountId,
    mimeType: 'image/png',
    byteSize: 180_000 + n * 1_024,
    width: 1080,
    height: 1080,
    sha256,
    createdAt: now,
  });
  return id;
}

/** The creative of the seeded ad at `index`; `fileId` is its image, given exactly for a chat card. */
function seedCreative(index: number, campaign: string, fileId: string | undefined): Creative {
  const n = index + 1;
  const host = index === UNREACHABLE ? 'landing.unreachable.invalid' : 'shop.example.com';
  const target_url = `https://${host}/${slug(campaign)}/ad-${n}`;
  if (fileId !== undefined) {
    return {
      type: 'chat_card',
      title: `${campaign}: offer ${n}`,
      body: `Chat with us about the ${campaign.toLowerCase()} and get offer ${n}.`,
      target_url,
      file_id: fileId,
      ...(index % 4 === 0 ? { image_crop: { x: 0.1, y: 0, width: 0.8, height: 0.8 } } : {}),
    };
  }
  return {
    type: 'product_ad_template',
    title: `${campaign}: product ${n}`,
    body: `Our best seller in the ${campaign.toLowerCase()}.`,
    price: `${19 + index}.99 USD`,
    target_url,
  };
}

/**
 * seedAccount creates the seeded product feeds, campaigns, ad groups and ads (and their images'
 * files) of `accountId`, in order, then its pixel, event setting and custom audiences.
 */
export async function seedAccount(db: Queryable, accountId: string): Promise<void> {
  const feedIds: string[] = [];
  for (const feed of SEED_FEEDS) {
    const id = newId('pf');
    await insertFeed(db, { id, accountId, ...feed });
    feedIds.push(id);
  }
  const now = new Date();
  let index = 0;
  for (const campaign of SEED_CAMPAIGNS) {
    const campaignId = newId('cmp');
    const settings = seedCampaign(campaign, now);
    await insertCampaign(db, { ...settings, id: campaignId, accountId, status: 'active' });
    for (const group of SEED_AD_GROUPS) {
      const adGroupId = newId('adg');
      const productSet: ProductSet | null =
        group === 'Group A' && feedIds[0] !== undefined
          ? {
              product_feed_id: feedIds[0],
              filters: [{ field: 'availability', operator: 'in', values: ['in_stock'] }],
            }
          : null;
      await insertAdGroup(db, {
        id: adGroupId,
        accountId,
        campaignId,
        name: `${campaign} — ${group}`,
        description: null,
        status: 'active',
        contextHints: [],
        biddingConfig: seedBidding(group, settings),
        productSet,
        landingPageConfiguration: null,
      });
      const landingPageConfiguration: LandingPageConfiguration | null =
        group === 'Group A'
          ? { query_string_template: 'utm_source=sandbox&utm_campaign={{campaign.id}}' }
          : null;
      for (let n = 1; n <= SEED_ADS_PER_GROUP; n++, index++) {
        const status: AdStatus = PAUSED.has(index) ? 'paused' : 'active';
        const fileId = isChatCard(index) ? await seedImage(db, accountId, index + 1, now) : undefined;
        await insertAd(db, {
          id: newId('ad'),
          accountId,
          campaignId,
          adGroupId,
          name: `${campaign} — ${group} — Ad ${n}`,
          status,
          creative: seedCreative(index, campaign, fileId),
          landingPageConfiguration,
        });
      }
    }
  }
  await seedConversionsAndAudiences(db, accountId);
}
