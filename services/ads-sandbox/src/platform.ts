/**
 * What every platform endpoint does before its handler: authenticate the account's credential,
 * spend a token of the account's rate limit, and suffer the next injected fault that matches.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Queryable } from '@adsmcp/runtime/db';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { requireAccount } from './auth.ts';
import { errorBody, PlatformHttpError } from './errors.ts';
import type { FaultQueue } from './faults.ts';
import { REPLAYED_HEADER } from './idempotency.ts';
import type { RateLimiter } from './rate-limit.ts';
import type { Account } from './store/account-store.ts';

interface PlatformContext {
  account: Account;
  /** An injected `fail_after_commit` fault: handle the request, then answer 500. */
  failAfterCommit: boolean;
  /** An injected `ignore_field` fault: the body field to drop before the handler sees it. */
  ignoreField?: string;
}

const contexts = new WeakMap<FastifyRequest, PlatformContext>();

/** The path of a request, without its query string. */
export function requestPath(req: FastifyRequest): string {
  return req.url.split('?')[0] ?? req.url;
}

/** requestAccount returns the account a guarded request was authenticated as. */
export function requestAccount(req: FastifyRequest): Account {
  const context = contexts.get(req);
  if (context === undefined) throw new Error(`${req.method} ${requestPath(req)} is not a guarded route`);
  return context.account;
}

function injected500(): PlatformHttpError {
  return new PlatformHttpError(500, 'internal', 'internal error (injected fault)');
}

export function rateLimited(retryAfterSeconds: number, message: string): PlatformHttpError {
  return new PlatformHttpError(429, 'rate_limited', message, {
    headers: { 'retry-after': String(retryAfterSeconds) },
  });
}

/**
 * createPlatformGuard returns the `onRequest` hook of every platform endpoint. It refuses a
 * request without a valid credential (401), over the account's rate limit (429), or hit by an
 * injected `status_500` or `rate_limit` fault; it waits out a `delay` fault, and marks the
 * request for a `fail_after_commit` fault (see failAfterCommitHook) or an `ignore_field` fault
 * (see ignoreFieldHook).
 */
export function createPlatformGuard(deps: {
  pool: Queryable;
  limiter: RateLimiter;
  faults: FaultQueue;
  ratePerSecond: number;
}): (req: FastifyRequest) => Promise<void> {
  return async (req) => {
    const account = await requireAccount(deps.pool, req);
    const context: PlatformContext = { account, failAfterCommit: false };
    contexts.set(req, context);
    const decision = deps.limiter.take(account.id);
    if (!decision.allowed) {
      throw rateLimited(
        decision.retryAfterSeconds,
        `the account exceeded its rate limit of ${deps.ratePerSecond} requests per second; retry after ${decision.retryAfterSeconds} s`,
      );
    }
    const fault = deps.faults.take(account.id, req.method, requestPath(req));
    switch (fault?.kind) {
      case undefined:
        return;
      case 'status_500':
        throw injected500();
      case 'rate_limit':
        throw rateLimited(
          fault.retryAfterSeconds,
          `the account is rate limited (injected fault); retry after ${fault.retryAfterSeconds} s`,
        );
      case 'delay':
        await sleep(fault.delayMs);
        return;
      case 'fail_after_commit':
        context.failAfterCommit = true;
        return;
      case 'ignore_field':
        context.ignoreField = fault.field;
        return;
    }
  };
}

/**
 * ignoreFieldHook (a `preHandler` hook, after the body is validated) drops the field an
 * `ignore_field` fault names from the request body: the handler applies the rest and answers with
 * success, so the client sees a result other than the one it asked for.
 */
export async function ignoreFieldHook(req: FastifyRequest): Promise<void> {
  const field = contexts.get(req)?.ignoreField;
  const body = req.body;
  if (field === undefined || typeof body !== 'object' || body === null || Array.isArray(body)) return;
  // A file upload's body is its bytes, which have no fields.
  if (Buffer.isBuffer(body)) return;
  delete (body as Record<string, unknown>)[field];
}

/**
 * failAfterCommitHook (an `onSend` hook) turns the successful answer of a request marked by a
 * `fail_after_commit` fault into a 500: whatever the request did has been committed, and the
 * client never learns it. An error answer is left alone, since nothing was committed.
 */
export async function failAfterCommitHook(
  req: FastifyRequest,
  reply: FastifyReply,
  payload: unknown,
): Promise<unknown> {
  if (contexts.get(req)?.failAfterCommit !== true || reply.statusCode >= 400) return payload;
  const err = injected500();
  void reply.status(err.status);
  void reply.removeHeader(REPLAYED_HEADER);
  void reply.header('content-type', 'application/json; charset=utf-8');
  return JSON.stringify(errorBody(err.code, err.message));
}
