/** UpstreamService: proto <-> domain for the workspace's ad-account connections. */

import { randomUUID } from 'node:crypto';
import type { AccountSchema, UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { principalOf } from '@adsmcp/runtime/connect-server';
import type { Pool } from '@adsmcp/runtime/db';
import { InvalidArgumentError, UnavailableError } from '@adsmcp/runtime/errors';
import { isUuid } from '@adsmcp/runtime/ids';
import type { Logger } from '@adsmcp/runtime/log';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { ServiceImpl } from '@connectrpc/connect';
import { requirePlatformAccess } from '../domain/access.ts';
import {
  AccountNotFoundError,
  type Connection,
  ConnectionExistsError,
  checkPlatformAccount,
  credentialStatus,
  type PlatformAccount,
  validateNewConnection,
} from '../domain/connection.ts';
import type { CredentialCipher } from '../domain/credential-cipher.ts';
import { validateCall } from '../domain/platform-call.ts';
import { createConnectionCache } from '../store/connection-cache.ts';
import { getConnection, insertConnection, listConnections } from '../store/connection-store.ts';
import { createPlatformCaller } from '../upstream/platform-caller.ts';
import { type PlatformClient, PlatformError } from '../upstream/platform-client.ts';
import { createRequestBudget, type RequestBudgetOptions } from '../upstream/request-budget.ts';

export interface UpstreamHandlerDeps {
  pool: Pool;
  logger: Logger;
  cipher: CredentialCipher;
  platform: PlatformClient;
  /** The per-account request budget to the platform, shared by every replica on this database. */
  budget: RequestBudgetOptions;
}

function toAccount(c: Connection): MessageInitShape<typeof AccountSchema> {
  return {
    accountId: c.accountId,
    name: c.name,
    currency: c.currency,
    timeZone: c.timeZone,
    canWrite: c.canWrite,
    upstreamAccountId: c.upstreamAccountId,
    createdAt: c.createdAt.toISOString(),
    credentialExpiresAt: c.credentialExpiresAt?.toISOString() ?? '',
    credentialStatus: credentialStatus(c.credentialExpiresAt, new Date()),
  };
}

/** Asks the platform which account `credential` opens, as a domain error when it cannot say. */
async function platformAccountOf(
  platform: PlatformClient,
  credential: string,
  signal: AbortSignal,
): Promise<PlatformAccount> {
  try {
    return await platform.getMe(credential, signal);
  } catch (err) {
    if (!(err instanceof PlatformError)) throw err;
    if (err.kind === 'unauthorized') {
      throw new InvalidArgumentError(
        `upstream_credential was refused by the ad platform (HTTP ${err.status}); check that it is the account's current API credential`,
      );
    }
    throw new UnavailableError(
      `could not verify upstream_credential with the ad platform: ${err.message}; try again`,
    );
  }
}

/** createUpstreamHandlers builds the UpstreamService implementation from its dependencies. */
export function createUpstreamHandlers(deps: UpstreamHandlerDeps): ServiceImpl<typeof UpstreamService> {
  const caller = createPlatformCaller({
    platform: deps.platform,
    budget: createRequestBudget(deps.pool, deps.budget),
    logger: deps.logger,
  });
  const connections = createConnectionCache({ pool: deps.pool, cipher: deps.cipher });

  return {
    async getAccount(req, ctx) {
      const principal = principalOf(ctx);
      const connection = isUuid(req.accountId)
        ? await getConnection(deps.pool, principal.workspaceId, req.accountId)
        : undefined;
      if (connection === undefined) throw new AccountNotFoundError(req.accountId);
      return { account: toAccount(connection) };
    },

    async call(req, ctx) {
      const principal = principalOf(ctx);
      const call = validateCall({
        method: req.method,
        path: req.path,
        query: req.query,
        bodyJson: req.bodyJson,
        idempotencyKey: req.idempotencyKey,
        body: req.body,
        contentType: req.contentType,
      });
      const { workspaceId } = principal;
      const found = isUuid(req.accountId) ? await connections.get(workspaceId, req.accountId) : undefined;
      if (found === undefined) throw new AccountNotFoundError(req.accountId);
      requirePlatformAccess(principal, call, found.connection);
      // A refusal for the rate carries its seconds to wait (connect-errors.ts maps it).
      return await caller.call(found.connection.accountId, found.credential, call, ctx.signal);
    },

    async listAccounts(_req, ctx) {
      const principal = principalOf(ctx);
      const connections = await listConnections(deps.pool, principal.workspaceId);
      return { accounts: connections.map(toAccount) };
    },

    async createConnection(req, ctx) {
      const principal = principalOf(ctx);
      const input = validateNewConnection({
        name: req.name,
        currency: req.currency,
        timeZone: req.timeZone,
        canWrite: req.canWrite,
        upstreamAccountId: req.upstreamAccountId,
        upstreamCredential: req.upstreamCredential,
      });
      const platformAccount = await platformAccountOf(deps.platform, input.upstreamCredential, ctx.signal);
      checkPlatformAccount(input, platformAccount);
      const accountId = randomUUID();
      const workspaceId = principal.workspaceId;
      const created = await insertConnection(deps.pool, {
        accountId,
        workspaceId,
        name: input.name,
        currency: input.currency,
        timeZone: input.timeZone,
        canWrite: input.canWrite,
        upstreamAccountId: input.upstreamAccountId,
        credentialCiphertext: deps.cipher.seal(input.upstreamCredential, { workspaceId, accountId }),
        credentialExpiresAt: platformAccount.credentialExpiresAt ?? null,
      });
      if (created === undefined) throw new ConnectionExistsError(input.upstreamAccountId);
      return { account: toAccount(created) };
    },
  };
}
