/** The ad structure insights are computed over: which ads exist and what they belong to. */
import type { Queryable } from '@adsmcp/runtime/db';

export interface AdRef {
  id: string;
  name: string;
  adGroupId: string;
  campaignId: string;
}

export interface NamedRef {
  id: string;
  name: string;
}

interface AdRefRow {
  id: string;
  name: string;
  ad_group_id: string;
  campaign_id: string;
}

const toAdRef = (r: AdRefRow): AdRef => ({
  id: r.id,
  name: r.name,
  adGroupId: r.ad_group_id,
  campaignId: r.campaign_id,
});

/** findAdGroupRef returns the ad group `adGroupId` of `accountId`, if it has one. */
export async function findAdGroupRef(
  db: Queryable,
  accountId: string,
  adGroupId: string,
): Promise<NamedRef | undefined> {
  const { rows } = await db.query<NamedRef>(
    'SELECT id, name FROM ad_groups WHERE account_id = $1 AND id = $2',
    [accountId, adGroupId],
  );
  return rows[0];
}

/** listAdRefs returns the account's ads in creation order (only those of `adGroupId`, when given). */
export async function listAdRefs(db: Queryable, accountId: string, adGroupId?: string): Promise<AdRef[]> {
  const { rows } = await db.query<AdRefRow>(
    `SELECT id, name, ad_group_id, campaign_id FROM ads
      WHERE account_id = $1 AND ($2::text IS NULL OR ad_group_id = $2)
      ORDER BY seq`,
    [accountId, adGroupId ?? null],
  );
  return rows.map(toAdRef);
}

/** listCampaignIds returns the ids of the account's campaigns. */
export async function listCampaignIds(db: Queryable, accountId: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM campaigns WHERE account_id = $1 ORDER BY created_at, id',
    [accountId],
  );
  return rows.map((r) => r.id);
}

/** listAdGroupIds returns the ids of the account's ad groups. */
export async function listAdGroupIds(db: Queryable, accountId: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM ad_groups WHERE account_id = $1 ORDER BY created_at, id',
    [accountId],
  );
  return rows.map((r) => r.id);
}
