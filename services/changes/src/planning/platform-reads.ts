/**
 * What the changes service reads from the ad platform, through the upstream-proxy, while it plans
 * a change: the account (it must be the workspace's and allow changes), the live object, and the
 * reads the references of a change are resolved with (references.ts). It reads as itself (its
 * worker key) on behalf of the caller's workspace, with read access only.
 */

import type { Account, UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import {
  FailedPreconditionError,
  NotFoundError,
  PermissionDeniedError,
  UnavailableError,
} from '@adsmcp/runtime/errors';
import { isRecord } from '@adsmcp/runtime/json';
import { nextCursor } from '@adsmcp/runtime/paging';
import { describePlatformRefusal } from '@adsmcp/runtime/platform-error';
import type { Principal } from '@adsmcp/runtime/principal';
import { readingFor } from '@adsmcp/runtime/service-client';
import type { Client } from '@connectrpc/connect';

export type Upstream = Client<typeof UpstreamService>;

/** The account `accountId` of `p`'s workspace, for planning reads that need no write access. */
export async function readableAccount(upstream: Upstream, p: Principal, accountId: string): Promise<Account> {
  // The upstream-proxy, which owns the connections, answers NotFound for another workspace's.
  const { account } = await upstream.getAccount({ accountId }, readingFor(p));
  if (account === undefined) throw new UnavailableError('the upstream-proxy answered without an account');
  return account;
}

/** Why changes cannot be prepared for `account`, or undefined when they can. */
export function accountRefusal(account: Account): string | undefined {
  return account.canWrite
    ? undefined
    : `the connection to ad account ${account.name} is read-only; changes cannot be prepared for it`;
}

/** The account `accountId` of `p`'s workspace, which must allow changes. */
export async function writableAccount(upstream: Upstream, p: Principal, accountId: string): Promise<Account> {
  const account = await readableAccount(upstream, p, accountId);
  const refusal = accountRefusal(account);
  if (refusal !== undefined) throw new PermissionDeniedError(refusal);
  return account;
}

/**
 * How a plan treats the caller's right to change the account: a prepare enforces it (refused before
 * anything is read); a preflight, which is a read, plans anyway and reports why it could not prepare.
 */
export type AccessCheck = 'enforce' | 'report';

/** The account to plan on: writable when access is enforced, readable when it is only reported. */
export function accountToPlan(
  upstream: Upstream,
  p: Principal,
  accountId: string,
  access: AccessCheck,
): Promise<Account> {
  return access === 'enforce'
    ? writableAccount(upstream, p, accountId)
    : readableAccount(upstream, p, accountId);
}

/**
 * platformGet reads `path` on `account` as `p`, with read access only, and returns the platform's
 * answer when it is a success. A 404 throws `missing()`; another refusal is Unavailable when it
 * is worth retrying (5xx, 429) and otherwise FailedPrecondition, saying `what` could not be read.
 */
export async function platformGet(
  upstream: Upstream,
  p: Principal,
  account: Account,
  path: string,
  what: string,
  missing: () => Error,
  query: { name: string; value: string }[] = [],
): Promise<{ bodyJson: string }> {
  const res = await upstream.call(
    { accountId: account.accountId, method: 'GET', path, query, bodyJson: '', idempotencyKey: '' },
    readingFor(p),
  );
  if (res.status === 404) throw missing();
  if (res.status < 200 || res.status > 299) {
    const reason = describePlatformRefusal(res.status, res.bodyJson);
    if (res.status >= 500 || res.status === 429) throw new UnavailableError(`${reason}; try again shortly`);
    throw new FailedPreconditionError(`${what} could not be read: ${reason}`);
  }
  return res;
}

/** The object at `path` as the platform has it now; NotFound names `what` in `account`. */
export async function liveObject(
  upstream: Upstream,
  p: Principal,
  account: Account,
  path: string,
  what: string,
): Promise<Record<string, unknown>> {
  const res = await platformGet(
    upstream,
    p,
    account,
    path,
    `the ${what}`,
    () => new NotFoundError(`no ${what} in ad account ${account.name}`),
  );
  let body: unknown;
  try {
    body = JSON.parse(res.bodyJson);
  } catch {
    body = undefined;
  }
  if (!isRecord(body))
    throw new UnavailableError(`the ad platform answered GET ${path} with an unexpected shape`);
  return body;
}

/** The `data` and `paging.after` of a platform list page; anything else is the platform's fault. */
function listPage(
  path: string,
  bodyJson: string,
): { data: Record<string, unknown>[]; after: string | undefined } {
  let body: unknown;
  try {
    body = JSON.parse(bodyJson);
  } catch {
    body = undefined;
  }
  if (!isRecord(body) || !Array.isArray(body.data)) {
    throw new UnavailableError(`the ad platform answered GET ${path} with an unexpected shape`);
  }
  return { data: body.data.filter(isRecord), after: nextCursor(body.paging) };
}

/** One page of the platform list `path` (GET with `query`), read for `what`, as the caller. */
export async function platformList(
  upstream: Upstream,
  p: Principal,
  account: Account,
  path: string,
  what: string,
  query: { name: string; value: string }[],
): Promise<{ data: Record<string, unknown>[]; after: string | undefined }> {
  const res = await platformGet(
    upstream,
    p,
    account,
    path,
    what,
    () => new UnavailableError(`the ad platform has no ${path} listing`),
    query,
  );
  return listPage(path, res.bodyJson);
}
