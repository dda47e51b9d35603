/**
 * The platform's rate limit: a token bucket per account, refilled at `ratePerSecond` and
 * holding at most twice that (the burst). Kept in memory, per process.
 *
 * It also counts, per account, the requests it let through and those it refused with a 429, with
 * the clock readings of the first and last request let through: the platform's own record of how
 * hard a client pressed on the limit, which a client's own counters cannot stand in for.
 */

export interface RateDecision {
  allowed: boolean;
  /** When refused: whole seconds until a request would be allowed (at least 1). */
  retryAfterSeconds: number;
}

/** What the limiter saw of one account since the sandbox started. */
export interface RateUsage {
  /** Requests let through. */
  allowed: number;
  /** Requests refused with 429 `rate_limited` by the limit (injected faults are not counted). */
  refused: number;
  /** The clock readings (ms) of the first and the last request let through; null before any. */
  firstAllowedAt: number | null;
  lastAllowedAt: number | null;
}

export interface RateLimiter {
  readonly ratePerSecond: number;
  /** The most tokens an account's bucket holds. */
  readonly burst: number;
  /** take spends one token of `accountId`'s bucket, or says how long to wait for one. */
  take(accountId: string): RateDecision;
  /** What the limiter saw of `accountId` (all zero for an account it never saw). */
  usage(accountId: string): RateUsage;
}

interface Bucket extends RateUsage {
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
    ratePerSecond,
    burst: capacity,
    take(accountId) {
      const t = now();
      const bucket = buckets.get(accountId) ?? {
        tokens: capacity,
        at: t,
        allowed: 0,
        refused: 0,
        firstAllowedAt: null,
        lastAllowedAt: null,
      };
      const elapsedSeconds = Math.max(0, t - bucket.at) / 1000;
      bucket.tokens = Math.min(capacity, bucket.tokens + elapsedSeconds * ratePerSecond);
      bucket.at = t;
      buckets.set(accountId, bucket);
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        bucket.allowed += 1;
        bucket.firstAllowedAt ??= t;
        bucket.lastAllowedAt = t;
        return { allowed: true, retryAfterSeconds: 0 };
      }
      bucket.refused += 1;
      const wait = Math.ceil((1 - bucket.tokens) / ratePerSecond);
      return { allowed: false, retryAfterSeconds: Math.max(1, wait) };
    },
    usage(accountId) {
      const b = buckets.get(accountId);
      return {
        allowed: b?.allowed ?? 0,
        refused: b?.refused ?? 0,
        firstAllowedAt: b?.firstAllowedAt ?? null,
        lastAllowedAt: b?.lastAllowedAt ?? null,
      };
    },
  };
}
