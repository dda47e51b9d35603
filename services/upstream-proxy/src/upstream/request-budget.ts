/**
 * The per-account request budget to the platform, shared by every replica through Postgres: a
 * caller takes a token before each request it sends; when the bucket is empty it waits its turn
 * if that is short, and is refused with the seconds to wait otherwise.
 */
import type { Pool } from '@adsmcp/runtime/db';
import { ResourceExhaustedError } from '@adsmcp/runtime/errors';
import { type BucketRule, takeToken } from '../store/budget-store.ts';
import { pause } from './pause.ts';
import { budgetRefusals, budgetRemaining } from './upstream-metrics.ts';

export const DEFAULT_RATE_PER_SECOND = 20;
export const DEFAULT_BURST = 40;
/** The longest a call waits for the budget, in all, before it is refused. */
export const DEFAULT_MAX_WAIT_MS = 2000;

export interface RequestBudgetOptions extends BucketRule {
  maxWaitMs?: number;
}

export interface RequestBudget {
  /** take waits for one token of `accountId`'s budget; it throws ResourceExhaustedError when the wait would be long. */
  take(accountId: string, signal?: AbortSignal): Promise<void>;
}

/** createRequestBudget returns the budget kept in `pool`'s request_budgets table. */
export function createRequestBudget(pool: Pool, opts: RequestBudgetOptions): RequestBudget {
  const maxWaitMs = opts.maxWaitMs ?? DEFAULT_MAX_WAIT_MS;
  const rule: BucketRule = { ratePerSecond: opts.ratePerSecond, burst: opts.burst };
  return {
    async take(accountId, signal) {
      let waited = 0;
      for (;;) {
        const { granted, waitSeconds, remaining } = await takeToken(pool, accountId, rule);
        budgetRemaining.set({ account_id: accountId }, remaining);
        if (granted) return;
        const waitMs = Math.ceil(waitSeconds * 1000);
        if (waited + waitMs > maxWaitMs) {
          budgetRefusals.inc();
          const seconds = Math.max(1, Math.ceil(waitSeconds));
          throw new ResourceExhaustedError(
            `the request budget for ad account ${accountId} is used up (${rule.ratePerSecond} requests per second, bursts of ${rule.burst}); retry in ${seconds} s`,
            seconds,
          );
        }
        await pause(waitMs, signal);
        waited += waitMs;
      }
    },
  };
}
