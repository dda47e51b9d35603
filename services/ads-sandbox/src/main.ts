/** The ads sandbox (the simulated ad platform): wiring only (config -> pool -> migrations -> server -> listen). */
import type { AddressInfo } from 'node:net';
import { createPool, migrate, poolErrorsTo } from '@adsmcp/runtime/db';
import { announceListening, onShutdown, runMain } from '@adsmcp/runtime/lifecycle';
import { createLogger } from '@adsmcp/runtime/log';
import { loadConfig } from './config.ts';
import { buildServer, MIGRATIONS_DIR, SCHEMA, SERVICE_NAME } from './server.ts';

runMain(SERVICE_NAME, async () => {
  const config = loadConfig();
  const logger = createLogger(SERVICE_NAME);
  const pool = createPool(config.DATABASE_URL, SCHEMA, 10, (err) =>
    logger.warn({ error: err.message, code: (err as { code?: string }).code }, 'postgres connection lost'),
  );
  const { applied } = await migrate(pool, SCHEMA, MIGRATIONS_DIR);
  logger.info({ applied }, 'migrated');
  const app = buildServer({ pool, adminToken: config.SANDBOX_ADMIN_TOKEN, logger });
  await app.listen({ port: config.PORT, host: config.HOST });
  const { port } = app.server.address() as AddressInfo;
  announceListening(SERVICE_NAME, port);
  onShutdown(logger, async () => {
    await app.close();
    await pool.end();
  });
});
