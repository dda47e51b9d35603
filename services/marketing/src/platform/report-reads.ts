/**
 * What a performance report reads from the ad platform, through the upstream-proxy: the account
 * (its currency and time zone), the campaign when one is named, the ad groups, and each ad
 * group's ad-level insights for the period and the preceding one, summed exactly per ad. The
 * service reads as itself (its own key) on behalf of the caller's workspace, with read access only.
 *
 * A refusal keeps the code the tool has always reported (`report_too_large`, the platform's own
 * code, `upstream_error`) in the error's metadata (platform-read/refusal.ts); 404 and 400 answers
 * are NotFound and InvalidArgument, in the same words as before.
 */
import type { Account, UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { RETRY_AFTER_METADATA } from '@adsmcp/runtime/connect-errors';
import { InvalidArgumentError, NotFoundError, UnavailableError } from '@adsmcp/runtime/errors';
import { isRecord } from '@adsmcp/runtime/json';
import { platformError } from '@adsmcp/runtime/platform-error';
import { sumRanges } from '@adsmcp/runtime/platform-read/insights';
import { PagingLimitError, type PlatformPage, pages } from '@adsmcp/runtime/platform-read/pages';
import { codedRefusal } from '@adsmcp/runtime/platform-read/refusal';
import { connectionFailure, describeCallFailure } from '@adsmcp/runtime/service-client';
import { type CallOptions, type Client, Code, ConnectError } from '@connectrpc/connect';
import { type AdCounts, COUNT_NAMES } from '../domain/performance-report.ts';
import { dateOf, dayNumber, type ReportPeriod } from '../domain/report-period.ts';

export type Upstream = Pick<Client<typeof UpstreamService>, 'call' | 'getAccount'>;

/** The platform's longest insights time range and most ranges per request. */
const RANGE_DAYS = 93;
const RANGES_PER_READ = 5;
/** Bounds on what one report reads: ad groups, ads, and platform reads in all. */
export const MAX_AD_GROUPS = 100;
export const MAX_ADS = 2000;
export const MAX_READS = 300;
const AD_GROUP_PAGE = 500;
const INSIGHT_PAGE = 2000;

const text = (v: unknown) => (typeof v === 'string' ? v : '');

const tooLarge = (message: string) => codedRefusal('report_too_large', Code.FailedPrecondition, message);

/** A path segment for an id the caller gave; one that would change the path is refused. */
function segment(argument: string, value: string): string {
  if (value === '.' || value === '..' || value.includes('/') || value.includes('\\')) {
    throw new InvalidArgumentError(
      `\`${argument}\` must be an id as the platform gives it: not "." or "..", and without "/" or "\\"`,
    );
  }
  return encodeURIComponent(value);
}

/**
 * The upstream-proxy's own refusal (an account outside the workspace, a rate limit, the platform
 * unreachable) as this service's answer: its code and words, and the seconds to wait. A fresh
 * error, so that none of the proxy's response headers is sent on as this service's.
 */
function passedOn(err: unknown): unknown {
  if (!(err instanceof ConnectError)) return err;
  if (connectionFailure(err) !== undefined || err.code === Code.DeadlineExceeded) {
    return new UnavailableError(
      `${describeCallFailure(err, 'upstream-proxy')}; nothing was saved, retry shortly`,
    );
  }
  if (err.code === Code.Unauthenticated) {
    // The caller's token was good here; the proxy refusing this service's own means a deployment
    // whose upstream-proxy does not trust the marketing key.
    return new UnavailableError(
      `the upstream-proxy refused the marketing service's token (${err.rawMessage}): it needs the marketing service's public key as MARKETING_PUBLIC_KEY; nothing was saved`,
    );
  }
  const retry = err.metadata.get(RETRY_AFTER_METADATA);
  return new ConnectError(
    err.rawMessage,
    err.code,
    retry === null ? undefined : { [RETRY_AFTER_METADATA]: retry },
  );
}

/** The ad account `accountId` of the caller's workspace (the upstream-proxy answers NotFound for any other). */
export async function reportAccount(
  upstream: Upstream,
  as: CallOptions,
  accountId: string,
): Promise<Account> {
  let account: Account | undefined;
  try {
    ({ account } = await upstream.getAccount({ accountId }, as));
  } catch (err) {
    throw passedOn(err);
  }
  if (account === undefined)
    throw new UnavailableError('the upstream-proxy answered GetAccount without an account');
  return account;
}

interface Read {
  accountId: string;
  path: string;
  query: Record<string, string | number | readonly string[]>;
  /** What a 404 means for this read. */
  notFound: string;
  /** `get`: one object; `list`: `data` and `paging`; `report`: `data` rows, `paging` optional. */
  shape: 'get' | 'list' | 'report';
}

const isCursor = (v: unknown) => v === undefined || v === null || typeof v === 'string';
const isPaging = (v: unknown) =>
  isRecord(v) && typeof v.has_more === 'boolean' && isCursor(v.after) && isCursor(v.before);

/**
 * One GET through the upstream-proxy. A 2xx answer in another shape than the read expects is the
 * platform's fault (`upstream_error`); 404 is NotFound with `read.notFound`; 400 is
 * InvalidArgument with the platform's message; any other refusal keeps the platform's code.
 */
async function readPlatform(upstream: Upstream, as: CallOptions, read: Read): Promise<PlatformPage> {
  const query: { name: string; value: string }[] = [];
  for (const [name, value] of Object.entries(read.query)) {
    for (const v of Array.isArray(value) ? value : [value]) query.push({ name, value: String(v) });
  }
  let res: { status: number; bodyJson: string };
  try {
    res = await upstream.call(
      { accountId: read.accountId, method: 'GET', path: read.path, query, bodyJson: '', idempotencyKey: '' },
      as,
    );
  } catch (err) {
    throw passedOn(err);
  }
  if (res.status < 200 || res.status > 299) {
    const error = platformError(res.bodyJson);
    const said = error.message === undefined ? '' : `: ${error.message}`;
    if (res.status === 404) throw new NotFoundError(read.notFound);
    if (res.status === 400) {
      const field = error.field === undefined ? '' : ` (field ${error.field})`;
      throw new InvalidArgumentError(`the ad platform refused the request${field}${said}`);
    }
    throw codedRefusal(
      error.code ?? `upstream_http_${res.status}`,
      res.status === 429 || res.status >= 500 ? Code.Unavailable : Code.FailedPrecondition,
      `the ad platform refused the request (HTTP ${res.status}${error.code === undefined ? '' : ` ${error.code}`})${said}`,
    );
  }
  let body: unknown;
  try {
    body = JSON.parse(res.bodyJson) as unknown;
  } catch {
    throw codedRefusal(
      'upstream_error',
      Code.Unavailable,
      'the ad platform sent a response that is not JSON; try again later',
    );
  }
  const rows =
    isRecord(body) && Array.isArray(body.data) && body.data.every(isRecord) ? body.data : undefined;
  if (read.shape === 'get' && isRecord(body)) return { data: [] };
  if (read.shape === 'list' && rows !== undefined && isRecord(body) && isPaging(body.paging)) {
    return { data: rows, paging: body.paging };
  }
  if (read.shape === 'report' && rows !== undefined && isRecord(body)) {
    if (body.paging === undefined || isPaging(body.paging)) return { data: rows, paging: body.paging };
  }
  throw codedRefusal(
    'upstream_error',
    Code.Unavailable,
    `the ad platform answered GET ${read.path} with an unexpected shape; try again later`,
  );
}

/** The period cut into the platform's time ranges (at most RANGE_DAYS days each). */
export function timeRanges(since: string, until: string): string[] {
  const start = dayNumber(since) ?? Number.NaN;
  const end = dayNumber(until) ?? Number.NaN;
  const out: string[] = [];
  for (let s = start; s <= end; s += RANGE_DAYS) {
    out.push(`${dateOf(s)}..${dateOf(Math.min(end, s + RANGE_DAYS - 1))}`);
  }
  return out;
}

/** Counts the platform reads a report makes, and refuses the one past MAX_READS. */
function readBudget() {
  let reads = 0;
  return () => {
    reads++;
    if (reads > MAX_READS) {
      throw tooLarge(
        `the report would need more than ${MAX_READS} reads of the ad platform; give a campaign_id or a shorter period`,
      );
    }
  };
}

/**
 * The pages of one platform read, each read spending the report's budget; a read past the pages
 * it may take is refused as too large a report, as the budget refuses it.
 */
async function* reportPages(read: (after: string | undefined) => Promise<PlatformPage>, what: string) {
  try {
    yield* pages(read, { maxPages: MAX_READS, what });
  } catch (err) {
    if (err instanceof PagingLimitError) throw tooLarge(err.message);
    throw err;
  }
}

interface AdGroupRef {
  id: string;
  name: string;
  campaignId: string;
}

async function listAdGroups(
  upstream: Upstream,
  as: CallOptions,
  account: string,
  campaignId: string | undefined,
  spend: () => void,
): Promise<AdGroupRef[]> {
  const groups: AdGroupRef[] = [];
  const read = (after: string | undefined) => {
    spend();
    return readPlatform(upstream, as, {
      accountId: account,
      path: '/ad_groups',
      query: {
        limit: AD_GROUP_PAGE,
        ...(campaignId === undefined ? {} : { campaign_id: campaignId }),
        ...(after === undefined ? {} : { after }),
      },
      notFound: `the ad platform found no ad groups listing for ad account ${account}`,
      shape: 'list',
    });
  };
  for await (const page of reportPages(read, `the ad groups of ad account ${account}`)) {
    for (const g of page)
      groups.push({ id: text(g.id), name: text(g.name), campaignId: text(g.campaign_id) });
    if (groups.length > MAX_AD_GROUPS) {
      throw tooLarge(
        `the ${campaignId === undefined ? 'account' : 'campaign'} has more than ${MAX_AD_GROUPS} ad groups; a report covers at most ${MAX_AD_GROUPS}: give a campaign_id with fewer`,
      );
    }
  }
  return groups;
}

/** What a report is read for: the caller's arguments and the checked period. */
export interface ReportRead {
  accountId: string;
  campaignId?: string;
  period: ReportPeriod;
}

/**
 * readReportCounts reads each ad group's insights at ad level, one row per ad and time range (both
 * periods' ranges, up to five per read, every page), and sums them per ad and period. An ad's
 * count over a period is unknown when a range of it gave no row or no exact count for the ad.
 */
export async function readReportCounts(
  upstream: Upstream,
  as: CallOptions,
  r: ReportRead,
): Promise<{ current: AdCounts[]; previous: AdCounts[] }> {
  const spend = readBudget();
  if (r.campaignId !== undefined) {
    spend();
    await readPlatform(upstream, as, {
      accountId: r.accountId,
      path: `/campaigns/${segment('campaign_id', r.campaignId)}`,
      query: {},
      notFound: `no campaign ${r.campaignId} in ad account ${r.accountId}; ads_list_campaigns lists them`,
      shape: 'get',
    });
  }
  const groups = await listAdGroups(upstream, as, r.accountId, r.campaignId, spend);
  const ranges = {
    current: timeRanges(r.period.since, r.period.until),
    previous: timeRanges(r.period.previousSince, r.period.previousUntil),
  };
  const all = [...ranges.current, ...ranges.previous];
  const rows: Record<string, unknown>[] = [];
  const groupOf = new Map<string, AdGroupRef>();
  for (const group of groups) {
    for (let i = 0; i < all.length; i += RANGES_PER_READ) {
      const read = (after: string | undefined) => {
        spend();
        return readPlatform(upstream, as, {
          accountId: r.accountId,
          path: `/ad_groups/${segment('ad_group_id', group.id)}/insights`,
          query: {
            aggregation_level: 'ad',
            time_granularity: 'none',
            time_ranges: all.slice(i, i + RANGES_PER_READ),
            fields: [...COUNT_NAMES],
            includes: ['entity_name'],
            limit: INSIGHT_PAGE,
            ...(after === undefined ? {} : { after }),
          },
          notFound: `ad group ${group.id} of ad account ${r.accountId} disappeared while the report was read; try again`,
          shape: 'report',
        });
      };
      for await (const page of reportPages(read, `the insights of ad group ${group.id}`)) {
        for (const row of page) {
          const adId = text(row.ad_id);
          if (adId === '' || !all.includes(text(row.time_range))) continue;
          if (!groupOf.has(adId)) {
            groupOf.set(adId, group);
            if (groupOf.size > MAX_ADS) {
              throw tooLarge(`the report would hold more than ${MAX_ADS} ads; give a campaign_id with fewer`);
            }
          }
          rows.push(row);
        }
      }
    }
  }
  const countsOf = (period: readonly string[]): AdCounts[] =>
    [...sumRanges(rows, { metrics: COUNT_NAMES, ranges: period, entityKey: 'ad_id' })].map(([adId, sum]) => {
      const group = groupOf.get(adId) as AdGroupRef;
      return {
        adId,
        adName: text(sum.first.ad_name),
        adGroupId: group.id,
        adGroupName: group.name,
        campaignId: group.campaignId,
        counts: sum.counts,
      };
    });
  return { current: countsOf(ranges.current), previous: countsOf(ranges.previous) };
}
