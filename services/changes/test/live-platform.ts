/**
 * The ad platform a change is about, for the changes service's tests: the real ads sandbox and
 * the real upstream-proxy in-process over their own database, the proxy trusting the changes
 * service's key as the stack does, one sandbox account connected for a workspace, and a client
 * the changes service re-reads objects with (signed as `adsmcp-changes`).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import {
  buildServer as buildSandbox,
  MIGRATIONS_DIR as SANDBOX_MIGRATIONS,
  SCHEMA as SANDBOX_SCHEMA,
} from '@adsmcp/ads-sandbox/server';
import { UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { createPool, migrate } from '@adsmcp/runtime/db';
import { createLogger } from '@adsmcp/runtime/log';
import {
  createPrincipalSigner,
  createPrincipalVerifier,
  GATEWAY_ISSUER,
  generatePrincipalKeys,
  type Principal,
} from '@adsmcp/runtime/principal';
import { callerKey, createServiceClient } from '@adsmcp/runtime/service-client';
import { testDatabase } from '@adsmcp/testkit/postgres';
import { createCredentialCipher } from '@adsmcp/upstream-proxy/src/domain/credential-cipher.ts';
import {
  buildServer as buildProxy,
  CHANGES_ISSUER,
  MIGRATIONS_DIR,
  SCHEMA,
  SERVICE_NAME,
} from '@adsmcp/upstream-proxy/src/server.ts';
import { createPlatformClient } from '@adsmcp/upstream-proxy/src/upstream/platform-client.ts';
import { type Client, createContextValues } from '@connectrpc/connect';
import pg from 'pg';

const ADMIN_TOKEN = randomBytes(24).toString('base64url');

export interface LivePlatform {
  /** What the changes service re-reads with: signed as the changes service. */
  upstream: Client<typeof UpstreamService>;
  /** The connected account's id in the workspace (what a change names). */
  accountId: string;
  /** The sandbox account's ads, as the platform shows them. */
  ads(): Promise<{ id: string; name: string; revision: number }[]>;
  /** Edits an ad on the platform directly (its revision moves), as the platform's console would. */
  editAd(adId: string, name: string): Promise<void>;
  /** Makes the platform answer 500 to every read of `path` until `clearFaults`. */
  failReads(path: string): Promise<void>;
  /**
   * Makes the platform fail the next `count` updates whose path starts with `path`: answering 500
   * without applying them (`status_500`), or after applying them (`fail_after_commit`).
   */
  failWrites(path: string, kind: 'status_500' | 'fail_after_commit', count: number): Promise<void>;
  clearFaults(): Promise<void>;
  /**
   * Makes the account's connection read-only, or writable again, as an operator's edit of the
   * upstream-proxy's row would (the proxy drops what it holds of it at its next call).
   */
  setCanWrite(canWrite: boolean): Promise<void>;
  /**
   * Takes the account's connection out of the workspace, or gives it back, as an operator's move
   * of the upstream-proxy's row would: while out, the proxy answers NotFound for the account.
   */
  setConnected(connected: boolean): Promise<void>;
  /** The platform's ledger for `path`: one entry per mutation it applied. */
  ledger(path: string): Promise<{ method: string; path: string; idempotency_key: string | null }[]>;
  stop(): Promise<void>;
}

/**
 * startLivePlatform starts the sandbox and the proxy and connects one account for `workspaceId`;
 * the proxy's request budget is `budget` (default: high enough that no test meets it).
 */
export async function startLivePlatform(
  workspaceId: string,
  budget: { ratePerSecond: number; burst: number } = { ratePerSecond: 1000, burst: 1000 },
): Promise<LivePlatform> {
  const db = await testDatabase();
  const silent = createLogger(SERVICE_NAME, 'silent');
  const sandboxPool = createPool(db.url, SANDBOX_SCHEMA);
  await migrate(sandboxPool, SANDBOX_SCHEMA, SANDBOX_MIGRATIONS);
  const sandbox = buildSandbox({ pool: sandboxPool, adminToken: ADMIN_TOKEN, logger: silent });
  await sandbox.listen({ port: 0, host: '127.0.0.1' });
  const sandboxUrl = `http://127.0.0.1:${(sandbox.server.address() as AddressInfo).port}`;

  const gateway = await generatePrincipalKeys();
  const changes = await generatePrincipalKeys();
  const pool = createPool(db.url, SCHEMA);
  await migrate(pool, SCHEMA, MIGRATIONS_DIR);
  const proxy = buildProxy({
    pool,
    verifier: await createPrincipalVerifier(
      { [GATEWAY_ISSUER]: gateway.publicKeyPem, [CHANGES_ISSUER]: changes.publicKeyPem },
      SERVICE_NAME,
    ),
    logger: silent,
    cipher: createCredentialCipher(randomBytes(32)),
    platform: createPlatformClient({ baseUrl: sandboxUrl }),
    budget,
  });
  const proxyUrl = `http://127.0.0.1:${await proxy.listen(0)}`;

  const created = await fetch(`${sandboxUrl}/_sandbox/accounts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Changes test account', currency: 'USD', time_zone: 'UTC' }),
  });
  if (created.status !== 201) throw new Error(`the sandbox refused the account: ${await created.text()}`);
  const sandboxAccount = (await created.json()) as { account_id: string; credential: string };
  const admin: Principal = {
    workspaceId,
    credentialId: 'changes-test',
    userId: null,
    role: 'admin',
    scopes: ['read', 'write'],
    via: 'operator',
  };
  const asAdmin = { contextValues: createContextValues().set(callerKey, admin) };
  const gatewayClient = createServiceClient(
    UpstreamService,
    proxyUrl,
    SERVICE_NAME,
    await createPrincipalSigner(gateway.privateKeyPem),
  );
  const { account } = await gatewayClient.createConnection(
    {
      name: 'Changes test account',
      currency: 'USD',
      timeZone: 'UTC',
      canWrite: true,
      upstreamAccountId: sandboxAccount.account_id,
      upstreamCredential: sandboxAccount.credential,
    },
    asAdmin,
  );
  if (!account) throw new Error('the upstream-proxy returned no account');

  return {
    upstream: createServiceClient(
      UpstreamService,
      proxyUrl,
      SERVICE_NAME,
      await createPrincipalSigner(changes.privateKeyPem, CHANGES_ISSUER),
    ),
    accountId: account.accountId,
    async ads() {
      const res = await gatewayClient.call(
        { accountId: account.accountId, method: 'GET', path: '/ads', query: [] },
        asAdmin,
      );
      return (JSON.parse(res.bodyJson) as { data: { id: string; name: string; revision: number }[] }).data;
    },
    async editAd(adId, name) {
      const c = new pg.Client({ connectionString: db.url });
      await c.connect();
      try {
        await c.query(
          `UPDATE ${SANDBOX_SCHEMA}.ads SET name = $1, revision = revision + 1 WHERE id = $2 AND account_id = $3`,
          [name, adId, sandboxAccount.account_id],
        );
      } finally {
        await c.end();
      }
    },
    async failReads(path) {
      const res = await fetch(`${sandboxUrl}/_sandbox/faults`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          account_id: sandboxAccount.account_id,
          method: 'GET',
          path_prefix: path,
          kind: 'status_500',
          count: 10_000,
        }),
      });
      if (res.status !== 201) throw new Error(`the sandbox refused the fault: ${await res.text()}`);
    },
    async failWrites(path, kind, count) {
      const res = await fetch(`${sandboxUrl}/_sandbox/faults`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          account_id: sandboxAccount.account_id,
          method: 'POST',
          path_prefix: path,
          kind,
          count,
        }),
      });
      if (res.status !== 201) throw new Error(`the sandbox refused the fault: ${await res.text()}`);
    },
    async clearFaults() {
      await fetch(`${sandboxUrl}/_sandbox/faults`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
    },
    async setCanWrite(canWrite) {
      await pool.query('UPDATE connections SET can_write = $2 WHERE account_id = $1', [
        account.accountId,
        canWrite,
      ]);
    },
    async setConnected(connected) {
      await pool.query('UPDATE connections SET workspace_id = $2 WHERE account_id = $1', [
        account.accountId,
        connected ? workspaceId : randomUUID(),
      ]);
    },
    async ledger(path) {
      const res = await fetch(
        `${sandboxUrl}/_sandbox/ledger?account_id=${encodeURIComponent(sandboxAccount.account_id)}`,
        { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } },
      );
      if (res.status !== 200) throw new Error(`the sandbox refused the ledger: ${await res.text()}`);
      const { entries } = (await res.json()) as {
        entries: { method: string; path: string; idempotency_key: string | null }[];
      };
      return entries.filter((e) => e.path === path);
    },
    async stop() {
      await proxy.close(1000);
      await sandbox.close();
      await pool.end();
      await sandboxPool.end();
      // The PostgreSQL server itself is stopped by the service harness.
      await db.drop();
    },
  };
}
