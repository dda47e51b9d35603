import type { Queryable } from '@adsmcp/runtime/db';
import type { AdGroup, AdGroupCreate, AdGroupStatus, BiddingConfig, ProductSet } from '../ad-groups.ts';
import type { LandingPageConfiguration } from '../ads.ts';
import type { CampaignObjective, CampaignStatus } from '../campaigns.ts';
import type { PageOf, PageRequest } from '../paging.ts';
import { pageBySeq } from './seq-page.ts';

interface AdGroupRow {
  seq: number;
  id: string;
  account_id: string;
  campaign_id: string;
  name: string;
  description: string | null;
  status: AdGroupStatus;
  context_hints: string[];
  bidding_config: BiddingConfig;
  product_set: ProductSet | null;
  landing_page_configuration: LandingPageConfiguration | null;
  revision: number;
  created_at: Date;
  updated_at: Date;
  campaign_status: CampaignStatus;
  campaign_objective: CampaignObjective;
  product_feed_status: 'active' | 'archived' | null;
}

const OWN_COLUMNS = [
  'seq',
  'id',
  'account_id',
  'campaign_id',
  'name',
  'description',
  'status',
  'context_hints',
  'bidding_config',
  'product_set',
  'landing_page_configuration',
  'revision',
  'created_at',
  'updated_at',
];

/** An ad group with the campaign and feed state its rules and serving issues depend on. */
const SELECT = `${OWN_COLUMNS.map((c) => `g.${c}`).join(', ')},
  c.status AS campaign_status, c.objective AS campaign_objective, f.status AS product_feed_status`;

const FROM = `ad_groups g
  JOIN campaigns c ON c.id = g.campaign_id AND c.account_id = g.account_id
  LEFT JOIN product_feeds f ON f.id = g.product_set->>'product_feed_id' AND f.account_id = g.account_id`;

const toAdGroup = (r: AdGroupRow): AdGroup => ({
  seq: r.seq,
  id: r.id,
  accountId: r.account_id,
  campaignId: r.campaign_id,
  name: r.name,
  description: r.description,
  status: r.status,
  contextHints: r.context_hints,
  biddingConfig: r.bidding_config,
  productSet: r.product_set,
  landingPageConfiguration: r.landing_page_configuration,
  revision: r.revision,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  campaignStatus: r.campaign_status,
  campaignObjective: r.campaign_objective,
  productFeedStatus: r.product_feed_status,
});

/** A JSON value as a jsonb parameter (null stays SQL NULL). */
const jsonb = (value: unknown): string | null => (value === null ? null : JSON.stringify(value));

/** The editable fields, in the order both the INSERT and the UPDATE take them. */
function editableValues(
  g: Pick<
    AdGroup,
    | 'name'
    | 'description'
    | 'status'
    | 'contextHints'
    | 'biddingConfig'
    | 'productSet'
    | 'landingPageConfiguration'
  >,
): unknown[] {
  return [
    g.name,
    g.description,
    g.status,
    jsonb(g.contextHints),
    jsonb(g.biddingConfig),
    jsonb(g.productSet),
    jsonb(g.landingPageConfiguration),
  ];
}

/** insertAdGroup creates an ad group and returns its id. */
export async function insertAdGroup(
  db: Queryable,
  g: AdGroupCreate & { id: string; accountId: string },
): Promise<string> {
  await db.query(
    `INSERT INTO ad_groups (id, account_id, campaign_id, name, description, status, context_hints,
                            bidding_config, product_set, landing_page_configuration)
     VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8::jsonb, $9::jsonb, $10::jsonb)`,
    [g.id, g.accountId, g.campaignId, ...editableValues(g)],
  );
  return g.id;
}

/**
 * findAdGroup returns the ad group `id` of `accountId` (undefined when there is none, or it is
 * another account's). `forUpdate` locks the ad group until the calling transaction ends.
 */
export async function findAdGroup(
  db: Queryable,
  accountId: string,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<AdGroup | undefined> {
  const { rows } = await db.query<AdGroupRow>(
    `SELECT ${SELECT} FROM ${FROM} WHERE g.account_id = $1 AND g.id = $2${opts.forUpdate ? ' FOR UPDATE OF g' : ''}`,
    [accountId, id],
  );
  const row = rows[0];
  return row === undefined ? undefined : toAdGroup(row);
}

/** saveAdGroup stores the editable fields of `g` and bumps its revision. */
export async function saveAdGroup(db: Queryable, g: AdGroup): Promise<void> {
  await db.query(
    `UPDATE ad_groups
        SET name = $3, description = $4, status = $5, context_hints = $6::jsonb, bidding_config = $7::jsonb,
            product_set = $8::jsonb, landing_page_configuration = $9::jsonb,
            revision = revision + 1, updated_at = clock_timestamp()
      WHERE account_id = $1 AND id = $2`,
    [g.accountId, g.id, ...editableValues(g)],
  );
}

/**
 * adGroupNameTaken tells whether another ad group of the campaign that is not archived has the
 * name (compared without regard to case).
 */
export async function adGroupNameTaken(
  db: Queryable,
  g: { accountId: string; campaignId: string; name: string; exceptId: string | undefined },
): Promise<boolean> {
  const { rows } = await db.query<{ taken: boolean }>(
    `SELECT EXISTS (
       SELECT 1 FROM ad_groups
        WHERE account_id = $1 AND campaign_id = $2 AND lower(name) = lower($3)
          AND status <> 'archived' AND ($4::text IS NULL OR id <> $4)) AS taken`,
    [g.accountId, g.campaignId, g.name, g.exceptId ?? null],
  );
  return rows[0]?.taken === true;
}

/**
 * lockCampaignNames serializes the creations and renames of ad groups in one campaign, so two
 * of them cannot both take a free name.
 */
export async function lockCampaignNames(db: Queryable, campaignId: string): Promise<void> {
  await db.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`ad-group-names:${campaignId}`]);
}

export interface AdGroupFilter {
  accountId: string;
  campaignId: string | undefined;
  /** Case-insensitive substring of the name. */
  name: string | undefined;
}

/** pageAdGroups returns one page of an account's ad groups in creation order (`asc`) or its reverse. */
export async function pageAdGroups(
  db: Queryable,
  f: AdGroupFilter,
  q: PageRequest,
): Promise<PageOf<AdGroup>> {
  const page = await pageBySeq<AdGroupRow>(
    db,
    {
      select: SELECT,
      from: FROM,
      where: `g.account_id = $1
        AND ($2::text IS NULL OR g.campaign_id = $2)
        AND ($3::text IS NULL OR strpos(lower(g.name), lower($3)) > 0)`,
      params: [f.accountId, f.campaignId ?? null, f.name ?? null],
      seq: 'g.seq',
    },
    q,
  );
  return { ...page, items: page.items.map(toAdGroup) };
}
