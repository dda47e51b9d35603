/**
 * A valid optimizer configuration for `ads_save_optimizer`, for the end-to-end tests to start
 * from: a cost-per-click review of `campaignIds` with the thresholds a real account would use.
 * `patch` replaces any field (a test of quick reviews lowers the thresholds to 1).
 */
export function optimizerConfig(
  campaignIds: string[] = ['cmp_1'],
  patch: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    campaign_ids: campaignIds,
    goal: 'cpc',
    cadence_hours: 24,
    window_hours: 168,
    reporting_delay_hours: 48,
    min_impressions: 1000,
    min_clicks: 50,
    min_conversions: 5,
    max_ads_per_campaign: 3,
    review_hours: 24,
    publish_hours: 4,
    allowed_domains: ['example.com'],
    ...patch,
  };
}

/** The thresholds of a review that any demo ad meets at once: one of each, monthly, by CTR. */
export const QUICK_REVIEW = {
  goal: 'ctr',
  cadence_hours: 720,
  min_impressions: 1,
  min_clicks: 1,
  min_conversions: 1,
  max_ads_per_campaign: 1,
} as const;
