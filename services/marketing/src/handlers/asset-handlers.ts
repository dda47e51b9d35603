/** AssetService: proto <-> domain for the workspace's campaign image assets. */

import { randomUUID } from 'node:crypto';
import type { AssetService, CampaignAssetSchema } from '@adsmcp/proto/marketing/v1/assets_pb';
import { principalOf } from '@adsmcp/runtime/connect-server';
import { inTransaction, type Pool } from '@adsmcp/runtime/db';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { ServiceImpl } from '@connectrpc/connect';
import { requireReader, requireWriter } from '../domain/access.ts';
import {
  type CampaignAsset,
  checkArchive,
  checkDeliverable,
  nextOffset,
  pageOf,
  validateAssetId,
  validateSource,
} from '../domain/campaign-asset.ts';
import { checkImage } from '../images/campaign-image.ts';
import { fetchImage, type ImageFetch } from '../images/remote-image.ts';
import { archiveAsset, findAssetContent, insertAsset, listAssets, lockAsset } from '../store/asset-store.ts';

export interface AssetHandlerDeps {
  pool: Pool;
  /** How a source_url is read: the project's request-forgery-safe fetcher (tests inject one). */
  fetch?: ImageFetch;
}

function toMessage(a: CampaignAsset): MessageInitShape<typeof CampaignAssetSchema> {
  return {
    assetId: a.assetId,
    accountId: a.accountId,
    name: a.name,
    mimeType: a.mimeType,
    width: a.width,
    height: a.height,
    byteSize: a.byteSize,
    sha256: a.sha256,
    ...(a.sourceUrl === null ? {} : { sourceUrl: a.sourceUrl }),
    revision: a.revision,
    archived: a.archivedAt !== null,
    createdAt: a.createdAt.toISOString(),
    updatedAt: a.updatedAt.toISOString(),
    ...(a.archivedAt === null ? {} : { archivedAt: a.archivedAt.toISOString() }),
  };
}

/** createAssetHandlers builds the AssetService implementation from its dependencies. */
export function createAssetHandlers(deps: AssetHandlerDeps): ServiceImpl<typeof AssetService> {
  return {
    async saveCampaignAsset(req, ctx) {
      const principal = principalOf(ctx);
      requireWriter(principal);
      const source = validateSource({
        ...(req.contentBase64 === undefined ? {} : { content: req.contentBase64 }),
        ...(req.sourceUrl === undefined ? {} : { sourceUrl: req.sourceUrl }),
      });
      // The image is read, checked and re-encoded before the database is touched.
      const image =
        source.kind === 'content'
          ? await checkImage(source.bytes, 'content_base64', req.mimeType)
          : await checkImage(
              await fetchImage(deps.fetch, source.url),
              'the image at source_url',
              req.mimeType,
            );
      const asset = await insertAsset(deps.pool, {
        workspaceId: principal.workspaceId,
        assetId: randomUUID(),
        accountId: req.accountId,
        name: req.name,
        mimeType: image.mimeType,
        width: image.width,
        height: image.height,
        content: image.content,
        sha256: image.sha256,
        sourceUrl: source.kind === 'url' ? source.url : null,
      });
      return { asset: toMessage(asset), warnings: image.warnings };
    },

    async listCampaignAssets(req, ctx) {
      const principal = principalOf(ctx);
      requireReader(principal);
      const page = pageOf({
        ...(req.offset === undefined ? {} : { offset: req.offset }),
        ...(req.limit === undefined ? {} : { limit: req.limit }),
      });
      const { assets, total } = await listAssets(deps.pool, principal.workspaceId, req.accountId, page);
      const next = nextOffset(page.offset, assets.length, total);
      return { assets: assets.map(toMessage), total, ...(next === undefined ? {} : { nextOffset: next }) };
    },

    async archiveCampaignAsset(req, ctx) {
      const principal = principalOf(ctx);
      requireWriter(principal);
      const assetId = validateAssetId(req.assetId);
      const workspaceId = principal.workspaceId;
      return inTransaction(deps.pool, async (tx) => {
        checkArchive(
          { assetId, expectedRevision: req.expectedRevision },
          await lockAsset(tx, workspaceId, assetId),
        );
        const archived = await archiveAsset(tx, workspaceId, assetId, req.expectedRevision);
        if (archived === undefined) throw new Error(`campaign asset ${assetId} changed while locked`);
        return { asset: toMessage(archived) };
      });
    },

    async getCampaignAssetContent(req, ctx) {
      const principal = principalOf(ctx);
      requireReader(principal);
      const assetId = validateAssetId(req.assetId);
      // Asked on every delivery: an archived asset is refused from the moment it is archived.
      const asset = checkDeliverable(
        assetId,
        await findAssetContent(deps.pool, principal.workspaceId, assetId),
      );
      return { asset: toMessage(asset), content: asset.content };
    },
  };
}
