/**
 * A campaign image asset and its rules: which asset an archive or a read names, which revision an
 * archive must name, and what a save must carry. The bounds of the arguments (name, URL, mime
 * type, pages) are the requests' field rules, checked by the server for every caller, and the base64
 * text's the tool's input schema; the image itself is checked by images/campaign-image.ts.
 */
import {
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  StaleRevisionError,
} from '@adsmcp/runtime/errors';
import { isUuid } from '@adsmcp/runtime/ids';
import type { ImageType } from '../images/campaign-image.ts';
import { quotedStart } from './code-points.ts';

export interface CampaignAsset {
  workspaceId: string;
  assetId: string;
  accountId: string;
  name: string;
  mimeType: ImageType;
  width: number;
  height: number;
  byteSize: number;
  sha256: string;
  sourceUrl: string | null;
  revision: number;
  archivedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

const quoted = quotedStart;

/** validateAssetId checks an asset_id and returns it in canonical (lower) case. */
export function validateAssetId(assetId: string): string {
  if (!isUuid(assetId)) throw new InvalidArgumentError(`asset_id must be a UUID (got ${quoted(assetId)})`);
  return assetId.toLowerCase();
}

/** Where a save's image comes from: exactly one of the two. */
export type AssetSource = { kind: 'content'; bytes: Uint8Array } | { kind: 'url'; url: string };

/** validateSource checks that a save carries exactly one of content_base64 and source_url. */
export function validateSource(req: { content?: Uint8Array; sourceUrl?: string }): AssetSource {
  if (req.content !== undefined && req.sourceUrl !== undefined) {
    throw new InvalidArgumentError('send exactly one of content_base64 and source_url, not both');
  }
  if (req.content !== undefined) return { kind: 'content', bytes: req.content };
  if (req.sourceUrl !== undefined) return { kind: 'url', url: req.sourceUrl };
  throw new InvalidArgumentError(
    'send exactly one of content_base64 (the image) and source_url (where to fetch it)',
  );
}

/**
 * checkArchive throws unless the stored asset may be archived with the given revision: it must
 * exist, not be archived already, and be at that revision.
 */
export function checkArchive(
  archive: { assetId: string; expectedRevision: number },
  current: Pick<CampaignAsset, 'assetId' | 'revision' | 'archivedAt'> | undefined,
): void {
  if (current === undefined) throw new NotFoundError(`campaign asset ${archive.assetId} does not exist`);
  if (current.archivedAt !== null) {
    throw new FailedPreconditionError(
      `campaign asset ${current.assetId} is already archived (at revision ${current.revision})`,
    );
  }
  if (archive.expectedRevision !== current.revision) {
    throw new StaleRevisionError(current.revision, 'campaign asset');
  }
}

/**
 * checkDeliverable throws unless the stored asset's image may be served: it must exist and not be
 * archived (archiving revokes every delivery link at once).
 */
export function checkDeliverable<A extends Pick<CampaignAsset, 'assetId' | 'archivedAt'>>(
  assetId: string,
  current: A | undefined,
): A {
  if (current === undefined) throw new NotFoundError(`campaign asset ${assetId} does not exist`);
  if (current.archivedAt !== null) {
    throw new FailedPreconditionError(
      `campaign asset ${assetId} is archived; its delivery links no longer work`,
    );
  }
  return current;
}
