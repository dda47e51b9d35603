/**
 * Campaign images a change puts on the ad platform. A creative in a change's body may name a
 * saved campaign asset (`asset_id`) where the platform wants an uploaded file (`file_id`): the
 * platform takes images only as files uploaded to it (POST /files), and nothing may reach it
 * before a person approves. So the image is pinned when the change is prepared (its sha256, in the
 * change's digest), shown to the person who reviews it, and uploaded only when the approved change
 * is applied; the creative is then sent with the file's id in the asset's place. Nothing else of
 * the body changes between review and apply.
 */

import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import { isUuid } from '@adsmcp/runtime/ids';
import { isRecord } from '@adsmcp/runtime/json';

/** One campaign asset a change uploads, as pinned when it was prepared. */
export interface Upload {
  asset_id: string;
  name: string;
  mime_type: string;
  byte_size: number;
  width: number;
  height: number;
  /** SHA-256 (hex) of the image's bytes: the image reviewed is the image uploaded. */
  sha256: string;
  /** The platform's file id once uploaded; '' before. */
  file_id: string;
}

type Fields = Record<string, unknown>;

/**
 * The creatives of a change's body, each with how the body names it: an ad's `creative`, and the
 * creative of each operation of a bulk job. These are the only places a platform body holds one.
 */
export function creativesOf(body: Fields): { at: string; creative: Fields }[] {
  const found: { at: string; creative: Fields }[] = [];
  if (isRecord(body.creative)) found.push({ at: 'body.creative', creative: body.creative });
  if (Array.isArray(body.operations)) {
    body.operations.forEach((op, i) => {
      if (isRecord(op) && isRecord(op.body) && isRecord(op.body.creative))
        found.push({ at: `body.operations[${i}].body.creative`, creative: op.body.creative });
    });
  }
  return found;
}

/** A creative that names a campaign asset, with the asset's id in lower case. */
export interface AssetRef {
  at: string;
  assetId: string;
}

/**
 * assetRefs finds the creatives that name a campaign asset and checks them: the id must be a UUID,
 * and a creative names one image, so not a `file_id` beside it.
 */
export function assetRefs(body: Fields): AssetRef[] {
  const refs: AssetRef[] = [];
  for (const { at, creative } of creativesOf(body)) {
    if (!('asset_id' in creative)) continue;
    const id = creative.asset_id;
    if (typeof id !== 'string' || !isUuid(id))
      throw new InvalidArgumentError(`\`${at}.asset_id\` must be the UUID of a saved campaign asset`);
    if ('file_id' in creative)
      throw new InvalidArgumentError(
        `\`${at}\` names both file_id and asset_id: a creative shows one image, give one of them`,
      );
    refs.push({ at, assetId: id.toLowerCase() });
  }
  return refs;
}

/**
 * withFileIds returns `value` with each creative's `asset_id` replaced by the `file_id` its asset
 * was uploaded as: the body sent on apply, and the reviewed result the answer is held against.
 * It throws when an asset has no file yet, so a body naming an asset is never sent as it is.
 */
export function withFileIds(value: Fields, uploads: readonly Upload[]): Fields {
  const copy = structuredClone(value);
  for (const { at, creative } of creativesOf(copy)) {
    if (!('asset_id' in creative)) continue;
    const id = String(creative.asset_id).toLowerCase();
    const fileId = uploads.find((u) => u.asset_id === id)?.file_id ?? '';
    if (fileId === '') throw new Error(`${at}.asset_id ${id} has not been uploaded`);
    delete creative.asset_id;
    creative.file_id = fileId;
  }
  return copy;
}

/**
 * What the digest adds for the images a change uploads: each asset with the sha256 pinned at
 * prepare, in order of asset id. Empty for a change without images, whose digest stays as it was.
 */
export function uploadsDigestPart(uploads: readonly Pick<Upload, 'asset_id' | 'sha256'>[]): string {
  if (uploads.length === 0) return '';
  const pins = [...uploads]
    .sort((a, b) => (a.asset_id < b.asset_id ? -1 : a.asset_id > b.asset_id ? 1 : 0))
    .map((u) => `${u.asset_id}:${u.sha256}`);
  return `\nuploads ${pins.join(',')}`;
}

/** The idempotency key of one asset's upload for one change: a retried apply uploads it once. */
export function uploadKeyFor(changeId: string, assetId: string): string {
  return `change-${changeId}-file-${assetId}`;
}
