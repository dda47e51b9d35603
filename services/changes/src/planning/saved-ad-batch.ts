/**
 * A saved ad batch, as the marketing service keeps it, made ready to plan and prepare: the batch
 * read at the revision its caller read, its variants' source images found (or fetched and saved)
 * as campaign assets of the account. Every call to the marketing service is made on behalf of the
 * caller, with the caller's own role, scopes and channel (the trust table lets this service do so
 * for these three calls only), so that service's access rules hold as they would for the caller.
 */
import {
  type BatchVariant,
  type PrepareAdBatchRequest,
  PrepareAdBatchRequestSchema,
  type PrepareSavedAdBatchRequest,
} from '@adsmcp/proto/changes/v1/batches_pb';
import type { SourceImage } from '@adsmcp/proto/marketing/v1/assets_pb';
import type { MarketingItem, MarketingService } from '@adsmcp/proto/marketing/v1/marketing_pb';
import {
  FailedPreconditionError,
  InvalidArgumentError,
  InvalidArgumentIssuesError,
  NotFoundError,
  PermissionDeniedError,
  StaleRevisionError,
  UnavailableError,
} from '@adsmcp/runtime/errors';
import { isRecord } from '@adsmcp/runtime/json';
import type { Principal } from '@adsmcp/runtime/principal';
import { connectionFailure, describeCallFailure, onBehalfOf } from '@adsmcp/runtime/service-client';
import { create } from '@bufbuild/protobuf';
import { type Client, Code, ConnectError } from '@connectrpc/connect';
import type { Marketing } from './campaign-assets.ts';

/** The marketing service's items, where the saved batches are. */
export type MarketingItems = Client<typeof MarketingService>;

/** The marketing service's two clients a saved batch needs; unset when it is not configured. */
export interface SavedBatchPeers {
  items?: MarketingItems;
  marketing?: Marketing;
}

type Variant = Pick<BatchVariant, 'title' | 'body' | 'targetUrl' | 'sourceImageUrl'>;
type VariantWithAsset = Variant & { assetId: string };

/** Fetching and checking up to 100 source images, a few at a time, takes longer than a read. */
export const SAVE_IMAGES_TIMEOUT_MS = 120_000;

/** The batch's expected_revision refused in the words a batch's caller acts on. */
class StaleBatchError extends StaleRevisionError {
  constructor(expected: bigint, current: number) {
    super(current, 'batch');
    this.message =
      `expected_revision ${expected} is not the batch's current revision ${current}: read it again ` +
      '(ads_get_marketing_item) and review the variants before preparing';
  }
}

/**
 * The marketing service's refusal passed on in its own code and words (without the headers of its
 * answer), or, when it could not be reached, an Unavailable that says so.
 */
function passedOn(err: unknown): unknown {
  if (!(err instanceof ConnectError)) return err;
  if (connectionFailure(err) !== undefined)
    return new UnavailableError(describeCallFailure(err, 'marketing service'));
  // Its verifier refused this service's token: a deployment whose marketing service does not
  // trust this one (no CHANGES_PUBLIC_KEY), which the caller can do nothing about.
  if (err.code === Code.Unauthenticated)
    return new FailedPreconditionError(
      `an ad batch cannot be prepared: the marketing service does not accept the changes service's calls on a caller's behalf (${err.rawMessage}); its CHANGES_PUBLIC_KEY must be the changes service's public key`,
    );
  return new ConnectError(err.rawMessage, err.code);
}

const refusedAs = (err: unknown): never => {
  throw passedOn(err);
};

function clientsOf(peers: SavedBatchPeers): Required<SavedBatchPeers> {
  if (peers.items === undefined || peers.marketing === undefined)
    throw new FailedPreconditionError(
      'an ad batch cannot be prepared, since this deployment of the changes service has no MARKETING_URL',
    );
  return { items: peers.items, marketing: peers.marketing };
}

/** The batch item at exactly the revision the caller read, or a refusal saying what it is instead. */
function variantsAt(item: MarketingItem | undefined, itemId: string, expected: bigint): Variant[] {
  if (item === undefined) throw new NotFoundError(`no marketing item ${itemId} in this workspace`);
  if (item.kind !== 'batch') {
    throw new InvalidArgumentError(
      `marketing item ${itemId} is a ${item.kind}, not a batch: ads_prepare_ad_batch takes a saved batch`,
    );
  }
  if (item.archived) throw new FailedPreconditionError(`the batch ${itemId} is archived`);
  if (BigInt(item.revision) !== expected) throw new StaleBatchError(expected, item.revision);
  const variants = item.data?.variants;
  if (!Array.isArray(variants)) throw new InvalidArgumentError(`the batch ${itemId} has no variants`);
  // A variant field that is not text is planned as empty, and the compiled plan names it.
  const text = (v: unknown) => (typeof v === 'string' ? v : '');
  return variants.map((v) => {
    const o = isRecord(v) ? v : {};
    return {
      title: text(o.title),
      body: text(o.body),
      targetUrl: text(o.target_url),
      sourceImageUrl: text(o.source_image_url),
    };
  });
}

/** The distinct source image URLs of the variants, in the order first named. */
const imageUrls = (variants: readonly Variant[]) => [
  ...new Set(variants.map((v) => v.sourceImageUrl).filter((u) => u !== '')),
];

/** The variants, each with the asset id its source image was found or saved as ('' for none). */
function withAssets(variants: readonly Variant[], images: readonly SourceImage[]): VariantWithAsset[] {
  const byUrl = new Map(images.map((i) => [i.sourceUrl, i.asset?.assetId ?? '']));
  return variants.map((v) => ({ ...v, assetId: byUrl.get(v.sourceImageUrl) ?? '' }));
}

/** A saved batch read for its caller: its variants, and the same with the assets already saved. */
export interface SavedBatch {
  variants: Variant[];
  found: VariantWithAsset[];
  /** How many variants show a source image not saved as a campaign asset yet. */
  unsaved: number;
}

/**
 * readSavedBatch reads the batch as the caller at the revision given, and finds (fetching nothing)
 * the campaign assets already saved from its variants' source images.
 */
export async function readSavedBatch(
  peers: SavedBatchPeers,
  p: Principal,
  req: PrepareSavedAdBatchRequest,
  signal?: AbortSignal,
): Promise<SavedBatch> {
  // The marketing service accepts this service's calls for a person, an agent or an operator; a
  // worker prepares no change of its own.
  if (p.via === 'worker') throw new PermissionDeniedError('a worker cannot prepare an ad batch');
  const { items, marketing } = clientsOf(peers);
  const { item } = await items
    .getMarketingItem({ itemId: req.itemId }, onBehalfOf(p, { signal }))
    .catch(refusedAs);
  const variants = variantsAt(item, req.itemId, req.expectedRevision);
  const sourceUrls = imageUrls(variants);
  const { images } =
    sourceUrls.length === 0
      ? { images: [] }
      : await marketing
          .findSourceImages({ accountId: req.accountId, sourceUrls }, onBehalfOf(p, { signal }))
          .catch(refusedAs);
  const found = withAssets(variants, images);
  return { variants, found, unsaved: found.filter((v) => v.assetId === '').length };
}

/** What a plan of `batch` cannot show yet: the variants planned without their image. */
export function unsavedNotes({ found, unsaved }: SavedBatch): string[] {
  if (unsaved === 0) return [];
  const which = found.flatMap((v, i) => (v.assetId === '' ? [`variants[${i}]`] : []));
  return [
    `${unsaved} of the ${found.length} variants show a source image not saved as a campaign asset yet ` +
      `(${which.join(', ')}): they are planned without it here. ads_prepare_ad_batch fetches and saves ` +
      'each such image first, so the change it records shows every image, and its digest differs from this one.',
  ];
}

/**
 * saveSourceImages has the marketing service save the variants' source images as campaign assets,
 * as the caller (through its request-forgery-safe fetcher; those saved before are reused). An
 * image that cannot be saved refuses the batch, naming every variant that shows it (in the message,
 * and as one issue per variant at its `variants[i].source_image_url`); the images that were saved
 * stay saved, so preparing again fetches only what is still missing.
 */
export async function saveSourceImages(
  peers: SavedBatchPeers,
  p: Principal,
  accountId: string,
  variants: readonly Variant[],
  signal?: AbortSignal,
): Promise<VariantWithAsset[]> {
  const { marketing } = clientsOf(peers);
  const { images } = await marketing
    .saveSourceImages(
      { accountId, sourceUrls: imageUrls(variants) },
      onBehalfOf(p, { signal, timeoutMs: SAVE_IMAGES_TIMEOUT_MS }),
    )
    .catch(refusedAs);
  const failed = new Map(images.filter((i) => i.error !== '').map((i) => [i.sourceUrl, i.error]));
  const issues = variants.flatMap((v, i) => {
    const error = failed.get(v.sourceImageUrl);
    const path = `variants[${i}].source_image_url`;
    return error === undefined ? [] : [{ path, message: `${path} ${v.sourceImageUrl}: ${error}` }];
  });
  if (issues.length > 0)
    throw new InvalidArgumentIssuesError(
      `the batch's images must be saved as campaign assets for its ads, and ${failed.size === 1 ? 'one' : failed.size} could not be: ` +
        `${issues.map((i) => i.message).join('; ')}. Fix the batch (ads_save_marketing_item) and prepare it again; ` +
        'the images that were saved are kept and reused.',
      issues,
    );
  return withAssets(variants, images);
}

/** The PrepareAdBatch request of the saved batch `req` names, with `variants` (and their assets). */
export function adBatchRequest(
  req: PrepareSavedAdBatchRequest,
  variants: readonly VariantWithAsset[],
): PrepareAdBatchRequest {
  return create(PrepareAdBatchRequestSchema, {
    accountId: req.accountId,
    itemId: req.itemId,
    itemRevision: Number(req.expectedRevision),
    campaignName: req.campaignName,
    budgetAmount: req.budgetAmount,
    budgetType: req.budgetType,
    objective: req.objective,
    bidMicros: req.bidMicros,
    countries: req.countries,
    contextHints: req.contextHints,
    variants: [...variants],
  });
}
