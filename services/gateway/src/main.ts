/** The gateway: its service clients, the OAuth sweep and its HTTP server (MCP, OAuth, dashboard); the wiring is startService's. */
import { fileURLToPath } from 'node:url';
import { AuditService } from '@adsmcp/proto/changes/v1/audit_pb';
import { ChangesService } from '@adsmcp/proto/changes/v1/changes_pb';
import { MarketingService } from '@adsmcp/proto/marketing/v1/marketing_pb';
import { OptimizerService } from '@adsmcp/proto/optimizer/v1/optimizer_pb';
import { UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { createPrincipalSigner } from '@adsmcp/runtime/principal';
import { serviceDirectory } from '@adsmcp/runtime/service-client';
import { httpServer, startService } from '@adsmcp/runtime/service-kit';
import { startAuditRelay } from './audit-relay.ts';
import { loadConfig } from './config.ts';
import { startOAuthSweep } from './oauth/sweep.ts';
import { buildServer } from './server.ts';

startService({
  name: 'gateway',
  config: loadConfig,
  database: { migrationsDir: fileURLToPath(new URL('../migrations', import.meta.url)), max: 20 },
  // It authenticates agents, people and operators itself, and signs for them (PRINCIPAL_PRIVATE_KEY).
  trusts: [],
  peers: async ({ config }) => {
    const signer = await createPrincipalSigner(config.PRINCIPAL_PRIVATE_KEY);
    // Each proto package is served by one process; the gateway calls any service of it on one transport.
    return serviceDirectory(
      {
        upstream: { baseUrl: config.UPSTREAM_PROXY_URL, audience: 'upstream-proxy' },
        changes: { baseUrl: config.CHANGES_URL, audience: 'changes' },
        optimizer: { baseUrl: config.OPTIMIZER_URL, audience: 'optimizer' },
        marketing: { baseUrl: config.MARKETING_URL, audience: 'marketing' },
      },
      signer,
    );
  },
  // Expired OAuth rows, old consent decisions and connections never redeemed (docs/oauth.md).
  // The gateway's audit rows are relayed into the workspace's chained log (docs/audit.md).
  jobs: ({ pool, logger, peers: clientOf }) => [
    startOAuthSweep({ pool, logger }),
    startAuditRelay({ pool, logger, audit: clientOf(AuditService) }),
  ],
  server: ({ pool, logger, config, peers: clientOf }) => {
    const { app, drain } = buildServer(
      {
        pool,
        publicUrl: config.PUBLIC_URL,
        logger,
        upstream: clientOf(UpstreamService),
        changes: clientOf(ChangesService),
        optimizer: clientOf(OptimizerService),
        marketing: clientOf(MarketingService),
        clientOf,
      },
      {
        publicUrl: config.PUBLIC_URL,
        allowedOrigins: config.ALLOWED_ORIGINS,
        ratePerSecond: config.MCP_RATE_PER_SECOND,
        rateBurst: config.MCP_RATE_BURST,
        maxBodyBytes: config.MAX_BODY_BYTES,
        authFailuresPerSecond: config.AUTH_FAILURES_PER_MINUTE / 60,
        authFailuresBurst: config.AUTH_FAILURES_PER_MINUTE,
        authCacheMs: config.AUTH_CACHE_SECONDS * 1000,
        requestTimeoutMs: config.REQUEST_TIMEOUT_SECONDS * 1000,
        shutdownDelayMs: config.SHUTDOWN_DELAY_MS,
        trustProxy: config.TRUST_PROXY,
        assetLinks: { keyMaterial: config.PRINCIPAL_PRIVATE_KEY, ttlSeconds: config.ASSET_LINK_TTL_SECONDS },
      },
    );
    // Open MCP streams are drained before the server closes.
    return httpServer(app, () => drain.drain());
  },
  announce: ({ config }) => ({ url: `${config.PUBLIC_URL}/mcp` }),
});
