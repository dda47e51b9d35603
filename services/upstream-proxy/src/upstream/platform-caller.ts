/**
 * One call to the platform as the Call RPC makes it: within the account's request budget and its
 * bound of requests in flight (so a slow account cannot hold the connections every account shares),
 * honouring the platform's 429 Retry-After, retrying only what is safe to retry (a read, or a
 * POST that carries its idempotency key, after a network error, a time-out or a 5xx), and
 * saying plainly, when it gives up, whether a change may have been applied.
 */
import { FailedPreconditionError, ResourceExhaustedError, UnavailableError } from '@adsmcp/runtime/errors';
import { currentRequestId, type Logger } from '@adsmcp/runtime/log';
import type { PlatformCall } from '../domain/platform-call.ts';
import { createInFlightLimit, type InFlightLimit } from './in-flight-limit.ts';
import { CallCancelledError, pause } from './pause.ts';
import { type PlatformClient, PlatformError, type PlatformReply } from './platform-client.ts';
import type { RequestBudget } from './request-budget.ts';
import { rateLimited, upstreamResponses } from './upstream-metrics.ts';

export const MAX_ATTEMPTS = 3;
export const BASE_DELAY_MS = 200;
/** The longest platform Retry-After this service waits out itself; a longer one goes to the caller. */
export const MAX_RATE_LIMIT_WAIT_SECONDS = 5;
/** What a 429 without a readable Retry-After is taken to ask for. */
const DEFAULT_RETRY_AFTER_SECONDS = 1;

export interface CallResult {
  /** A 2xx or 4xx status. */
  status: number;
  /** A JSON object or array, as text, or empty. */
  bodyJson: string;
  /** How many requests were sent. */
  attempts: number;
}

export interface PlatformCallerOptions {
  platform: PlatformClient;
  budget: RequestBudget;
  logger: Logger;
  /** How many of one account's requests may be with the platform at once (in-flight-limit.ts). */
  inFlight?: InFlightLimit;
  maxAttempts?: number;
  baseDelayMs?: number;
  /** For tests: a source of numbers in [0, 1) for the jitter. */
  random?: () => number;
}

export interface PlatformCaller {
  /** call sends `call` for `accountId` with `credential`; see the file's comment for its rules. */
  call(accountId: string, credential: string, call: PlatformCall, signal?: AbortSignal): Promise<CallResult>;
}

/** The longest Retry-After read (a year): beyond it, a wait says only "much later". */
const MAX_RETRY_AFTER_SECONDS = 365 * 24 * 3600;

/**
 * retryAfterSeconds reads a Retry-After header (delta-seconds or an HTTP date) as seconds from
 * `now`, or undefined when there is none or it is unreadable.
 */
export function retryAfterSeconds(header: string | null, now = Date.now()): number | undefined {
  if (header === null) return undefined;
  const text = header.trim();
  // Any number of digits: a wait too long to write in nine is still a long wait, never a short one.
  if (/^\d+$/.test(text)) return Math.min(Number(text), MAX_RETRY_AFTER_SECONDS);
  const at = Date.parse(text);
  if (Number.isNaN(at) || !/[a-z]/i.test(text)) return undefined;
  return Math.max(0, Math.ceil((at - now) / 1000));
}

/** backoffMs is the wait before the retry after `attempts` attempts: exponential, with jitter in its upper half. */
export function backoffMs(attempts: number, baseMs: number, random: () => number): number {
  const ceiling = baseMs * 2 ** (attempts - 1);
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/** What became of one attempt that has to be retried, or reported when no attempt is left. */
type Failure = { retryable: boolean; what: string };

/** Classifies an answer that is neither a result nor a rate limit. */
function failureOf(call: PlatformCall, reply: PlatformReply): Failure {
  const answered = `the platform answered ${call.method} ${call.path} with HTTP ${reply.status}`;
  if (reply.status >= 500) return { retryable: true, what: answered };
  // A redirect is never followed: the credential goes to the configured platform only.
  return { retryable: false, what: `${answered}, which this service does not follow` };
}

function unavailable(call: PlatformCall, failure: string, attempts: number): UnavailableError {
  const tried = `${failure}; gave up after ${attempts} attempt${attempts === 1 ? '' : 's'}`;
  if (call.readOnly) return new UnavailableError(`${tried}; nothing was changed; try again shortly`);
  return new UnavailableError(
    `${tried}. The outcome is unknown: the change may or may not have been applied; retrying with the same ` +
      'idempotency key is safe, since the platform replays a repeated key instead of applying it twice',
  );
}

/** A read whose answer is larger than this service reads: the caller must ask for less. */
function tooLarge(call: PlatformCall, failure: string): FailedPreconditionError {
  return new FailedPreconditionError(
    `${failure}, the most this service reads for ${call.method} ${call.path}; nothing was changed. ` +
      'Ask for less in one request: a smaller limit; fewer or shorter time ranges; fewer fields, segments, ' +
      'breakdowns or entities; a coarser time granularity',
  );
}

/** createPlatformCaller builds the caller from its dependencies. */
export function createPlatformCaller(opts: PlatformCallerOptions): PlatformCaller {
  const maxAttempts = opts.maxAttempts ?? MAX_ATTEMPTS;
  const baseDelayMs = opts.baseDelayMs ?? BASE_DELAY_MS;
  const random = opts.random ?? Math.random;
  const { platform, budget, logger } = opts;
  const inFlight = opts.inFlight ?? createInFlightLimit();

  return {
    async call(accountId, credential, call, signal) {
      const requestId = currentRequestId();
      const where = { method: call.method, path: call.path, account_id: accountId };
      for (let attempts = 1; ; attempts++) {
        await budget.take(accountId, signal);
        let failure: Failure;
        try {
          const reply = await inFlight.run(
            accountId,
            () =>
              platform.send(
                credential,
                {
                  method: call.method,
                  path: call.path,
                  query: call.query,
                  body: call.body,
                  // The same bytes on every attempt (a buffer, not a stream, so it can be sent again).
                  file: call.file,
                  // The same key on every attempt: a retry replays, never repeats.
                  idempotencyKey: call.idempotencyKey,
                  requestId,
                },
                signal,
              ),
            signal,
          );
          upstreamResponses.inc({ status: String(reply.status) });
          if (reply.status === 429) {
            rateLimited.inc();
            // The platform did not process the request, so waiting and sending it again is safe for any method.
            const seconds = retryAfterSeconds(reply.retryAfter) ?? DEFAULT_RETRY_AFTER_SECONDS;
            if (seconds <= MAX_RATE_LIMIT_WAIT_SECONDS && attempts < maxAttempts) {
              logger.warn(
                { ...where, attempt: attempts, retry_after_s: seconds },
                'platform rate limited; waiting',
              );
              await pause(seconds * 1000, signal);
              continue;
            }
            const wait = Math.max(1, seconds);
            throw new ResourceExhaustedError(
              `the ad platform is rate limiting ad account ${accountId} and did not process the request; retry in ${wait} s`,
              wait,
            );
          }
          const { status } = reply;
          if ((status >= 200 && status <= 299) || (status >= 400 && status <= 499)) {
            return { status, bodyJson: reply.bodyJson, attempts };
          }
          failure = failureOf(call, reply);
        } catch (err) {
          if (!(err instanceof PlatformError)) throw err;
          if (err.kind === 'cancelled') throw new CallCancelledError();
          // The same question gets the same oversized answer: asking again later cannot help.
          if (err.kind === 'too_large' && call.readOnly) throw tooLarge(call, err.message);
          // A time-out or a broken connection may or may not have reached the platform; an
          // unreadable or oversized answer reached it, and is not asked again.
          failure = { retryable: err.kind === 'timeout' || err.kind === 'unreachable', what: err.message };
        }
        if (!failure.retryable || attempts >= maxAttempts) throw unavailable(call, failure.what, attempts);
        logger.warn({ ...where, attempt: attempts, failure: failure.what }, 'platform call failed; retrying');
        await pause(backoffMs(attempts, baseDelayMs, random), signal);
      }
    },
  };
}
