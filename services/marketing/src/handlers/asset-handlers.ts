/** AssetService: proto <-> domain for the workspace's campaign image assets. */

import { randomUUID } from 'node:crypto';
import type {
  AssetService,
  CampaignAssetSchema,
  SourceImageSchema,
} from '@adsmcp/proto/marketing/v1/assets_pb';
import { principalOf } from '@adsmcp/runtime/connect-server';
import { inTransaction, type Pool } from '@adsmcp/runtime/db';
import { DomainError, InvalidArgumentError } from '@adsmcp/runtime/errors';
import { canonicalId } from '@adsmcp/runtime/ids';
import { nextOffset, pageOf } from '@adsmcp/runtime/paging';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import {
  type CampaignAsset,
  checkArchive,
  checkDeliverable,
  validateAssetId,
  validateSource,
} from '../domain/campaign-asset.ts';
import {
  assetNameFromUrl,
  FETCHES_AT_ONCE,
  NOT_FETCHED,
  validateSourceImages,
} from '../domain/source-images.ts';
import { type CheckedImage, checkImage } from '../images/campaign-image.ts';
import { fetchImage, type ImageFetch } from '../images/remote-image.ts';
import {
  archiveAsset,
  findAssetContent,
  findAssets,
  findLiveBySource,
  insertAsset,
  listAssets,
  lockAsset,
  lockSource,
} from '../store/asset-store.ts';

/** How many assets GetCampaignAssets answers for at once: a run completes at most 100 variants. */
const MAX_ASSET_IDS = 100;

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

/** What became of one source URL: its asset (reused or saved now), or why there is none. */
interface SourceOutcome {
  asset: CampaignAsset | undefined;
  savedNow: boolean;
  error: string;
}

/** The outcome of a URL the call did not get to (or stopped fetching) because it ended. */
const NOT_FETCHED_OUTCOME: SourceOutcome = { asset: undefined, savedNow: false, error: NOT_FETCHED };

function toSourceImage(url: string, o: SourceOutcome): MessageInitShape<typeof SourceImageSchema> {
  return {
    sourceUrl: url,
    ...(o.asset === undefined ? {} : { asset: toMessage(o.asset) }),
    savedNow: o.savedNow,
    error: o.error,
  };
}

/**
 * eachAtMost runs `fn` on the items in order, at most `limit` at a time. Once `signal` is aborted
 * (the call was cancelled or its deadline passed) no further item is started: its answer would
 * reach no one. Once `fn` fails none is started either; those running are awaited (so nothing is
 * left writing after the call has answered) and the first failure is thrown.
 */
async function eachAtMost<T>(
  items: readonly T[],
  limit: number,
  signal: AbortSignal,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) {
      if (failure !== undefined || signal.aborted) return;
      try {
        await fn(items[i] as T);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure !== undefined) throw failure.error;
}

/**
 * saveFromSource fetches and checks the image at `url` as SaveCampaignAsset does and saves it as a
 * new asset of the account, unless another call saved one from the same URL while this one was
 * fetching: then that asset is the answer and nothing is stored. A refusal of the image (it could
 * not be fetched, or it is not a PNG or JPEG within the limits) is the outcome's error; any other
 * failure (the database, a bug) is thrown and fails the call.
 */
async function saveFromSource(
  deps: AssetHandlerDeps,
  workspaceId: string,
  accountId: string,
  url: string,
  signal: AbortSignal,
): Promise<SourceOutcome> {
  let image: CheckedImage;
  try {
    image = await checkImage(await fetchImage(deps.fetch, url, signal), 'the image at source_url', undefined);
  } catch (err) {
    // A fetch stopped because the call ended: the image was not refused, only not fetched.
    if (signal.aborted) return NOT_FETCHED_OUTCOME;
    if (err instanceof DomainError) return { asset: undefined, savedNow: false, error: err.message };
    throw err;
  }
  return inTransaction(deps.pool, async (tx) => {
    // Looked up again under the lock: the first lookup ran before the (slow) fetch.
    await lockSource(tx, workspaceId, accountId, url);
    const meanwhile = (await findLiveBySource(tx, workspaceId, accountId, [url])).get(url);
    if (meanwhile !== undefined) return { asset: meanwhile, savedNow: false, error: '' };
    const asset = await insertAsset(tx, {
      workspaceId,
      assetId: randomUUID(),
      accountId,
      name: assetNameFromUrl(url),
      mimeType: image.mimeType,
      width: image.width,
      height: image.height,
      content: image.content,
      sha256: image.sha256,
      sourceUrl: url,
    });
    return { asset, savedNow: true, error: '' };
  });
}

// Each RPC's function takes its request and answer types from the generated service, so a moved
// function is checked exactly as its table entry was.
type Impl = ServiceImpl<typeof AssetService>;
type Req<K extends keyof Impl> = Parameters<Impl[K]>[0];
type Res<K extends keyof Impl> = Promise<Awaited<ReturnType<Impl[K]>>>;

/** createAssetHandlers builds the AssetService implementation from its dependencies. */
export function createAssetHandlers(deps: AssetHandlerDeps): ServiceImpl<typeof AssetService> {
  return {
    saveCampaignAsset: (req, ctx) => saveCampaignAsset(deps, req, ctx),
    listCampaignAssets: (req, ctx) => listCampaignAssets(deps, req, ctx),
    archiveCampaignAsset: (req, ctx) => archiveCampaignAsset(deps, req, ctx),
    getCampaignAssetContent: (req, ctx) => getCampaignAssetContent(deps, req, ctx),
    saveSourceImages: (req, ctx) => saveSourceImages(deps, req, ctx),
    getCampaignAssets: (req, ctx) => getCampaignAssets(deps, req, ctx),
    findSourceImages: (req, ctx) => findSourceImages(deps, req, ctx),
  };
}

async function saveCampaignAsset(
  deps: AssetHandlerDeps,
  req: Req<'saveCampaignAsset'>,
  ctx: HandlerContext,
): Res<'saveCampaignAsset'> {
  const principal = principalOf(ctx);
  const source = validateSource({
    ...(req.contentBase64 === undefined ? {} : { content: req.contentBase64 }),
    ...(req.sourceUrl === undefined ? {} : { sourceUrl: req.sourceUrl }),
  });
  // The image is read, checked and re-encoded before the database is touched.
  const image =
    source.kind === 'content'
      ? await checkImage(source.bytes, 'content_base64', req.mimeType)
      : await checkImage(
          await fetchImage(deps.fetch, source.url, ctx.signal),
          'the image at source_url',
          req.mimeType,
        );
  const asset = await insertAsset(deps.pool, {
    workspaceId: principal.workspaceId,
    assetId: randomUUID(),
    accountId: canonicalId(req.accountId),
    name: req.name,
    mimeType: image.mimeType,
    width: image.width,
    height: image.height,
    content: image.content,
    sha256: image.sha256,
    sourceUrl: source.kind === 'url' ? source.url : null,
  });
  return { asset: toMessage(asset), warnings: image.warnings };
}

async function listCampaignAssets(
  deps: AssetHandlerDeps,
  req: Req<'listCampaignAssets'>,
  ctx: HandlerContext,
): Res<'listCampaignAssets'> {
  const principal = principalOf(ctx);
  const page = pageOf({
    ...(req.offset === undefined ? {} : { offset: req.offset }),
    ...(req.limit === undefined ? {} : { limit: req.limit }),
  });
  const { assets, total } = await listAssets(
    deps.pool,
    principal.workspaceId,
    canonicalId(req.accountId),
    page,
  );
  const next = nextOffset(page, assets.length, total);
  return { assets: assets.map(toMessage), total, ...(next === undefined ? {} : { nextOffset: next }) };
}

async function archiveCampaignAsset(
  deps: AssetHandlerDeps,
  req: Req<'archiveCampaignAsset'>,
  ctx: HandlerContext,
): Res<'archiveCampaignAsset'> {
  const principal = principalOf(ctx);
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
}

async function getCampaignAssetContent(
  deps: AssetHandlerDeps,
  req: Req<'getCampaignAssetContent'>,
  ctx: HandlerContext,
): Res<'getCampaignAssetContent'> {
  const principal = principalOf(ctx);
  const assetId = validateAssetId(req.assetId);
  // Asked on every delivery: an archived asset is refused from the moment it is archived.
  const asset = checkDeliverable(assetId, await findAssetContent(deps.pool, principal.workspaceId, assetId));
  return { asset: toMessage(asset), content: asset.content };
}

async function saveSourceImages(
  deps: AssetHandlerDeps,
  req: Req<'saveSourceImages'>,
  ctx: HandlerContext,
): Res<'saveSourceImages'> {
  const principal = principalOf(ctx);
  const { accountId, urls } = validateSourceImages(req);
  const workspaceId = principal.workspaceId;
  // What was saved before is found in one statement; only the rest is fetched.
  const saved = await findLiveBySource(deps.pool, workspaceId, accountId, urls);
  const outcomes = new Map<string, SourceOutcome>(
    [...saved].map(([url, asset]) => [url, { asset, savedNow: false, error: '' }]),
  );
  const missing = urls.filter((url) => !saved.has(url));
  await eachAtMost(missing, FETCHES_AT_ONCE, ctx.signal, async (url) => {
    outcomes.set(url, await saveFromSource(deps, workspaceId, accountId, url, ctx.signal));
  });
  return { images: urls.map((url) => toSourceImage(url, outcomes.get(url) ?? NOT_FETCHED_OUTCOME)) };
}

async function getCampaignAssets(
  deps: AssetHandlerDeps,
  req: Req<'getCampaignAssets'>,
  ctx: HandlerContext,
): Res<'getCampaignAssets'> {
  const principal = principalOf(ctx);
  const count = req.assetIds.length;
  if (count < 1 || count > MAX_ASSET_IDS)
    throw new InvalidArgumentError(`asset_ids must have 1 to ${MAX_ASSET_IDS} ids (got ${count})`);
  const ids = req.assetIds.map(validateAssetId);
  const found = new Map((await findAssets(deps.pool, principal.workspaceId, ids)).map((a) => [a.assetId, a]));
  return {
    assets: ids.flatMap((id) => {
      const asset = found.get(id);
      return asset === undefined ? [] : [toMessage(asset)];
    }),
  };
}

async function findSourceImages(
  deps: AssetHandlerDeps,
  req: Req<'findSourceImages'>,
  ctx: HandlerContext,
): Res<'findSourceImages'> {
  const principal = principalOf(ctx);
  const { accountId, urls } = validateSourceImages(req);
  const saved = await findLiveBySource(deps.pool, principal.workspaceId, accountId, urls);
  return {
    images: urls.map((url) => toSourceImage(url, { asset: saved.get(url), savedNow: false, error: '' })),
  };
}
