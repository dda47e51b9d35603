/**
 * How many calls of one account may be with the platform at once. The connections to the
 * platform are shared by every account: without a bound per account, an account whose requests
 * the platform answers slowly would hold them all, and every other account's calls would wait
 * behind it. A call beyond the bound waits, in the order calls came, for one of its account's
 * calls to end.
 */
import { CallCancelledError } from './pause.ts';

/** The default bound: more than the request budget's slice of a second at its default rate. */
export const DEFAULT_MAX_IN_FLIGHT_PER_ACCOUNT = 16;

export interface InFlightLimit {
  /** run runs `call` once fewer than the bound of `accountId`'s calls are running; CallCancelledError if `signal` aborts first. */
  run<T>(accountId: string, call: () => Promise<T>, signal?: AbortSignal): Promise<T>;
}

interface AccountCalls {
  running: number;
  /** Calls waiting for a turn, first come first. */
  waiting: (() => void)[];
}

/** createInFlightLimit returns a limit of `max` calls at once per account, kept in memory. */
export function createInFlightLimit(max = DEFAULT_MAX_IN_FLIGHT_PER_ACCOUNT): InFlightLimit {
  const accounts = new Map<string, AccountCalls>();

  /** Waits for a turn of `calls`; the turn is handed over by `release`, never taken by a newcomer. */
  const turn = (calls: AccountCalls, signal?: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(new CallCancelledError());
        return;
      }
      const onAbort = () => {
        calls.waiting = calls.waiting.filter((w) => w !== go);
        reject(new CallCancelledError());
      };
      const go = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      calls.waiting.push(go);
    });

  const release = (accountId: string, calls: AccountCalls) => {
    const next = calls.waiting.shift();
    // The ending call's place goes to the next in line, so the count stays as it is.
    if (next !== undefined) return next();
    calls.running -= 1;
    if (calls.running === 0) accounts.delete(accountId);
  };

  return {
    async run(accountId, call, signal) {
      let calls = accounts.get(accountId);
      if (calls === undefined) {
        calls = { running: 0, waiting: [] };
        accounts.set(accountId, calls);
      }
      if (calls.running < max) calls.running += 1;
      else await turn(calls, signal);
      try {
        return await call();
      } finally {
        release(accountId, calls);
      }
    },
  };
}
