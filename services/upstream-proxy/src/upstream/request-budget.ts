/**
 * The per-account request budget to the platform, shared by every replica through Postgres: a
 * caller takes a token before each request it sends; when the bucket is empty it waits its turn,
 * in the order callers came, if that is short, and is refused with the seconds to wait otherwise.
 *
 * A replica does not go to Postgres for every token: it leases a small slice of the account's
 * bucket in one statement (at most the tokens the account earns in LEASE_SECONDS, and one at low
 * rates) and spends it from memory. A slice not spent within LEASE_SECONDS is given back to the
 * bucket with the replica's next lease. Every token spent was taken from the shared bucket, so
 * the replicas together never send more than it grants; a slice only moves a replica's tokens
 * up to LEASE_SECONDS later than the bucket counted them (docs/performance.md).
 */
import type { Queryable } from '@adsmcp/runtime/db';
import { ResourceExhaustedError } from '@adsmcp/runtime/errors';
import { type BucketRule, type Lease, leaseTokens } from '../store/budget-store.ts';
import { CallCancelledError, pause } from './pause.ts';
import { budgetRefusals, budgetRemaining } from './upstream-metrics.ts';

export const DEFAULT_RATE_PER_SECOND = 20;
export const DEFAULT_BURST = 40;
/** The longest a call waits for the budget, in all, before it is refused. */
export const DEFAULT_MAX_WAIT_MS = 2000;
/** How long a leased slice may be spent from memory; also what sizes it (the tokens earned in it). */
export const LEASE_SECONDS = 0.1;

export interface RequestBudgetOptions extends BucketRule {
  maxWaitMs?: number;
}

export interface RequestBudget {
  /** take waits for one token of `accountId`'s budget; it throws ResourceExhaustedError when the wait would be long. */
  take(accountId: string, signal?: AbortSignal): Promise<void>;
}

/**
 * The tokens of one account this replica holds, spendable until `expiresAt` (ms); and when the
 * bucket will hold a slice again as the last lease left it (`refillAt`, ms): a caller that finds
 * the slice spent waits until then before it asks, rather than asking and being told to wait (at
 * the rate limit, that was a statement on the account's row for every slice, for nothing).
 */
interface Held {
  tokens: number;
  expiresAt: number;
  refillAt: number;
}

/** The slice a replica leases: the tokens the account earns in LEASE_SECONDS, within the burst, at least one. */
export function leaseSize(rule: BucketRule): number {
  return Math.max(1, Math.min(Math.floor(rule.ratePerSecond * LEASE_SECONDS), Math.floor(rule.burst / 4)));
}

/** One budget's rule and what this replica keeps of it in memory. */
interface BudgetState {
  pool: Queryable;
  rule: BucketRule;
  maxWaitMs: number;
  slice: number;
  held: Map<string, Held>;
  // One lease statement per account at a time: callers that find the slice empty share it.
  leasing: Map<string, Promise<Lease>>;
  // The last caller in line for each account that has callers waiting: a promise that settles
  // when that caller is done (served or refused).
  waiting: Map<string, Promise<void>>;
}

const now = () => performance.now();

/** createRequestBudget returns the budget kept in `pool`'s request_budgets table. */
export function createRequestBudget(pool: Queryable, opts: RequestBudgetOptions): RequestBudget {
  const rule: BucketRule = { ratePerSecond: opts.ratePerSecond, burst: opts.burst };
  const state: BudgetState = {
    pool,
    rule,
    maxWaitMs: opts.maxWaitMs ?? DEFAULT_MAX_WAIT_MS,
    slice: leaseSize(rule),
    held: new Map(),
    leasing: new Map(),
    waiting: new Map(),
  };
  return {
    take(accountId, signal) {
      return take(state, accountId, signal);
    },
  };
}

/** Spends a held token of the account, if one is held and still fresh. */
function spendHeld(state: BudgetState, accountId: string): boolean {
  const h = state.held.get(accountId);
  if (h === undefined || h.tokens < 1 || h.expiresAt <= now()) return false;
  h.tokens -= 1;
  return true;
}

/** Leases the account's next slice, or joins the lease statement already under way. */
function lease(state: BudgetState, accountId: string): Promise<Lease> {
  const { held, leasing } = state;
  const pending = leasing.get(accountId);
  if (pending !== undefined) return pending;
  const h = held.get(accountId);
  // What is left of an expired slice goes back to the bucket with this statement.
  const returned = h === undefined ? 0 : Math.floor(h.tokens);
  held.delete(accountId);
  const next = leaseTokens(state.pool, accountId, state.rule, state.slice, returned)
    .then((got) => {
      budgetRemaining.set({ account_id: accountId }, got.remaining);
      const at = now();
      held.set(accountId, {
        tokens: got.granted,
        expiresAt: at + LEASE_SECONDS * 1000,
        refillAt: at + got.refillSeconds * 1000,
      });
      return got;
    })
    .finally(() => leasing.delete(accountId));
  leasing.set(accountId, next);
  return next;
}

/**
 * Takes a token for the caller at the head of the account's queue: from the held slice, else
 * from a new lease, else after waiting for the bucket to refill, if that ends by `deadline`.
 */
async function takeAtHead(
  state: BudgetState,
  accountId: string,
  deadline: number,
  signal?: AbortSignal,
): Promise<void> {
  for (;;) {
    if (signal?.aborted) throw new CallCancelledError();
    if (spendHeld(state, accountId)) return;
    // The last lease said when the bucket holds a slice again: wait for that before asking.
    const refillAt = state.held.get(accountId)?.refillAt ?? 0;
    if (refillAt > now()) {
      await waitUntil(state, accountId, refillAt, deadline, signal);
      continue;
    }
    // What it grants is spent at the top of the loop; when it grants nothing, its refill is waited for there.
    await lease(state, accountId);
  }
}

/** Pauses until `at` (ms), or refuses the take when that is past its `deadline`. */
async function waitUntil(
  state: BudgetState,
  accountId: string,
  at: number,
  deadline: number,
  signal?: AbortSignal,
): Promise<void> {
  const { rule } = state;
  const waitMs = Math.max(0, Math.ceil(at - now()));
  if (now() + waitMs > deadline) {
    budgetRefusals.inc();
    const seconds = Math.max(1, Math.ceil(waitMs / 1000));
    throw new ResourceExhaustedError(
      `the request budget for ad account ${accountId} is used up (${rule.ratePerSecond} requests per second, bursts of ${rule.burst}); retry in ${seconds} s`,
      seconds,
    );
  }
  await pause(waitMs, signal);
}

/** Waits for one token of the account's budget, in the order callers came. */
async function take(state: BudgetState, accountId: string, signal?: AbortSignal): Promise<void> {
  const { waiting } = state;
  // Nobody waits for this account: a held token is spent at once.
  const ahead = waiting.get(accountId);
  if (ahead === undefined && spendHeld(state, accountId)) return;
  // Otherwise callers are served in the order they came, so none is refused for losing
  // every race for the refill while later ones win; each waits at most maxWaitMs in all.
  const deadline = now() + state.maxWaitMs;
  let done: () => void = () => undefined;
  const mine = new Promise<void>((resolve) => {
    done = resolve;
  });
  const tail = (ahead ?? Promise.resolve()).then(() => mine);
  waiting.set(accountId, tail);
  try {
    if (ahead !== undefined) await untilTurn(ahead, signal);
    await takeAtHead(state, accountId, deadline, signal);
  } finally {
    done();
    if (waiting.get(accountId) === tail) waiting.delete(accountId);
  }
}

/** Resolves when `turn` does; throws CallCancelledError as soon as `signal` aborts. */
function untilTurn(turn: Promise<void>, signal?: AbortSignal): Promise<void> {
  if (signal === undefined) return turn;
  if (signal.aborted) return Promise.reject(new CallCancelledError());
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(new CallCancelledError());
    signal.addEventListener('abort', onAbort, { once: true });
    void turn.then(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    });
  });
}
