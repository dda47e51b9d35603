/** The gateway: wiring only (config -> pool -> migrations -> service clients -> server -> listen). */
import { fileURLToPath } from 'node:url';
import { ChangesService } from '@adsmcp/proto/changes/v1/changes_pb';
import { MarketingService } from '@adsmcp/proto/marketing/v1/marketing_pb';
import { OptimizerService } from '@adsmcp/proto/optimizer/v1/optimizer_pb';
import { UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { openServiceDatabase } from '@adsmcp/runtime/db';
import { announceListening, onShutdown, runMain } from '@adsmcp/runtime/lifecycle';
import { createLogger } from '@adsmcp/runtime/log';
import { startMetrics } from '@adsmcp/runtime/metrics';
import { createPrincipalSigner } from '@adsmcp/runtime/principal';
import { serviceDirectory } from '@adsmcp/runtime/service-client';
import { startTracing } from '@adsmcp/runtime/telemetry';
import { loadConfig } from './config.ts';
import { startOAuthSweep } from './oauth/sweep.ts';
import { buildServer } from './server.ts';

const SERVICE_NAME = 'gateway';

runMain(SERVICE_NAME, async () => {
  const config = loadConfig();
  // Before any server is built: the Fastify instrumentation attaches to instances made afterwards.
  const tracing = await startTracing(SERVICE_NAME);
  const logger = createLogger(SERVICE_NAME);
  const metrics = await startMetrics(SERVICE_NAME, { host: config.HOST, logger });
  const pool = await openServiceDatabase({
    url: config.DATABASE_URL,
    schema: SERVICE_NAME,
    migrationsDir: fileURLToPath(new URL('../migrations', import.meta.url)),
    logger,
    max: 20,
  });
  const signer = await createPrincipalSigner(config.PRINCIPAL_PRIVATE_KEY);
  // Each proto package is served by one process; the gateway calls any service of it on one transport.
  const clientOf = serviceDirectory(
    {
      upstream: { baseUrl: config.UPSTREAM_PROXY_URL, audience: 'upstream-proxy' },
      changes: { baseUrl: config.CHANGES_URL, audience: 'changes' },
      optimizer: { baseUrl: config.OPTIMIZER_URL, audience: 'optimizer' },
      marketing: { baseUrl: config.MARKETING_URL, audience: 'marketing' },
    },
    signer,
  );
  const deps = {
    pool,
    publicUrl: config.PUBLIC_URL,
    logger,
    upstream: clientOf(UpstreamService),
    changes: clientOf(ChangesService),
    optimizer: clientOf(OptimizerService),
    marketing: clientOf(MarketingService),
    clientOf,
  };
  const { app, drain } = buildServer(deps, {
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
  });
  await app.listen({ port: config.PORT, host: config.HOST });
  // Expired OAuth rows, old consent decisions and connections never redeemed (docs/oauth.md).
  const stopOAuthSweep = startOAuthSweep({ pool, logger });
  announceListening(SERVICE_NAME, config.PORT, {
    url: `${config.PUBLIC_URL}/mcp`,
    metrics_port: metrics.port,
  });
  onShutdown(logger, async () => {
    await drain.drain();
    await app.close();
    await stopOAuthSweep();
    await pool.end();
    await metrics.close();
    await tracing.shutdown();
  });
});
