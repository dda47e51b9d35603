/**
 * The campaign_assets table. Every query names the workspace, so one never reaches another's
 * assets; only findAssetContent reads the image bytes, so a list never carries them.
 */
import type { Queryable } from '@adsmcp/runtime/db';
import type { CampaignAsset } from '../domain/campaign-asset.ts';
import type { ImageType } from '../images/campaign-image.ts';

interface AssetRow {
  workspace_id: string;
  asset_id: string;
  account_id: string;
  name: string;
  mime_type: ImageType;
  width: number;
  height: number;
  byte_size: number;
  sha256: string;
  source_url: string | null;
  revision: number;
  archived_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** Every column but the image itself, whose size is given instead. */
const COLUMNS = `workspace_id, asset_id, account_id, name, mime_type, width, height,
  octet_length(content) AS byte_size, sha256, source_url, revision, archived_at, created_at, updated_at`;

const toAsset = (r: AssetRow): CampaignAsset => ({
  workspaceId: r.workspace_id,
  assetId: r.asset_id,
  accountId: r.account_id,
  name: r.name,
  mimeType: r.mime_type,
  width: r.width,
  height: r.height,
  byteSize: r.byte_size,
  sha256: r.sha256,
  sourceUrl: r.source_url,
  revision: r.revision,
  archivedAt: r.archived_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const first = (rows: AssetRow[]): CampaignAsset | undefined => {
  const row = rows[0];
  return row === undefined ? undefined : toAsset(row);
};

export interface NewAsset {
  workspaceId: string;
  assetId: string;
  accountId: string;
  name: string;
  mimeType: ImageType;
  width: number;
  height: number;
  content: Buffer;
  sha256: string;
  sourceUrl: string | null;
}

/** insertAsset stores a new asset at revision 1. */
export async function insertAsset(db: Queryable, a: NewAsset): Promise<CampaignAsset> {
  const { rows } = await db.query<AssetRow>(
    `INSERT INTO campaign_assets
       (workspace_id, asset_id, account_id, name, mime_type, width, height, content, sha256, source_url, revision)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 1)
     RETURNING ${COLUMNS}`,
    [
      a.workspaceId,
      a.assetId,
      a.accountId,
      a.name,
      a.mimeType,
      a.width,
      a.height,
      a.content,
      a.sha256,
      a.sourceUrl,
    ],
  );
  const created = first(rows);
  if (created === undefined) throw new Error(`campaign asset ${a.assetId} was not stored`);
  return created;
}

/** lockAsset returns the workspace's asset, archived or not, locked until the transaction ends. */
export async function lockAsset(
  db: Queryable,
  workspaceId: string,
  assetId: string,
): Promise<CampaignAsset | undefined> {
  const { rows } = await db.query<AssetRow>(
    `SELECT ${COLUMNS} FROM campaign_assets WHERE workspace_id = $1 AND asset_id = $2 FOR UPDATE`,
    [workspaceId, assetId],
  );
  return first(rows);
}

/** findAssetContent returns the workspace's asset, archived or not, with its image, or undefined. */
export async function findAssetContent(
  db: Queryable,
  workspaceId: string,
  assetId: string,
): Promise<(CampaignAsset & { content: Buffer }) | undefined> {
  const { rows } = await db.query<AssetRow & { content: Buffer }>(
    `SELECT ${COLUMNS}, content FROM campaign_assets WHERE workspace_id = $1 AND asset_id = $2`,
    [workspaceId, assetId],
  );
  const row = rows[0];
  return row === undefined ? undefined : { ...toAsset(row), content: row.content };
}

/**
 * archiveAsset archives a live asset that is still at `revision`, moving it to the next revision;
 * it returns undefined when it was not.
 */
export async function archiveAsset(
  db: Queryable,
  workspaceId: string,
  assetId: string,
  revision: number,
): Promise<CampaignAsset | undefined> {
  const { rows } = await db.query<AssetRow>(
    `UPDATE campaign_assets
        SET archived_at = now(), revision = revision + 1, updated_at = now()
      WHERE workspace_id = $1 AND asset_id = $2 AND revision = $3 AND archived_at IS NULL
      RETURNING ${COLUMNS}`,
    [workspaceId, assetId, revision],
  );
  return first(rows);
}

/**
 * listAssets returns one page of the workspace's live assets of one account, newest first, and
 * how many there are in all.
 */
export async function listAssets(
  db: Queryable,
  workspaceId: string,
  accountId: string,
  page: { offset: number; limit: number },
): Promise<{ assets: CampaignAsset[]; total: number }> {
  // One statement, one snapshot: the count and the page always agree, even past the end.
  const { rows } = await db.query<Partial<AssetRow> & { total: number }>(
    `WITH matched AS (
       SELECT * FROM campaign_assets
        WHERE workspace_id = $1 AND account_id = $2 AND archived_at IS NULL
     )
     SELECT counted.total, page.*
       FROM (SELECT count(*)::int AS total FROM matched) AS counted
       LEFT JOIN LATERAL (
         SELECT ${COLUMNS} FROM matched ORDER BY created_at DESC, asset_id DESC LIMIT $3 OFFSET $4
       ) AS page ON true`,
    [workspaceId, accountId, page.limit, page.offset],
  );
  const total = rows[0]?.total ?? 0;
  const assets = rows.filter((r): r is AssetRow & { total: number } => r.asset_id != null).map(toAsset);
  return { assets, total };
}

/**
 * findLiveBySource returns, for each of `urls`, the workspace's newest live asset of the account
 * whose source_url is exactly that URL; a URL with none is not in the map. One statement for all,
 * through index campaign_assets_live_by_source (by the URLs' md5, then the URLs themselves).
 */
export async function findLiveBySource(
  db: Queryable,
  workspaceId: string,
  accountId: string,
  urls: readonly string[],
): Promise<Map<string, CampaignAsset>> {
  const { rows } = await db.query<AssetRow>(
    `SELECT DISTINCT ON (source_url) ${COLUMNS} FROM campaign_assets
      WHERE workspace_id = $1 AND account_id = $2 AND archived_at IS NULL AND source_url IS NOT NULL
        AND md5(source_url) = ANY (ARRAY(SELECT md5(u) FROM unnest($3::text[]) AS u))
        AND source_url = ANY ($3::text[])
      ORDER BY source_url, created_at DESC, asset_id DESC`,
    [workspaceId, accountId, urls],
  );
  return new Map(rows.map((r) => [r.source_url as string, toAsset(r)]));
}

/**
 * lockSource holds, until the transaction ends, the one lock on saving the workspace's asset of
 * the account from `url`: two saves of the same image take turns, so the second finds the first's
 * asset instead of storing another. The key is the three values as a JSON array, so no account
 * or URL can be spelt to look like another pair; a hash collision only makes two saves wait.
 */
export async function lockSource(
  db: Queryable,
  workspaceId: string,
  accountId: string,
  url: string,
): Promise<void> {
  await db.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
    JSON.stringify(['campaign_assets.source_url', workspaceId, accountId, url]),
  ]);
}

/** findAssets returns the workspace's assets among `assetIds` (lower-case UUIDs), archived or not. */
export async function findAssets(
  db: Queryable,
  workspaceId: string,
  assetIds: readonly string[],
): Promise<CampaignAsset[]> {
  const { rows } = await db.query<AssetRow>(
    `SELECT ${COLUMNS} FROM campaign_assets WHERE workspace_id = $1 AND asset_id = ANY ($2::uuid[])`,
    [workspaceId, assetIds],
  );
  return rows.map(toAsset);
}
