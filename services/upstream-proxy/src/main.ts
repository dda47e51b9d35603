/** The upstream-proxy: wiring only (config -> pool -> migrations -> server -> listen). */
import { openServiceDatabase } from '@adsmcp/runtime/db';
import { announceListening, onShutdown, runMain } from '@adsmcp/runtime/lifecycle';
import { createLogger } from '@adsmcp/runtime/log';
import { startMetrics } from '@adsmcp/runtime/metrics';
import { createPrincipalVerifier } from '@adsmcp/runtime/principal';
import { startTracing } from '@adsmcp/runtime/telemetry';
import { loadConfig, trustedIssuers } from './config.ts';
import { createCredentialCipher } from './domain/credential-cipher.ts';
import { buildServer, MIGRATIONS_DIR, SCHEMA, SERVICE_NAME } from './server.ts';
import { createPlatformClient } from './upstream/platform-client.ts';

runMain(SERVICE_NAME, async () => {
  const config = loadConfig();
  // Before any server is built: the Fastify instrumentation attaches to instances made afterwards.
  const tracing = await startTracing(SERVICE_NAME);
  const logger = createLogger(SERVICE_NAME);
  const metrics = await startMetrics(SERVICE_NAME, { host: config.HOST, logger });
  const pool = await openServiceDatabase({
    url: config.DATABASE_URL,
    schema: SCHEMA,
    migrationsDir: MIGRATIONS_DIR,
    logger,
  });
  const verifier = await createPrincipalVerifier(trustedIssuers(config), SERVICE_NAME);
  const server = buildServer({
    pool,
    verifier,
    logger,
    cipher: createCredentialCipher(config.UPSTREAM_CREDENTIAL_KEY),
    platform: createPlatformClient({ baseUrl: config.UPSTREAM_URL, timeoutMs: config.UPSTREAM_TIMEOUT_MS }),
    budget: { ratePerSecond: config.UPSTREAM_RATE_PER_SECOND, burst: config.UPSTREAM_BURST },
  });
  const port = await server.listen(config.PORT, config.HOST);
  announceListening(SERVICE_NAME, port, { metrics_port: metrics.port });
  onShutdown(logger, async () => {
    await server.close();
    await pool.end();
    await metrics.close();
    await tracing.shutdown();
  });
});
