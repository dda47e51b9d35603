/**
 * What the changes service reads from the ad platform, through the upstream-proxy, while it plans
 * a change: the account (it must be the workspace's and allow changes) and the live object. It
 * reads as itself (its worker key) on behalf of the caller's workspace, with read access only.
 */
import type { Account, UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import {
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  PermissionDeniedError,
  UnavailableError,
} from '@adsmcp/runtime/errors';
import { describePlatformRefusal, isRecord } from '@adsmcp/runtime/platform-error';
import type { Principal } from '@adsmcp/runtime/principal';
import { readingFor } from '@adsmcp/runtime/service-client';
import type { Client } from '@connectrpc/connect';
import { creativesOf } from '../domain/uploads.ts';

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
async function platformGet(
  upstream: Upstream,
  p: Principal,
  account: Account,
  path: string,
  what: string,
  missing: () => Error,
): Promise<{ bodyJson: string }> {
  const res = await upstream.call(
    { accountId: account.accountId, method: 'GET', path, query: [], bodyJson: '', idempotencyKey: '' },
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

/**
 * requireFiles refuses a change whose creatives name an image file (`file_id`) that the ad account
 * does not have, naming the creative: the platform would refuse it only when the approved change
 * is applied. Each file is read once (GET /files/{file_id}); the file the live object already
 * shows is not read, since the object keeps it.
 */
export async function requireFiles(
  upstream: Upstream,
  p: Principal,
  account: Account,
  body: Record<string, unknown>,
  live: Record<string, unknown> | undefined,
): Promise<void> {
  const liveCreative = live?.creative;
  const liveFile = isRecord(liveCreative) ? liveCreative.file_id : undefined;
  const read = new Set<string>();
  for (const { at, creative } of creativesOf(body)) {
    const fileId = creative.file_id;
    if (typeof fileId !== 'string' || fileId === liveFile || read.has(fileId)) continue;
    read.add(fileId);
    const field = `\`${at}.file_id\` ${fileId}`;
    await platformGet(
      upstream,
      p,
      account,
      `/files/${encodeURIComponent(fileId)}`,
      field,
      () =>
        new InvalidArgumentError(
          `${field}: ad account ${account.name} has no file with this id; name an image the account has (an ad's creative.file_id), or a saved campaign asset as asset_id, uploaded when the change is applied`,
        ),
    );
  }
}
