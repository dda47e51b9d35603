/**
 * Review runs: one optimizer's campaigns reviewed by the connected agent. A run is queued, claimed
 * by one agent for 30 minutes (a claim that runs out puts it back in the queue, decided when the
 * run is read or claimed), then completed with an outcome. The rules here import no generated
 * code and no pg.
 */
import { createHash } from 'node:crypto';
import { FailedPreconditionError, InvalidArgumentError, PermissionDeniedError } from '@adsmcp/runtime/errors';
import { isWrittenUrl } from '@adsmcp/runtime/written-url';
import type { OptimizerConfig } from './optimizer.ts';

export const RUN_STATUSES = ['queued', 'claimed', 'completed', 'failed', 'cancelled'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export const OUTCOMES = ['proposals', 'no_change', 'insufficient_evidence'] as const;
export type Outcome = (typeof OUTCOMES)[number];
export type Trigger = 'request' | 'schedule';

/** How long a claim holds a run (the spec's claim duration). */
export const CLAIM_MS = 30 * 60_000;
const HOUR_MS = 3_600_000;

/** One ad's delivery over the window, with the thresholds applied. */
export interface AdPerformance {
  adId: string;
  adName: string;
  campaignId: string;
  adGroupId: string;
  status: string;
  title: string;
  body: string;
  targetUrl: string;
  impressions: number;
  clicks: number;
  conversions: number;
  spendMicros: number;
  ctr?: number;
  cpcMicros?: number;
  cpaMicros?: number;
  meetsThresholds: boolean;
  belowThresholds: string[];
}

export type AdDelivery = Omit<
  AdPerformance,
  'ctr' | 'cpcMicros' | 'cpaMicros' | 'meetsThresholds' | 'belowThresholds'
>;

export interface Snapshot {
  timeRange: string;
  windowStart: string;
  windowEnd: string;
  currency: string;
  timeZone: string;
  goal: string;
  minImpressions: number;
  minClicks: number;
  minConversions: number;
  ads: AdPerformance[];
  adsMeetingThresholds: number;
  takenAt: string;
  /** The days of timeRange no ad had a delivery row for; absent in snapshots recorded without it. */
  daysWithoutRows?: string[];
}

export interface Run {
  runId: string;
  workspaceId: string;
  optimizerId: string;
  accountId: string;
  status: RunStatus;
  trigger: Trigger;
  requestedBy: string;
  /** Lower case, as every UUID here: the handlers pass callers' UUIDs through canonicalUuid. */
  claimToken: string | null;
  claimedBy: string | null;
  claimedAt: Date | null;
  claimExpiresAt: Date | null;
  snapshot: Snapshot | null;
  outcome: Outcome | null;
  summary: string | null;
  completionDigest: string | null;
  completedAt: Date | null;
  cancelReason: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** A proposed creative, with the spec's "Optimization variant" fields. */
export interface Variant {
  baseAdId: string;
  name: string;
  title: string;
  body: string;
  targetUrl: string;
  rationale: string;
  hypothesis: string;
  assetId?: string;
}

/** The status a run shows: a claim that ran out is work to claim again. */
export function shownStatus(run: Pick<Run, 'status' | 'claimExpiresAt'>, now: Date): RunStatus {
  if (run.status === 'claimed' && run.claimExpiresAt !== null && run.claimExpiresAt <= now) return 'queued';
  return run.status;
}

/** A new queued run of `optimizer`. */
export function newRun(
  ids: { runId: string; workspaceId: string; optimizerId: string; accountId: string },
  trigger: Trigger,
  requestedBy: string,
  now: Date,
): Run {
  return {
    ...ids,
    status: 'queued',
    trigger,
    requestedBy,
    claimToken: null,
    claimedBy: null,
    claimedAt: null,
    claimExpiresAt: null,
    snapshot: null,
    outcome: null,
    summary: null,
    completionDigest: null,
    completedAt: null,
    cancelReason: null,
    createdAt: now,
    updatedAt: now,
  };
}

/** Why a review cannot be requested for an optimizer, or undefined when it can. */
export function requestRefusal(optimizer: { enabled: boolean; optimizerId: string }): string | undefined {
  return optimizer.enabled
    ? undefined
    : `optimizer ${optimizer.optimizerId} is paused; save it with enabled true before requesting a review`;
}

/**
 * claimed decides a claim of `run` with the caller's token (if it gave one): the run claimed anew,
 * or as it is when the caller already holds it (a retry), or a refusal. `token` is in canonical
 * (lower) case, as the stored one is, so that a token in any case matches.
 */
export function claimed(run: Run, token: string, by: string, now: Date): { run: Run; renewed: boolean } {
  const status = shownStatus(run, now);
  if (status === 'claimed') {
    if (run.claimToken === token) return { run, renewed: false };
    throw new FailedPreconditionError(
      `run ${run.runId} is already claimed until ${run.claimExpiresAt?.toISOString()}; a second claim is refused (ads_list_optimization_runs with status queued lists work to claim)`,
    );
  }
  if (status !== 'queued') {
    throw new FailedPreconditionError(`run ${run.runId} is ${status}; only a queued run can be claimed`);
  }
  return {
    run: {
      ...run,
      status: 'claimed',
      claimToken: token,
      claimedBy: by,
      claimedAt: now,
      claimExpiresAt: new Date(now.getTime() + CLAIM_MS),
      snapshot: null,
      updatedAt: now,
    },
    renewed: true,
  };
}

/** Refuses anything but the live claim of `token` (canonical, lower case) on `run`. */
export function requireClaim(run: Run, token: string, now: Date): void {
  if (run.claimToken !== token) {
    throw new PermissionDeniedError(
      `claim_token is not the claim of run ${run.runId}; claim the run to get one`,
    );
  }
  const status = shownStatus(run, now);
  if (status === 'queued') {
    throw new FailedPreconditionError(
      `the claim on run ${run.runId} ran out at ${run.claimExpiresAt?.toISOString()}; the run is queued again: claim it again`,
    );
  }
  if (status !== 'claimed') {
    throw new FailedPreconditionError(`run ${run.runId} is ${status}`);
  }
}

/** The evidence thresholds the configuration sets, applied to one ad's delivery. */
export function withThresholds(ad: AdDelivery, config: OptimizerConfig): AdPerformance {
  const below: string[] = [];
  if (ad.impressions < config.minImpressions)
    below.push(`impressions ${ad.impressions} < min_impressions ${config.minImpressions}`);
  if (ad.clicks < config.minClicks) below.push(`clicks ${ad.clicks} < min_clicks ${config.minClicks}`);
  // Conversions matter only to a goal about them.
  if (config.goal === 'cpa' && ad.conversions < config.minConversions)
    below.push(`conversions ${ad.conversions} < min_conversions ${config.minConversions}`);
  return {
    ...ad,
    ...(ad.impressions > 0 && { ctr: ad.clicks / ad.impressions }),
    ...(ad.clicks > 0 && { cpcMicros: Math.round(ad.spendMicros / ad.clicks) }),
    ...(ad.conversions > 0 && { cpaMicros: Math.round(ad.spendMicros / ad.conversions) }),
    meetsThresholds: below.length === 0,
    belowThresholds: below,
  };
}

export interface SnapshotInput {
  timeRange: string;
  windowStart: string;
  windowEnd: string;
  currency: string;
  timeZone: string;
  ads: AdDelivery[];
  daysWithoutRows?: string[];
}

/** snapshotOf is the delivery read for a run, judged by the configuration's thresholds. */
export function snapshotOf(input: SnapshotInput, config: OptimizerConfig, now: Date): Snapshot {
  const campaigns = new Set(config.campaignIds);
  const ads = input.ads.filter((a) => campaigns.has(a.campaignId)).map((a) => withThresholds(a, config));
  return {
    timeRange: input.timeRange,
    windowStart: input.windowStart,
    windowEnd: input.windowEnd,
    currency: input.currency,
    timeZone: input.timeZone,
    goal: config.goal,
    minImpressions: config.minImpressions,
    minClicks: config.minClicks,
    minConversions: config.minConversions,
    ads,
    adsMeetingThresholds: ads.filter((a) => a.meetsThresholds).length,
    takenAt: now.toISOString(),
    ...(input.daysWithoutRows === undefined ? {} : { daysWithoutRows: input.daysWithoutRows }),
  };
}

export interface Completion {
  outcome: string;
  summary: string;
  variants: Variant[];
}

/** The digest of a completion as asked: an identical repeat has the same one. */
export function completionDigest(c: Completion): string {
  const canonical = c.variants.map((v) => [
    v.baseAdId,
    v.name,
    v.title,
    v.body,
    v.targetUrl,
    v.rationale,
    v.hypothesis,
    v.assetId ?? null,
  ]);
  return createHash('sha256')
    .update(JSON.stringify([c.outcome, c.summary, canonical]))
    .digest('hex');
}

/**
 * checkTargetUrl refuses a target URL that is not https on one of the allowed hostnames, that is
 * not written as an ad's target_url must be, or that carries a user name or password.
 */
export function checkTargetUrl(field: string, targetUrl: string, allowedDomains: readonly string[]): void {
  let url: URL;
  try {
    url = new URL(targetUrl);
  } catch {
    throw new InvalidArgumentError(
      `${field} must be an absolute https URL (got ${JSON.stringify(targetUrl)})`,
    );
  }
  if (url.protocol !== 'https:') throw new InvalidArgumentError(`${field} must be an https URL`);
  // Written as an ad's creative target_url must be (the gateway's rule for ads_update_ad), so that
  // the URL published is the one the reviewer read.
  if (!isWrittenUrl(targetUrl)) {
    throw new InvalidArgumentError(
      `${field} must be an https URL written as https://host/path, with no spaces or backslashes (got ${JSON.stringify(targetUrl)})`,
    );
  }
  // Credentials do not belong in an ad; and "https://shop.test@example.com" reads as another site.
  if (url.username !== '' || url.password !== '') {
    throw new InvalidArgumentError(
      `${field} must not carry a user name or password before its host (got ${JSON.stringify(targetUrl)})`,
    );
  }
  const host = url.hostname.toLowerCase();
  if (!allowedDomains.some((d) => d.toLowerCase() === host)) {
    throw new InvalidArgumentError(
      `${field} links to ${host}, which is not one of the optimizer's allowed_domains (${allowedDomains.join(', ')})`,
    );
  }
}

/**
 * checkCompletion checks a completion against the run's snapshot and the configuration: the
 * outcome and its variants agree, each variant's base ad is one of the optimizer's campaigns' ads
 * (at most one variant each, since publishing replaces the base ad's creative), its target URL is
 * on an allowed domain, and no campaign gets more than max_ads_per_campaign variants.
 */
export function checkCompletion(c: Completion, snapshot: Snapshot | null, config: OptimizerConfig): Outcome {
  if (!(OUTCOMES as readonly string[]).includes(c.outcome)) {
    throw new InvalidArgumentError(`outcome must be one of ${OUTCOMES.join(', ')}`);
  }
  const outcome = c.outcome as Outcome;
  if (outcome === 'proposals' && c.variants.length === 0) {
    throw new InvalidArgumentError('variants must hold at least one variant when outcome is proposals');
  }
  if (outcome !== 'proposals' && c.variants.length > 0) {
    throw new InvalidArgumentError(`variants must be empty when outcome is ${outcome}`);
  }
  if (c.variants.length === 0) return outcome;
  if (snapshot === null) {
    throw new FailedPreconditionError(
      'the run has no performance snapshot yet (the platform could not be read when it was claimed); claim it again with the same claim_token',
    );
  }
  const ads = new Map(snapshot.ads.map((a) => [a.adId, a]));
  const perCampaign = new Map<string, number>();
  const seen = new Set<string>();
  c.variants.forEach((v, i) => {
    const ad = ads.get(v.baseAdId);
    if (ad === undefined) {
      throw new InvalidArgumentError(
        `variants[${i}].base_ad_id ${JSON.stringify(v.baseAdId)} is not an ad of the optimizer's campaigns (the run's snapshot lists them)`,
      );
    }
    if (seen.has(v.baseAdId)) {
      throw new InvalidArgumentError(
        `variants[${i}].base_ad_id ${v.baseAdId} has another variant already: propose one variant per base ad`,
      );
    }
    seen.add(v.baseAdId);
    checkTargetUrl(`variants[${i}].target_url`, v.targetUrl, config.allowedDomains);
    const count = (perCampaign.get(ad.campaignId) ?? 0) + 1;
    if (count > config.maxAdsPerCampaign) {
      throw new InvalidArgumentError(
        `variants propose more than max_ads_per_campaign (${config.maxAdsPerCampaign}) ads for campaign ${ad.campaignId}`,
      );
    }
    perCampaign.set(ad.campaignId, count);
  });
  return outcome;
}

/** The run completed with `c`, as of `now`. */
export function completedRun(run: Run, outcome: Outcome, c: Completion, now: Date): Run {
  return {
    ...run,
    status: 'completed',
    outcome,
    summary: c.summary,
    completionDigest: completionDigest(c),
    completedAt: now,
    updatedAt: now,
  };
}

/** The time the review window of a proposal made or edited `now` ends. */
export function reviewExpiry(config: OptimizerConfig, now: Date): Date {
  return new Date(now.getTime() + config.reviewHours * HOUR_MS);
}

/** The time an approval given `now` must be dispatched by. */
export function publishDeadline(config: OptimizerConfig, now: Date): Date {
  return new Date(now.getTime() + config.publishHours * HOUR_MS);
}
