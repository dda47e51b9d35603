/**
 * AccountsService: the workspace's ad accounts, read through the upstream-proxy as the caller,
 * each joined with the freeze in force for it, which this service keeps. One answer for both, so
 * an account is never shown writable while a freeze holds it.
 */

import { AccessLevel } from '@adsmcp/proto/adsmcp/v1/access_pb';
import type { AccountFreezeSchema, AccountsService } from '@adsmcp/proto/changes/v1/accounts_pb';
import { accessRefusal } from '@adsmcp/runtime/access-policy';
import { principalOf } from '@adsmcp/runtime/connect-server';
import type { Pool } from '@adsmcp/runtime/db';
import type { Principal } from '@adsmcp/runtime/principal';
import { readingFor } from '@adsmcp/runtime/service-client';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import type { Upstream } from '../planning/platform-reads.ts';
import { type FreezeRow, freezesInForce } from '../store/controls-store.ts';

export interface AccountsDeps {
  pool: Pool;
  upstream: Upstream;
}

type Impl = ServiceImpl<typeof AccountsService>;
type Req<K extends keyof Impl> = Parameters<Impl[K]>[0];
type Res<K extends keyof Impl> = Promise<Awaited<ReturnType<Impl[K]>>>;

export function accountsHandlers(deps: AccountsDeps): Impl {
  return {
    listAccounts: (req, ctx) => listAccounts(deps, req, ctx),
  };
}

function freezeMessage(f: FreezeRow): MessageInitShape<typeof AccountFreezeSchema> {
  return {
    scope: f.account_id === null ? 'workspace' : 'account',
    ...(f.account_id === null ? {} : { accountId: f.account_id }),
    reason: f.reason,
    frozenBy: f.frozen_by,
    frozenAt: f.frozen_at.toISOString(),
  };
}

/** The freeze in force for an account: its own, else the workspace's; undefined when writes are open. */
function freezeFor(freezes: readonly FreezeRow[], accountId: string): FreezeRow | undefined {
  return (
    freezes.find((f) => f.account_id?.toLowerCase() === accountId.toLowerCase()) ??
    freezes.find((f) => f.account_id === null)
  );
}

/**
 * Whether `p` may prepare changes at all: the rule of a WRITE method (access-policy.ts), so the
 * list says what a prepare would be told.
 */
function mayWrite(p: Principal): boolean {
  return accessRefusal({ level: AccessLevel.WRITE, doing: 'preparing changes' }, p) === undefined;
}

async function listAccounts(
  deps: AccountsDeps,
  _req: Req<'listAccounts'>,
  ctx: HandlerContext,
): Res<'listAccounts'> {
  const p = principalOf(ctx);
  // The upstream-proxy owns the connections and lists only the caller's workspace's; this service
  // reads it as itself for that workspace, with read access only, as its planning reads do.
  const [{ accounts }, freezes] = await Promise.all([
    deps.upstream.listAccounts({}, readingFor(p, ctx.signal)),
    freezesInForce(deps.pool, p.workspaceId),
  ]);
  const writer = mayWrite(p);
  return {
    accounts: accounts.map((a) => {
      const freeze = freezeFor(freezes, a.accountId);
      return {
        accountId: a.accountId,
        name: a.name,
        currency: a.currency,
        timeZone: a.timeZone,
        canWrite: a.canWrite && writer && freeze === undefined,
        connectionCanWrite: a.canWrite,
        ...(freeze === undefined ? {} : { freeze: freezeMessage(freeze) }),
        ...(a.credentialExpiresAt === '' ? {} : { credentialExpiresAt: a.credentialExpiresAt }),
        credentialStatus: a.credentialStatus,
      };
    }),
  };
}
