/**
 * The platform reads of a review run's snapshot: every ad of the optimizer's campaigns and each
 * ad's delivery over the window, read through the upstream-proxy on the shared platform-reading
 * library (every page; daily rows summed exactly, with the days they covered).
 */
import type { UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { FailedPreconditionError, NotFoundError, UnavailableError } from '@adsmcp/runtime/errors';
import { isRecord } from '@adsmcp/runtime/json';
import { platformError } from '@adsmcp/runtime/platform-error';
import { sumInsights } from '@adsmcp/runtime/platform-read/insights';
import { items, PagingLimitError, type PlatformPage, pages } from '@adsmcp/runtime/platform-read/pages';
import type { CallOptions, Client } from '@connectrpc/connect';
import type { AdDelivery } from '../domain/review.ts';

export type Upstream = Pick<Client<typeof UpstreamService>, 'call' | 'getAccount'>;

const AD_PAGE = 500;
const INSIGHT_PAGE = 2000;
/** Caps on one snapshot's reads: 200 pages of ads (100 000 ads), 100 pages of one ad group's rows. */
const MAX_AD_PAGES = 200;
const MAX_INSIGHT_PAGES = 100;
const METRICS = ['impressions', 'clicks', 'conversions', 'spend_micros'] as const;

const text = (v: unknown) => (typeof v === 'string' ? v : '');

interface Read {
  accountId: string;
  path: string;
  query: Record<string, string | number | readonly string[]>;
  /** What a 404 means here. */
  notFound: string;
}

/** One GET of a page through the upstream-proxy; a refusal is a domain error in the platform's words. */
async function readPage(upstream: Upstream, as: CallOptions, read: Read): Promise<PlatformPage> {
  const query: { name: string; value: string }[] = [];
  for (const [name, value] of Object.entries(read.query)) {
    for (const v of Array.isArray(value) ? value : [value]) query.push({ name, value: String(v) });
  }
  const res = await upstream.call(
    { accountId: read.accountId, method: 'GET', path: read.path, query, bodyJson: '', idempotencyKey: '' },
    as,
  );
  if (res.status === 404) throw new NotFoundError(read.notFound);
  if (res.status < 200 || res.status > 299) {
    const e = platformError(res.bodyJson);
    throw new UnavailableError(
      `the ad platform refused GET ${read.path} (HTTP ${res.status}${e.code === undefined ? '' : ` ${e.code}`})${e.message === undefined ? '' : `: ${e.message}`}`,
    );
  }
  let body: unknown;
  try {
    body = JSON.parse(res.bodyJson);
  } catch {
    body = undefined;
  }
  if (!isRecord(body) || !Array.isArray(body.data)) {
    throw new UnavailableError(
      `the ad platform answered GET ${read.path} with an unexpected shape; try again later`,
    );
  }
  return { data: body.data, paging: body.paging };
}

/** A paging cap reached is the caller's to narrow (fewer campaigns or a shorter window), said as such. */
async function capped<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof PagingLimitError) throw new FailedPreconditionError(err.message);
    throw err;
  }
}

/** A sum as a number, refused past 2^53 rather than rounded. */
function whole(ad: string, metric: string, v: bigint | undefined): number {
  if (v === undefined) {
    throw new UnavailableError(`the ad platform gave no whole ${metric} for ad ${ad} on a day of the window`);
  }
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new FailedPreconditionError(
      `ad ${ad}'s ${metric} over the window (${v}) is too large to hold exactly`,
    );
  }
  return Number(v);
}

/**
 * readSnapshotAds reads every ad of `campaignIds` and sums each one's daily delivery over
 * `timeRange` (account-local dates), per ad group at the ad level, every page.
 */
export async function readSnapshotAds(
  upstream: Upstream,
  as: CallOptions,
  accountId: string,
  campaignIds: readonly string[],
  timeRange: string,
): Promise<{ ads: AdDelivery[]; daysWithoutRows: string[] }> {
  const wanted = new Set(campaignIds);
  const ads: Omit<AdDelivery, (typeof METRICS)[number] | 'spendMicros'>[] = [];
  await capped(async () => {
    const list = (after: string | undefined) =>
      readPage(upstream, as, {
        accountId,
        path: '/ads',
        query: { limit: AD_PAGE, ...(after === undefined ? {} : { after }) },
        notFound: 'the ad account’s ads could not be listed',
      });
    for await (const ad of items(list, {
      maxPages: MAX_AD_PAGES,
      what: `the ads of ad account ${accountId}`,
    })) {
      if (!wanted.has(text(ad.campaign_id))) continue;
      const creative = isRecord(ad.creative) ? ad.creative : {};
      ads.push({
        adId: text(ad.id),
        adName: text(ad.name),
        campaignId: text(ad.campaign_id),
        adGroupId: text(ad.ad_group_id),
        status: text(ad.status),
        title: text(creative.title),
        body: text(creative.body),
        targetUrl: text(creative.target_url),
      });
    }
  });
  const groups = [...new Set(ads.map((a) => a.adGroupId))];
  const rows: Record<string, unknown>[] = [];
  for (const group of groups) {
    const path = `/ad_groups/${encodeURIComponent(group)}/insights`;
    const insights = (after: string | undefined) =>
      readPage(upstream, as, {
        accountId,
        path,
        query: {
          aggregation_level: 'ad',
          time_granularity: 'daily',
          time_ranges: [timeRange],
          fields: [...METRICS],
          limit: INSIGHT_PAGE,
          ...(after === undefined ? {} : { after }),
        },
        notFound: `ad group ${group} of the optimizer’s campaigns is gone from the ad account`,
      });
    await capped(async () => {
      const what = `the insights of ad group ${group} over ${timeRange}`;
      for await (const page of pages(insights, { maxPages: MAX_INSIGHT_PAGES, what })) rows.push(...page);
    });
  }
  const sums = sumInsights(rows, { metrics: METRICS, range: timeRange, entityKey: 'ad_id' });
  const delivered = ads.map((a) => {
    const s = sums.byEntity.get(a.adId);
    // An ad without rows delivered nothing in the window.
    if (s === undefined) return { ...a, impressions: 0, clicks: 0, conversions: 0, spendMicros: 0 };
    return {
      ...a,
      impressions: whole(a.adId, 'impressions', s.counts.impressions),
      clicks: whole(a.adId, 'clicks', s.counts.clicks),
      conversions: whole(a.adId, 'conversions', s.counts.conversions),
      spendMicros: whole(a.adId, 'spend_micros', s.counts.spend_micros),
    };
  });
  return { ads: delivered, daysWithoutRows: ads.length === 0 ? [] : sums.missingDays };
}
