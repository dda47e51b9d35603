/** Waiting inside a call: it ends early, as a cancellation, when the caller gives up. */
import { setTimeout as delay } from 'node:timers/promises';
import { DomainError } from '@adsmcp/runtime/errors';

/** The caller went away (cancelled, or its deadline passed) while the call waited. */
export class CallCancelledError extends DomainError {
  constructor() {
    super('the caller gave up on the call before it completed', 'cancelled');
  }
}

/** pause resolves after `ms`; it throws CallCancelledError as soon as `signal` aborts. */
export async function pause(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) throw new CallCancelledError();
  if (ms <= 0) return;
  try {
    await delay(ms, undefined, signal === undefined ? {} : { signal });
  } catch (err) {
    if (signal?.aborted) throw new CallCancelledError();
    throw err;
  }
}
