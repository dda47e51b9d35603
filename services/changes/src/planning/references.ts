/**
 * The references a change's body makes to things of the ad account (its object's rules declare
 * them: `references` in domain/plan.ts), resolved when the change is planned, since the platform
 * would refuse a missing one only when the approved change is applied. One reader per kind of
 * reference: a new kind is a declaration in the object's rules and a reader in READERS.
 */
import type { Account } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import { isRecord } from '@adsmcp/runtime/json';
import type { Principal } from '@adsmcp/runtime/principal';
import { checkCropSquare, type ImageSize } from '../domain/ad-rules.ts';
import { type PlatformObject, type Reference, type Rules, referencesOf } from '../domain/plan.ts';
import { creativesOf, type Upload } from '../domain/uploads.ts';
import { type Marketing, pinUploads } from './campaign-assets.ts';
import { platformGet, platformList, type Upstream } from './platform-reads.ts';

/** Where references are read: the account, on the platform and the marketing service, for `p`. */
export interface ReferenceReads {
  upstream: Upstream;
  marketing: Marketing | undefined;
  p: Principal;
  account: Account;
}

/** The change whose references are read: its body, its object now, and the result reviewed. */
export interface Referencing {
  body: PlatformObject;
  live: PlatformObject | undefined;
  reviewed: PlatformObject;
}

type Reader<K extends Reference['kind']> = (
  reads: ReferenceReads,
  ref: Extract<Reference, { kind: K }>,
  change: Referencing,
) => Promise<Upload[]>;

const READERS: { [K in Reference['kind']]: Reader<K> } = {
  'creative-images': creativeImages,
  audiences: async (reads, ref, { body }) => {
    await requireMergeSources(reads, body, ref.field);
    return [];
  },
  pixels: async (reads, ref, { body }) => {
    await requirePixels(reads, body, ref.field);
    return [];
  },
};

/**
 * resolveReferences reads every reference `rules` declare for the change and refuses a missing
 * one, naming its field; it returns the campaign assets pinned for upload (none without images).
 */
export async function resolveReferences(
  reads: ReferenceReads,
  rules: Rules,
  change: Referencing,
): Promise<Upload[]> {
  const uploads: Upload[] = [];
  for (const ref of referencesOf(rules)) {
    const read = READERS[ref.kind] as Reader<Reference['kind']>;
    uploads.push(...(await read(reads, ref, change)));
  }
  return uploads;
}

/**
 * The images of the change's creatives: each platform file must be the account's, each campaign
 * asset is pinned (for review, uploaded only on apply), and a crop the change gives is square in
 * pixels of the image it crops, whose size is known only once both are read.
 */
async function creativeImages(
  reads: ReferenceReads,
  _ref: Reference,
  { body, live, reviewed }: Referencing,
): Promise<Upload[]> {
  const files = await requireFiles(reads, body, live);
  const uploads = await pinUploads(reads.marketing, reads.p, reads.account.accountId, body);
  await requireSquareCrops(reads, reviewed, body, uploads, files);
  return uploads;
}

/** A platform file's upright size (GET /files/{file_id} gives width and height), when it says. */
function fileSize(bodyJson: string): ImageSize | undefined {
  let file: unknown;
  try {
    file = JSON.parse(bodyJson);
  } catch {
    return undefined;
  }
  if (!isRecord(file)) return undefined;
  const { width, height } = file;
  const side = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n) && n > 0;
  return side(width) && side(height) ? { width, height } : undefined;
}

/** The file `fileId` of the account, read on the platform; `missing` when it has none. */
async function readFile(
  { upstream, p, account }: ReferenceReads,
  fileId: string,
  field: string,
): Promise<ImageSize | undefined> {
  const res = await platformGet(
    upstream,
    p,
    account,
    `/files/${encodeURIComponent(fileId)}`,
    field,
    () =>
      new InvalidArgumentError(
        `${field}: ad account ${account.name} has no file with this id; name an image the account has (an ad's creative.file_id), or a saved campaign asset as asset_id, uploaded when the change is applied`,
      ),
  );
  return fileSize(res.bodyJson);
}

/**
 * requireFiles refuses a change whose creatives name an image file (`file_id`) that the ad account
 * does not have, naming the creative: the platform would refuse it only when the approved change
 * is applied. Each file is read once (GET /files/{file_id}); the file the live object already
 * shows is not read, since the object keeps it. Returns the size of each file read, when the
 * platform gave it.
 */
async function requireFiles(
  reads: ReferenceReads,
  body: Record<string, unknown>,
  live: Record<string, unknown> | undefined,
): Promise<Map<string, ImageSize | undefined>> {
  const liveCreative = live?.creative;
  const liveFile = isRecord(liveCreative) ? liveCreative.file_id : undefined;
  const read = new Map<string, ImageSize | undefined>();
  for (const { at, creative } of creativesOf(body)) {
    const fileId = creative.file_id;
    if (typeof fileId !== 'string' || fileId === liveFile || read.has(fileId)) continue;
    read.set(fileId, await readFile(reads, fileId, `\`${at}.file_id\` ${fileId}`));
  }
  return read;
}

/**
 * requireSquareCrops refuses a creative of `result` (the object the change would produce) whose
 * image_crop is not square in pixels of the image it crops: a campaign asset pinned in `uploads`,
 * or a platform file, from `files` (read by requireFiles) or read now (the file the ad keeps).
 * Only a crop the change gives is checked; an image whose size the platform does not give is
 * left to the platform.
 */
async function requireSquareCrops(
  reads: ReferenceReads,
  result: Record<string, unknown>,
  patch: Record<string, unknown>,
  uploads: readonly Upload[],
  files: Map<string, ImageSize | undefined>,
): Promise<void> {
  const changed = new Map(creativesOf(patch).map(({ at, creative }) => [at, creative]));
  for (const { at, creative } of creativesOf(result)) {
    if (!isRecord(creative.image_crop)) continue;
    // Only a crop the change gives: one the ad keeps is the platform's, accepted for the image it
    // was made for; on a new image (an optimizer's variant changes only the image) the platform
    // judges it, as it did before a crop was checked in pixels.
    const given = changed.get(at);
    if (given === undefined || !('image_crop' in given)) continue;
    const assetId = typeof creative.asset_id === 'string' ? creative.asset_id.toLowerCase() : undefined;
    const fileId = typeof creative.file_id === 'string' ? creative.file_id : undefined;
    let image: (ImageSize & { what: string }) | undefined;
    if (assetId !== undefined) {
      const pinned = uploads.find((u) => u.asset_id === assetId);
      if (pinned !== undefined)
        image = { width: pinned.width, height: pinned.height, what: `campaign asset ${assetId}` };
    } else if (fileId !== undefined) {
      const size = files.has(fileId)
        ? files.get(fileId)
        : await readFile(reads, fileId, `\`${at}.file_id\` ${fileId}`);
      if (size !== undefined) image = { ...size, what: `file ${fileId}` };
    }
    if (image !== undefined) checkCropSquare(creative, image, patch);
  }
}

/** The string items of `body[field]`, with their index. */
function idsAt(body: Record<string, unknown>, field: string): { id: string; i: number }[] {
  const ids = body[field];
  if (!Array.isArray(ids)) return [];
  return ids.flatMap((id, i) => (typeof id === 'string' ? [{ id, i }] : []));
}

/**
 * requireMergeSources refuses a merge naming a custom audience the ad account does not have, or
 * an archived one, naming the item: the platform would refuse it only when the approved change is
 * applied. The sources are read in one list request filtered by their ids.
 */
async function requireMergeSources(
  { upstream, p, account }: ReferenceReads,
  body: Record<string, unknown>,
  field: string,
): Promise<void> {
  const ids = idsAt(body, field);
  if (ids.length === 0) return;
  const path = '/custom_audiences';
  const query = [
    ...ids.map(({ id }) => ({ name: 'custom_audience_ids', value: id })),
    { name: 'limit', value: '500' },
  ];
  const page = await platformList(upstream, p, account, path, 'the audiences to merge', query);
  const found = new Map(page.data.map((a) => [a.id, a]));
  for (const { id, i } of ids) {
    const at = `\`body.${field}[${i}]\` ${id}`;
    const audience = found.get(id);
    if (audience === undefined) {
      throw new InvalidArgumentError(
        `${at}: ad account ${account.name} has no custom audience with this id; ads_list_custom_audiences lists them`,
      );
    }
    if (audience.status === 'archived') {
      throw new InvalidArgumentError(
        `${at}: custom audience "${String(audience.name)}" is archived; an archived audience cannot be merged`,
      );
    }
  }
}

/** The most pages of pixels read to find a setting's sources (500 a page). */
const MAX_PIXEL_PAGES = 20;

/**
 * requirePixels refuses a conversion event setting whose source_ids name a pixel the ad account
 * does not have, naming the item: the platform would refuse it only when the approved change is
 * applied. The account's pixels are listed page by page until every source is found.
 */
async function requirePixels(
  { upstream, p, account }: ReferenceReads,
  body: Record<string, unknown>,
  field: string,
): Promise<void> {
  const ids = idsAt(body, field);
  const missing = new Set(ids.map(({ id }) => id));
  const path = '/conversions/pixels';
  let after: string | undefined;
  for (let page = 0; missing.size > 0 && page < MAX_PIXEL_PAGES; page++) {
    const query = [{ name: 'limit', value: '500' }];
    if (after !== undefined) query.push({ name: 'after', value: after });
    const list = await platformList(upstream, p, account, path, 'the pixels of the setting', query);
    for (const pixel of list.data) if (typeof pixel.id === 'string') missing.delete(pixel.id);
    after = list.after;
    // The last page read: what is still missing is not the account's.
    if (after === undefined) {
      const first = ids.find(({ id }) => missing.has(id));
      if (first === undefined) return;
      throw new InvalidArgumentError(
        `\`body.${field}[${first.i}]\` ${first.id}: ad account ${account.name} has no pixel with this id; ads_list_conversion_sources lists them`,
      );
    }
  }
}
