/**
 * The campaign assets a change uploads, read from the marketing service, which keeps them: once
 * when the change is prepared (each asset must be a live one of the change's ad account, and its
 * image is pinned by its sha256), and again when it is applied (the image must still be the one
 * pinned). Both reads are made as this service's worker, with the read scope only, on behalf of
 * the caller's workspace.
 */
import { createHash } from 'node:crypto';
import type { AssetService, CampaignAsset } from '@adsmcp/proto/marketing/v1/assets_pb';
import {
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  UnavailableError,
} from '@adsmcp/runtime/errors';
import type { Principal } from '@adsmcp/runtime/principal';
import { readingFor } from '@adsmcp/runtime/service-client';
import { type CallOptions, type Client, Code, ConnectError } from '@connectrpc/connect';
import { assetRefs, type Upload } from '../domain/uploads.ts';

export type Marketing = Client<typeof AssetService>;

type Read =
  | { found: true; asset: CampaignAsset; content: Uint8Array; sha256: string }
  | { found: false; why: string };

/** An asset's stored image, or why there is none to use: unknown, or archived. */
async function readAsset(marketing: Marketing, assetId: string, options: CallOptions): Promise<Read> {
  try {
    const { asset, content } = await marketing.getCampaignAssetContent({ assetId }, options);
    if (asset === undefined) throw new UnavailableError('the marketing service answered without an asset');
    return { found: true, asset, content, sha256: createHash('sha256').update(content).digest('hex') };
  } catch (err) {
    const e = ConnectError.from(err);
    if (e.code === Code.NotFound)
      return { found: false, why: 'no campaign asset with this id in this workspace' };
    if (e.code === Code.FailedPrecondition)
      return { found: false, why: 'the campaign asset is archived; save the image again to use it' };
    throw err;
  }
}

/**
 * pinUploads reads every campaign asset the body's creatives name and returns them pinned, each
 * once; none for a body without one. It refuses an unknown or archived asset and one saved for
 * another ad account, naming the creative.
 */
export async function pinUploads(
  marketing: Marketing | undefined,
  p: Principal,
  accountId: string,
  body: Record<string, unknown>,
): Promise<Upload[]> {
  const refs = assetRefs(body);
  if (refs.length === 0) return [];
  if (marketing === undefined)
    throw new FailedPreconditionError(
      `\`${refs[0]?.at}.asset_id\`: campaign images cannot be uploaded, since this deployment of the changes service has no MARKETING_URL`,
    );
  const uploads = new Map<string, Upload>();
  for (const { at, assetId } of refs) {
    if (uploads.has(assetId)) continue;
    const read = await readAsset(marketing, assetId, readingFor(p));
    if (!read.found) {
      const message = `\`${at}.asset_id\` ${assetId}: ${read.why}`;
      throw read.why.startsWith('no ') ? new NotFoundError(message) : new FailedPreconditionError(message);
    }
    const { asset, content, sha256 } = read;
    if (asset.accountId.toLowerCase() !== accountId.toLowerCase())
      throw new InvalidArgumentError(
        `\`${at}.asset_id\` ${assetId} is a campaign asset of another ad account; save the image for this account to use it`,
      );
    uploads.set(assetId, {
      asset_id: assetId,
      name: asset.name,
      mime_type: asset.mimeType,
      byte_size: content.byteLength,
      width: asset.width,
      height: asset.height,
      sha256,
      file_id: '',
    });
  }
  return [...uploads.values()];
}

/**
 * pinnedContent reads an asset's image to upload it, and refuses it unless it is the image that
 * was pinned (and reviewed) when the change was prepared.
 */
export async function pinnedContent(
  marketing: Marketing | undefined,
  upload: Upload,
  options: CallOptions,
): Promise<Uint8Array> {
  const at = `campaign asset "${upload.name}"`;
  if (marketing === undefined)
    throw new FailedPreconditionError(
      `${at} cannot be uploaded: this deployment of the changes service has no MARKETING_URL; the change was not sent`,
    );
  const read = await readAsset(marketing, upload.asset_id, options);
  if (!read.found)
    throw new FailedPreconditionError(
      `${at} (${upload.asset_id}) cannot be uploaded: ${read.why}; the change was not sent`,
    );
  if (read.sha256 !== upload.sha256)
    throw new FailedPreconditionError(
      `${at} (${upload.asset_id}) is no longer the image that was reviewed (sha256 ${upload.sha256}, now ${read.sha256}); the change was not sent`,
    );
  return read.content;
}
