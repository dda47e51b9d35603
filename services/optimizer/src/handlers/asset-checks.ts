/**
 * The campaign assets optimization variants name (`asset_id`), checked when a run is completed or
 * a proposal edited, so that the agent hears of an unusable image at once rather than the reviewer
 * after approving: each must be a live asset of the workspace, saved for the optimizer's ad
 * account. They are asked of the marketing service, which keeps them, as this service's worker
 * with the read scope, for the caller's workspace. Publishing checks again regardless: the changes
 * service pins each image when it records the change, and refuses one that is gone.
 */
import type { AssetService } from '@adsmcp/proto/marketing/v1/assets_pb';
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import type { Principal } from '@adsmcp/runtime/principal';
import { readingFor } from '@adsmcp/runtime/service-client';
import type { Client } from '@connectrpc/connect';

export type Assets = Client<typeof AssetService>;

/** A variant's image, with how the request names the variant (`variants[0]`, `variant`). */
export interface NamedAsset {
  field: string;
  assetId: string | undefined;
}

/**
 * checkVariantAssets refuses the first variant whose asset is unknown in the workspace, archived,
 * or saved for another ad account than `accountId`, naming the variant's field. Without a marketing
 * client (no MARKETING_URL) it checks nothing, and publishing is the check.
 */
export async function checkVariantAssets(
  assets: Assets | undefined,
  p: Principal,
  accountId: string,
  named: readonly NamedAsset[],
): Promise<void> {
  const wanted = named.filter((n): n is { field: string; assetId: string } => n.assetId !== undefined);
  if (assets === undefined || wanted.length === 0) return;
  const ids = [...new Set(wanted.map((n) => n.assetId))];
  const { assets: found } = await assets.getCampaignAssets({ assetIds: ids }, readingFor(p));
  const byId = new Map(found.map((a) => [a.assetId.toLowerCase(), a]));
  for (const { field, assetId } of wanted) {
    const asset = byId.get(assetId);
    const at = `${field}.asset_id ${assetId}`;
    if (asset === undefined)
      throw new InvalidArgumentError(
        `${at}: no campaign asset with this id in this workspace (ads_list_campaign_assets lists them)`,
      );
    if (asset.archived)
      throw new InvalidArgumentError(`${at}: the campaign asset is archived; save the image again to use it`);
    if (asset.accountId.toLowerCase() !== accountId.toLowerCase())
      throw new InvalidArgumentError(
        `${at} is a campaign asset of ad account ${asset.accountId}, not of the optimizer's ad account ${accountId}; save the image for that account to use it`,
      );
  }
}
