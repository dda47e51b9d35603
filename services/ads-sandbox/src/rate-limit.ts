/**
 * The platform's rate limit: a token bucket per account, refilled at `ratePerSecond` and
 * holding at most twice that (the burst). Kept in memory, per process.
 */

export interface RateDecision {
  allowed: boolean;
  /** When refused: whole seconds until a request would be allowed (at least 1). */
  retryAfterSeconds: number;
}

export interface RateLimiter {
  /** take spends one token of `accountId`'s bucket, or says how long to wait for one. */
  take(accountId: string): RateDecision;
}

interface Bucket {
  tokens: number;
  /** The clock reading (ms) the tokens were counted at. */
  at: number;
}

/** createRateLimiter returns a per-account token bucket limiter reading time from `now` (ms). */
export function createRateLimiter(ratePerSecond: number, now: () => number = Date.now): RateLimiter {
  if (!(ratePerSecond > 0)) throw new Error('ratePerSecond must be positive');
  const capacity = ratePerSecond * 2;
  const buckets = new Map<string, Bucket>();
  return {
    take(accountId) {
      const t = now();
      const bucket = buckets.get(accountId) ?? { tokens: capacity, at: t };
      const elapsedSeconds = Math.max(0, t - bucket.at) / 1000;
      bucket.tokens = Math.min(capacity, bucket.tokens + elapsedSeconds * ratePerSecond);
      bucket.at = t;
      buckets.set(accountId, bucket);
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return { allowed: true, retryAfterSeconds: 0 };
      }
      const wait = Math.ceil((1 - bucket.tokens) / ratePerSecond);
      return { allowed: false, retryAfterSeconds: Math.max(1, wait) };
    },
  };
}
