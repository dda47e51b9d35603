/**
 * What the changes service reads from the ad platform, through the upstream-proxy, while it plans
 * a change: the account (it must be the workspace's and allow changes) and the live object. It
 * reads as itself (its worker key) on behalf of the caller's workspace, with read access only.
 */
import type { Account, UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import {
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  PermissionDeniedError,
  UnavailableError,
} from '@adsmcp/runtime/errors';
import { describePlatformRefusal, isRecord } from '@adsmcp/runtime/platform-error';
import type { Principal } from '@adsmcp/runtime/principal';
import { readingFor } from '@adsmcp/runtime/service-client';
import type { Client } from '@connectrpc/connect';
import { checkCropSquare, type ImageSize } from '../domain/ad-rules.ts';
import { creativesOf, type Upload } from '../domain/uploads.ts';

export type Upstream = Client<typeof UpstreamService>;

/** The account `accountId` of `p`'s workspace, for planning reads that need no write access. */
export async function readableAccount(upstream: Upstream, p: Principal, accountId: string): Promise<Account> {
  // The upstream-proxy, which owns the connections, answers NotFound for another workspace's.
  const { account } = await upstream.getAccount({ accountId }, readingFor(p));
  if (account === undefined) throw new UnavailableError('the upstream-proxy answered without an account');
  return account;
}

/** Why changes cannot be prepared for `account`, or undefined when they can. */
export function accountRefusal(account: Account): string | undefined {
  return account.canWrite
    ? undefined
    : `the connection to ad account ${account.name} is read-only; changes cannot be prepared for it`;
}

/** The account `accountId` of `p`'s workspace, which must allow changes. */
export async function writableAccount(upstream: Upstream, p: Principal, accountId: string): Promise<Account> {
  const account = await readableAccount(upstream, p, accountId);
  const refusal = accountRefusal(account);
  if (refusal !== undefined) throw new PermissionDeniedError(refusal);
  return account;
}

/**
 * How a plan treats the caller's right to change the account: a prepare enforces it (refused before
 * anything is read); a preflight, which is a read, plans anyway and reports why it could not prepare.
 */
export type AccessCheck = 'enforce' | 'report';

/** The account to plan on: writable when access is enforced, readable when it is only reported. */
export function accountToPlan(
  upstream: Upstream,
  p: Principal,
  accountId: string,
  access: AccessCheck,
): Promise<Account> {
  return access === 'enforce'
    ? writableAccount(upstream, p, accountId)
    : readableAccount(upstream, p, accountId);
}

/**
 * platformGet reads `path` on `account` as `p`, with read access only, and returns the platform's
 * answer when it is a success. A 404 throws `missing()`; another refusal is Unavailable when it
 * is worth retrying (5xx, 429) and otherwise FailedPrecondition, saying `what` could not be read.
 */
async function platformGet(
  upstream: Upstream,
  p: Principal,
  account: Account,
  path: string,
  what: string,
  missing: () => Error,
  query: { name: string; value: string }[] = [],
): Promise<{ bodyJson: string }> {
  const res = await upstream.call(
    { accountId: account.accountId, method: 'GET', path, query, bodyJson: '', idempotencyKey: '' },
    readingFor(p),
  );
  if (res.status === 404) throw missing();
  if (res.status < 200 || res.status > 299) {
    const reason = describePlatformRefusal(res.status, res.bodyJson);
    if (res.status >= 500 || res.status === 429) throw new UnavailableError(`${reason}; try again shortly`);
    throw new FailedPreconditionError(`${what} could not be read: ${reason}`);
  }
  return res;
}

/** The object at `path` as the platform has it now; NotFound names `what` in `account`. */
export async function liveObject(
  upstream: Upstream,
  p: Principal,
  account: Account,
  path: string,
  what: string,
): Promise<Record<string, unknown>> {
  const res = await platformGet(
    upstream,
    p,
    account,
    path,
    `the ${what}`,
    () => new NotFoundError(`no ${what} in ad account ${account.name}`),
  );
  let body: unknown;
  try {
    body = JSON.parse(res.bodyJson);
  } catch {
    body = undefined;
  }
  if (!isRecord(body))
    throw new UnavailableError(`the ad platform answered GET ${path} with an unexpected shape`);
  return body;
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
  upstream: Upstream,
  p: Principal,
  account: Account,
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
export async function requireFiles(
  upstream: Upstream,
  p: Principal,
  account: Account,
  body: Record<string, unknown>,
  live: Record<string, unknown> | undefined,
): Promise<Map<string, ImageSize | undefined>> {
  const liveCreative = live?.creative;
  const liveFile = isRecord(liveCreative) ? liveCreative.file_id : undefined;
  const read = new Map<string, ImageSize | undefined>();
  for (const { at, creative } of creativesOf(body)) {
    const fileId = creative.file_id;
    if (typeof fileId !== 'string' || fileId === liveFile || read.has(fileId)) continue;
    read.set(fileId, await readFile(upstream, p, account, fileId, `\`${at}.file_id\` ${fileId}`));
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
export async function requireSquareCrops(
  upstream: Upstream,
  p: Principal,
  account: Account,
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
        : await readFile(upstream, p, account, fileId, `\`${at}.file_id\` ${fileId}`);
      if (size !== undefined) image = { ...size, what: `file ${fileId}` };
    }
    if (image !== undefined) checkCropSquare(creative, image, patch);
  }
}

/** The `data` and `paging.after` of a platform list page; anything else is the platform's fault. */
function listPage(
  path: string,
  bodyJson: string,
): { data: Record<string, unknown>[]; after: string | undefined } {
  let body: unknown;
  try {
    body = JSON.parse(bodyJson);
  } catch {
    body = undefined;
  }
  if (!isRecord(body) || !Array.isArray(body.data)) {
    throw new UnavailableError(`the ad platform answered GET ${path} with an unexpected shape`);
  }
  const paging = isRecord(body.paging) ? body.paging : {};
  const more = paging.has_more === true && typeof paging.after === 'string';
  return { data: body.data.filter(isRecord), after: more ? (paging.after as string) : undefined };
}

/** One page of the platform list `path` (GET with `query`), read for `what`, as the caller. */
async function platformList(
  upstream: Upstream,
  p: Principal,
  account: Account,
  path: string,
  what: string,
  query: { name: string; value: string }[],
): Promise<{ data: Record<string, unknown>[]; after: string | undefined }> {
  const res = await platformGet(
    upstream,
    p,
    account,
    path,
    what,
    () => new UnavailableError(`the ad platform has no ${path} listing`),
    query,
  );
  return listPage(path, res.bodyJson);
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
export async function requireMergeSources(
  upstream: Upstream,
  p: Principal,
  account: Account,
  body: Record<string, unknown>,
): Promise<void> {
  const ids = idsAt(body, 'custom_audience_ids');
  if (ids.length === 0) return;
  const path = '/custom_audiences';
  const query = [
    ...ids.map(({ id }) => ({ name: 'custom_audience_ids', value: id })),
    { name: 'limit', value: '500' },
  ];
  const page = await platformList(upstream, p, account, path, 'the audiences to merge', query);
  const found = new Map(page.data.map((a) => [a.id, a]));
  for (const { id, i } of ids) {
    const field = `\`body.custom_audience_ids[${i}]\` ${id}`;
    const audience = found.get(id);
    if (audience === undefined) {
      throw new InvalidArgumentError(
        `${field}: ad account ${account.name} has no custom audience with this id; ads_list_custom_audiences lists them`,
      );
    }
    if (audience.status === 'archived') {
      throw new InvalidArgumentError(
        `${field}: custom audience "${String(audience.name)}" is archived; an archived audience cannot be merged`,
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
export async function requirePixels(
  upstream: Upstream,
  p: Principal,
  account: Account,
  body: Record<string, unknown>,
): Promise<void> {
  const ids = idsAt(body, 'source_ids');
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
        `\`body.source_ids[${first.i}]\` ${first.id}: ad account ${account.name} has no pixel with this id; ads_list_conversion_sources lists them`,
      );
    }
  }
}
