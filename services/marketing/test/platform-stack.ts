/**
 * The marketing service as it runs beside the ad platform: the ads sandbox and the upstream-proxy
 * in-process on ephemeral loopback ports, the proxy trusting the gateway's key and the marketing
 * service's (as the trust table says), and the marketing service reading through it with its own
 * key. A test connects a sandbox account to a workspace and calls the ReportService as the gateway.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import {
  buildServer as buildSandbox,
  MIGRATIONS_DIR as SANDBOX_MIGRATIONS,
  SCHEMA as SANDBOX_SCHEMA,
} from '@adsmcp/ads-sandbox/server';
import { ReportService } from '@adsmcp/proto/marketing/v1/reports_pb';
import { UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { createPool, migrate, type Pool } from '@adsmcp/runtime/db';
import { createLogger } from '@adsmcp/runtime/log';
import {
  createPrincipalSigner,
  createPrincipalVerifier,
  generatePrincipalKeys,
  type Principal,
} from '@adsmcp/runtime/principal';
import { createServiceClient } from '@adsmcp/runtime/service-client';
import { GATEWAY_ISSUER, MARKETING_ISSUER } from '@adsmcp/runtime/trust';
import { stopTestServer, testDatabase } from '@adsmcp/testkit/postgres';
import { as, type ServiceUnderTest, startServiceUnderTest } from '@adsmcp/testkit/service-harness';
import type { Client } from '@connectrpc/connect';
import { createCredentialCipher } from '../../upstream-proxy/src/domain/credential-cipher.ts';
import {
  buildServer as buildProxy,
  MIGRATIONS_DIR as PROXY_MIGRATIONS,
  SERVICE_NAME as PROXY_NAME,
  SCHEMA as PROXY_SCHEMA,
} from '../../upstream-proxy/src/server.ts';
import { createPlatformClient } from '../../upstream-proxy/src/upstream/platform-client.ts';
import { buildServer, MIGRATIONS_DIR, SERVICE_NAME } from '../src/server.ts';

const SANDBOX_ADMIN_TOKEN = 'platform-stack-admin-token-0123';

export interface PlatformStack {
  reports: ServiceUnderTest<typeof ReportService>;
  /** The upstream-proxy's base URL, for a marketing service that signs with another key. */
  proxyUrl: string;
  /** The upstream-proxy, called as the gateway (connections, and reads a test compares with). */
  upstream: Client<typeof UpstreamService>;
  /**
   * A sandbox account connected to `who`'s workspace: its account_id there. The sandbox seeds it
   * with campaigns, ad groups, ads and daily insights.
   */
  connectAccount(who: Principal, options?: { bulkAccess?: boolean }): Promise<string>;
  /** One GET of the platform through the proxy as `who`; the parsed answer of a 2xx. */
  platform(
    who: Principal,
    accountId: string,
    path: string,
    query?: Record<string, string | string[]>,
  ): Promise<Record<string, unknown>>;
  /** One POST of the platform through the proxy as `who`; the parsed answer of a 2xx. */
  post(who: Principal, accountId: string, path: string, body: unknown): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
}

export async function startPlatformStack(): Promise<PlatformStack> {
  const db = await testDatabase();
  const silent = createLogger('platform-stack', 'silent');
  const pools: Pool[] = [];

  const sandboxPool = createPool(db.url, SANDBOX_SCHEMA);
  pools.push(sandboxPool);
  await migrate(sandboxPool, SANDBOX_SCHEMA, SANDBOX_MIGRATIONS);
  const sandbox = buildSandbox({ pool: sandboxPool, adminToken: SANDBOX_ADMIN_TOKEN, logger: silent });
  await sandbox.listen({ port: 0, host: '127.0.0.1' });
  const sandboxUrl = `http://127.0.0.1:${(sandbox.server.address() as AddressInfo).port}`;

  const gatewayKeys = await generatePrincipalKeys();
  const marketingKeys = await generatePrincipalKeys();
  const proxyPool = createPool(db.url, PROXY_SCHEMA);
  pools.push(proxyPool);
  await migrate(proxyPool, PROXY_SCHEMA, PROXY_MIGRATIONS);
  const proxy = buildProxy({
    pool: proxyPool,
    verifier: await createPrincipalVerifier(
      { [GATEWAY_ISSUER]: gatewayKeys.publicKeyPem, [MARKETING_ISSUER]: marketingKeys.publicKeyPem },
      PROXY_NAME,
    ),
    logger: silent,
    cipher: createCredentialCipher(randomBytes(32)),
    platform: createPlatformClient({ baseUrl: sandboxUrl }),
    budget: { ratePerSecond: 1000, burst: 1000 },
  });
  const proxyUrl = `http://127.0.0.1:${await proxy.listen(0)}`;
  const upstream = createServiceClient(
    UpstreamService,
    proxyUrl,
    PROXY_NAME,
    await createPrincipalSigner(gatewayKeys.privateKeyPem),
  );
  const asMarketing = createServiceClient(
    UpstreamService,
    proxyUrl,
    PROXY_NAME,
    await createPrincipalSigner(marketingKeys.privateKeyPem, MARKETING_ISSUER),
  );

  const reports = await startServiceUnderTest({
    service: ReportService,
    name: SERVICE_NAME,
    migrations: MIGRATIONS_DIR,
    build: (deps) => buildServer({ ...deps, upstream: asMarketing }),
  });

  const answer = (res: { status: number; bodyJson: string }, what: string) => {
    if (res.status < 200 || res.status > 299) throw new Error(`${what}: HTTP ${res.status} ${res.bodyJson}`);
    return JSON.parse(res.bodyJson) as Record<string, unknown>;
  };

  return {
    reports,
    proxyUrl,
    upstream,
    async connectAccount(who, options = {}) {
      const res = await fetch(`${sandboxUrl}/_sandbox/accounts`, {
        method: 'POST',
        headers: { authorization: `Bearer ${SANDBOX_ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          name: 'Report account',
          currency: 'USD',
          time_zone: 'America/New_York',
          ...(options.bulkAccess === true ? { bulk_access: true } : {}),
        }),
      });
      if (res.status !== 201)
        throw new Error(`sandbox refused the account: ${res.status} ${await res.text()}`);
      const created = (await res.json()) as { account_id: string; credential: string };
      const { account } = await upstream.createConnection(
        {
          name: 'Report account',
          currency: 'USD',
          timeZone: 'America/New_York',
          canWrite: true,
          upstreamAccountId: created.account_id,
          upstreamCredential: created.credential,
        },
        as(who),
      );
      return account?.accountId ?? '';
    },
    async platform(who, accountId, path, query = {}) {
      const res = await upstream.call(
        {
          accountId,
          method: 'GET',
          path,
          query: Object.entries(query).flatMap(([name, v]) =>
            (Array.isArray(v) ? v : [v]).map((value) => ({ name, value })),
          ),
          bodyJson: '',
          idempotencyKey: '',
        },
        as(who),
      );
      return answer(res, `GET ${path}`);
    },
    async post(who, accountId, path, body) {
      const res = await upstream.call(
        {
          accountId,
          method: 'POST',
          path,
          query: [],
          bodyJson: JSON.stringify(body),
          idempotencyKey: crypto.randomUUID(),
        },
        as(who),
      );
      return answer(res, `POST ${path}`);
    },
    async stop() {
      await reports.stop();
      await proxy.close(1000);
      await sandbox.close();
      for (const pool of pools) await pool.end();
      await db.drop();
      await stopTestServer();
    },
  };
}
