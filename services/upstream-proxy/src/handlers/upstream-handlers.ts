/** UpstreamService: proto <-> domain for the workspace's ad-account connections. */
import { randomUUID } from 'node:crypto';
import type { AccountSchema, UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import type { Pool } from '@adsmcp/runtime/db';
import { InvalidArgumentError, UnavailableError } from '@adsmcp/runtime/errors';
import { type Principal, principalKey } from '@adsmcp/runtime/principal';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from '@connectrpc/connect';
import { requireConnectionAdmin, requireReader } from '../domain/access.ts';
import {
  type Connection,
  ConnectionExistsError,
  checkPlatformAccount,
  type PlatformAccount,
  validateNewConnection,
} from '../domain/connection.ts';
import type { CredentialCipher } from '../domain/credential-cipher.ts';
import { insertConnection, listConnections } from '../store/connection-store.ts';
import { type PlatformClient, PlatformError } from '../upstream/platform-client.ts';

export interface UpstreamHandlerDeps {
  pool: Pool;
  cipher: CredentialCipher;
  platform: PlatformClient;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The verified caller; the service interceptor has already refused calls without one. */
function principalOf(ctx: HandlerContext): Principal {
  const principal = ctx.values.get(principalKey);
  if (principal === undefined) throw new ConnectError('missing principal', Code.Unauthenticated);
  if (!UUID.test(principal.workspaceId)) {
    throw new ConnectError('the principal names no valid workspace', Code.Unauthenticated);
  }
  return principal;
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
  return {
    async listAccounts(_req, ctx) {
      const principal = principalOf(ctx);
      requireReader(principal);
      const connections = await listConnections(deps.pool, principal.workspaceId);
      return { accounts: connections.map(toAccount) };
    },

    async createConnection(req, ctx) {
      const principal = principalOf(ctx);
      requireConnectionAdmin(principal);
      const input = validateNewConnection({
        name: req.name,
        currency: req.currency,
        timeZone: req.timeZone,
        canWrite: req.canWrite,
        upstreamAccountId: req.upstreamAccountId,
        upstreamCredential: req.upstreamCredential,
      });
      checkPlatformAccount(
        input,
        await platformAccountOf(deps.platform, input.upstreamCredential, ctx.signal),
      );
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
      });
      if (created === undefined) throw new ConnectionExistsError(input.upstreamAccountId);
      return { account: toAccount(created) };
    },
  };
}
