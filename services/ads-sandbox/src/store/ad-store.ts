import type { Queryable } from '@adsmcp/runtime/db';
import type { Ad, AdStatus, Creative, LandingPageConfiguration } from '../ads.ts';
import type { PageOf, PageRequest } from '../paging.ts';
import { pageBySeq } from './seq-page.ts';

interface AdRow {
  seq: number;
  id: string;
  account_id: string;
  campaign_id: string;
  ad_group_id: string;
  name: string;
  status: AdStatus;
  creative: Creative;
  landing_page_configuration: LandingPageConfiguration | null;
  revision: number;
  created_at: Date;
  updated_at: Date;
}

const AD_COLUMNS =
  'seq, id, account_id, campaign_id, ad_group_id, name, status, creative, landing_page_configuration, revision, created_at, updated_at';

const toAd = (r: AdRow): Ad => ({
  seq: r.seq,
  id: r.id,
  accountId: r.account_id,
  campaignId: r.campaign_id,
  adGroupId: r.ad_group_id,
  name: r.name,
  status: r.status,
  creative: r.creative,
  landingPageConfiguration: r.landing_page_configuration,
  revision: r.revision,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** A JSON value as a jsonb parameter (null stays SQL NULL). */
const jsonb = (value: unknown): string | null => (value === null ? null : JSON.stringify(value));

export async function insertAd(
  db: Queryable,
  ad: {
    id: string;
    accountId: string;
    campaignId: string;
    adGroupId: string;
    name: string;
    status: AdStatus;
    creative: Creative;
    landingPageConfiguration: LandingPageConfiguration | null;
  },
): Promise<Ad> {
  const { rows } = await db.query<AdRow>(
    `INSERT INTO ads (id, account_id, campaign_id, ad_group_id, name, status, creative, landing_page_configuration)
     VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8::jsonb)
     RETURNING ${AD_COLUMNS}`,
    [
      ad.id,
      ad.accountId,
      ad.campaignId,
      ad.adGroupId,
      ad.name,
      ad.status,
      jsonb(ad.creative),
      jsonb(ad.landingPageConfiguration),
    ],
  );
  return toAd(rows[0] as AdRow);
}

/**
 * findAd returns the ad `adId` of `accountId` (undefined when there is none, or it is another
 * account's). `forUpdate` locks it until the calling transaction ends.
 */
export async function findAd(
  db: Queryable,
  accountId: string,
  adId: string,
  opts: { forUpdate?: boolean } = {},
): Promise<Ad | undefined> {
  // Named, so each connection plans the read once (it is every GET /ads/{id}).
  const { rows } = await db.query<AdRow>({
    name: opts.forUpdate ? 'sandbox-find-ad-for-update' : 'sandbox-find-ad',
    text: `SELECT ${AD_COLUMNS} FROM ads WHERE account_id = $1 AND id = $2${opts.forUpdate ? ' FOR UPDATE' : ''}`,
    values: [accountId, adId],
  });
  const row = rows[0];
  return row === undefined ? undefined : toAd(row);
}

/** saveAd stores the editable fields of `ad`, bumps its revision and returns it as stored. */
export async function saveAd(db: Queryable, ad: Ad): Promise<Ad> {
  const { rows } = await db.query<AdRow>(
    `UPDATE ads
        SET name = $3, status = $4, creative = $5::jsonb, landing_page_configuration = $6::jsonb,
            revision = revision + 1, updated_at = clock_timestamp()
      WHERE account_id = $1 AND id = $2
      RETURNING ${AD_COLUMNS}`,
    [ad.accountId, ad.id, ad.name, ad.status, jsonb(ad.creative), jsonb(ad.landingPageConfiguration)],
  );
  const row = rows[0];
  if (row === undefined) throw new Error(`ad ${ad.id} vanished while being saved`);
  return toAd(row);
}

export interface AdFilter {
  accountId: string;
  adGroupId: string | undefined;
  /** Case-insensitive substring of the name. */
  name: string | undefined;
}

/**
 * pageAds returns one page of an account's ads in creation order (`asc`) or its reverse, from
 * the start, after a cursor's ad or before it, and whether more ads lie on either side.
 */
export async function pageAds(db: Queryable, f: AdFilter, q: PageRequest): Promise<PageOf<Ad>> {
  const page = await pageBySeq<AdRow>(
    db,
    {
      select: AD_COLUMNS,
      from: 'ads',
      where: `account_id = $1
        AND ($2::text IS NULL OR ad_group_id = $2)
        AND ($3::text IS NULL OR strpos(lower(name), lower($3)) > 0)`,
      params: [f.accountId, f.adGroupId ?? null, f.name ?? null],
      seq: 'seq',
    },
    q,
  );
  return { ...page, items: page.items.map(toAd) };
}
