/** Helpers of the ad structure tests (ad groups, campaigns, feeds, bulk jobs) over HTTP. */
import assert from 'node:assert/strict';
import type { AdGroupJson } from '../src/ad-groups.ts';
import type { CampaignJson } from '../src/campaigns.ts';
import type { FeedJson } from '../src/feeds.ts';
import type { Response, Sandbox, SandboxAccount } from './sandbox.ts';

export interface ListJson<T> {
  data: T[];
  paging: { after: string | null; before: string | null; has_more: boolean };
}

/** The fields of a custom audience the structure tests use. */
export interface AudienceRef {
  id: string;
  name: string;
  status: 'active' | 'archived';
}

export interface Structure extends SandboxAccount {
  campaigns: CampaignJson[];
  adGroups: AdGroupJson[];
  feeds: FeedJson[];
  /** The seeded custom audiences, for ad groups' bid multipliers. */
  audiences: AudienceRef[];
}

/** seededStructure creates a seeded account and reads its campaigns, ad groups, feeds and audiences. */
export async function seededStructure(sb: Sandbox): Promise<Structure> {
  const account = await sb.newAccount();
  const token = account.credential;
  const campaigns = await sb.call<ListJson<CampaignJson>>('GET', '/campaigns?limit=500', { token });
  const adGroups = await sb.call<ListJson<AdGroupJson>>('GET', '/ad_groups?limit=500', { token });
  const feeds = await sb.call<ListJson<FeedJson>>('GET', '/feeds?limit=500', { token });
  const audiences = await sb.call<ListJson<AudienceRef>>('GET', '/custom_audiences?limit=500', { token });
  for (const res of [campaigns, adGroups, feeds, audiences]) assert.equal(res.status, 200);
  return {
    ...account,
    campaigns: campaigns.body.data,
    adGroups: adGroups.body.data,
    feeds: feeds.body.data,
    audiences: audiences.body.data,
  };
}

/** walk follows paging.after from the first page of `path` (with `query`) and returns every page. */
export async function walk<T>(
  sb: Sandbox,
  token: string,
  path: string,
  query: string,
): Promise<ListJson<T>[]> {
  const pages: ListJson<T>[] = [];
  let cursor: string | null = null;
  do {
    const res: Response<ListJson<T>> = await sb.call<ListJson<T>>(
      'GET',
      `${path}?${query}${cursor === null ? '' : `&after=${cursor}`}`,
      {
        token,
      },
    );
    assert.equal(res.status, 200, JSON.stringify(res.body));
    pages.push(res.body);
    cursor = res.body.paging.after;
    assert.ok(pages.length <= 50, 'paging does not end');
  } while (cursor !== null);
  return pages;
}

export const ids = (items: { id: string }[]) => items.map((i) => i.id);

/** A valid ad group create body in `campaignId`. */
export function adGroupBody(
  campaignId: string,
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    campaign_id: campaignId,
    name: 'Autumn shoppers',
    status: 'paused',
    bidding_config: { billing_event_type: 'click', strategy: 'fixed_bid', max_bid_micros: 2_000_000 },
    ...overrides,
  };
}
