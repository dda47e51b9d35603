/**
 * The ad structure every new sandbox account starts with: 2 campaigns, each with 2 ad groups,
 * each with 3 ads (12 ads). Names, statuses and creatives are the same for every account; only
 * the ids are random. Three ads are paused, the rest active, and one active ad's landing page
 * is on an unreachable host, so that it reports a serving issue.
 */
import { randomBytes } from 'node:crypto';
import type { Queryable } from '@adsmcp/runtime/db';
import type { AdStatus, Creative, LandingPageConfiguration } from './ads.ts';
import { seedConversionsAndAudiences } from './seed-conversions.ts';
import { insertAd, insertAdGroup, insertCampaign } from './store/ad-store.ts';

export const SEED_CAMPAIGNS = ['Spring Sale', 'Summer Launch'] as const;
export const SEED_AD_GROUPS = ['Group A', 'Group B'] as const;
export const SEED_ADS_PER_GROUP = 3;

/** Seeded ads (by position in creation order, from 0) that are paused. */
const PAUSED = new Set([2, 5, 10]);
/** The seeded (active) ad whose landing page is unreachable. */
const UNREACHABLE = 4;

/** newId returns `<prefix>_<16 hex>`. */
export function newId(prefix: 'cmp' | 'adg' | 'ad'): string {
  return `${prefix}_${randomBytes(8).toString('hex')}`;
}

const slug = (s: string): string => s.toLowerCase().replace(/[^a-z0-9]+/g, '-');

function seedCreative(index: number, campaign: string): Creative {
  const n = index + 1;
  const host = index === UNREACHABLE ? 'landing.unreachable.invalid' : 'shop.example.com';
  const target_url = `https://${host}/${slug(campaign)}/ad-${n}`;
  if (index % 2 === 0) {
    return {
      type: 'chat_card',
      title: `${campaign}: offer ${n}`,
      body: `Chat with us about the ${campaign.toLowerCase()} and get offer ${n}.`,
      target_url,
      file_id: `file_seed_${String(n).padStart(2, '0')}`,
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

/** seedAccount creates the seeded campaigns, ad groups and ads of `accountId`, in order. */
export async function seedAccount(db: Queryable, accountId: string): Promise<void> {
  let index = 0;
  for (const campaign of SEED_CAMPAIGNS) {
    const campaignId = newId('cmp');
    await insertCampaign(db, { id: campaignId, accountId, name: campaign, status: 'active' });
    for (const group of SEED_AD_GROUPS) {
      const adGroupId = newId('adg');
      await insertAdGroup(db, {
        id: adGroupId,
        accountId,
        campaignId,
        name: `${campaign} — ${group}`,
        status: 'active',
      });
      const landingPageConfiguration: LandingPageConfiguration | null =
        group === 'Group A'
          ? { query_string_template: 'utm_source=sandbox&utm_campaign={{campaign.id}}' }
          : null;
      for (let n = 1; n <= SEED_ADS_PER_GROUP; n++, index++) {
        const status: AdStatus = PAUSED.has(index) ? 'paused' : 'active';
        await insertAd(db, {
          id: newId('ad'),
          accountId,
          campaignId,
          adGroupId,
          name: `${campaign} — ${group} — Ad ${n}`,
          status,
          creative: seedCreative(index, campaign),
          landingPageConfiguration,
        });
      }
    }
  }
  await seedConversionsAndAudiences(db, accountId);
}
