/** The ads sandbox (the simulated ad platform): wiring only (config -> pool -> migrations -> server -> listen). */
import type { AddressInfo } from 'node:net';
import { openServiceDatabase } from '@adsmcp/runtime/db';
import { announceListening, onShutdown, runMain } from '@adsmcp/runtime/lifecycle';
import { createLogger } from '@adsmcp/runtime/log';
import { startMetrics } from '@adsmcp/runtime/metrics';
import { startTracing } from '@adsmcp/runtime/telemetry';
import { loadConfig } from './config.ts';
import { buildServer, MIGRATIONS_DIR, SCHEMA, SERVICE_NAME } from './server.ts';

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
  const app = buildServer({
    pool,
    adminToken: config.SANDBOX_ADMIN_TOKEN,
    logger,
    ratePerSecond: config.SANDBOX_RATE_PER_SECOND,
  });
  await app.listen({ port: config.PORT, host: config.HOST });
  const { port } = app.server.address() as AddressInfo;
  announceListening(SERVICE_NAME, port, { metrics_port: metrics.port });
  onShutdown(logger, async () => {
    await app.close();
    await pool.end();
    await metrics.close();
    await tracing.shutdown();
  });
});
