/**
 * A token bucket per credential, held by this gateway replica. With N replicas behind a load
 * balancer a credential may get up to N times the rate; the upstream budget, which protects
 * the ad platform, is shared across replicas by the upstream-proxy.
 */

export interface RateDecision {
  allowed: boolean;
  /** Whole seconds until a request would be allowed (0 when allowed). */
  retryAfterSeconds: number;
}

export class RateLimiter {
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  /** `ratePerSecond` refills each bucket; `burst` is its size. */
  constructor(
    private readonly ratePerSecond: number,
    readonly burst: number,
    private readonly now: () => number = () => Date.now(),
  ) {}

  /** What `take` would decide, without taking. */
  peek(key: string): RateDecision {
    const b = this.#buckets.get(key);
    if (b === undefined) return { allowed: true, retryAfterSeconds: 0 };
    const tokens = Math.min(this.burst, b.tokens + ((this.now() - b.at) / 1000) * this.ratePerSecond);
    return tokens >= 1
      ? { allowed: true, retryAfterSeconds: 0 }
      : { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - tokens) / this.ratePerSecond)) };
  }

  /** Takes `cost` tokens at once (a batch's tool calls), or none when the bucket holds fewer. */
  take(key: string, cost = 1): RateDecision {
    const t = this.now();
    const b = this.#buckets.get(key) ?? { tokens: this.burst, at: t };
    b.tokens = Math.min(this.burst, b.tokens + ((t - b.at) / 1000) * this.ratePerSecond);
    b.at = t;
    this.#buckets.set(key, b);
    if (this.#buckets.size > 100_000) this.#evictFull(t);
    if (b.tokens >= cost) {
      b.tokens -= cost;
      return { allowed: true, retryAfterSeconds: 0 };
    }
    return {
      allowed: false,
      retryAfterSeconds: Math.max(1, Math.ceil((cost - b.tokens) / this.ratePerSecond)),
    };
  }

  /**
   * Gives back `cost` tokens that `take` took, up to the burst: a cost charged before work whose
   * outcome decides whether it was owed (a credential found valid owes nothing).
   */
  give(key: string, cost = 1): void {
    const b = this.#buckets.get(key);
    if (b !== undefined) b.tokens = Math.min(this.burst, b.tokens + cost);
  }

  /** Forgets buckets that have refilled, bounding memory. */
  #evictFull(t: number): void {
    for (const [k, b] of this.#buckets) {
      if (b.tokens + ((t - b.at) / 1000) * this.ratePerSecond >= this.burst) this.#buckets.delete(k);
    }
  }
}
