/** The changes service: wiring only (config -> pool -> migrations -> server -> listen). */
import { fileURLToPath } from 'node:url';
import { createPool, migrate, poolErrorsTo } from '@adsmcp/runtime/db';
import { announceListening, onShutdown, runMain } from '@adsmcp/runtime/lifecycle';
import { createLogger } from '@adsmcp/runtime/log';
import { createPrincipalVerifier } from '@adsmcp/runtime/principal';
import { loadConfig } from './config.ts';
import { buildServer, SERVICE_NAME } from './server.ts';

runMain(SERVICE_NAME, async () => {
  const config = loadConfig();
  const logger = createLogger(SERVICE_NAME);
  const pool = createPool(config.DATABASE_URL, SERVICE_NAME, 10, (err) =>
    logger.warn({ error: err.message, code: (err as { code?: string }).code }, 'postgres connection lost'),
  );
  const { applied } = await migrate(
    pool,
    SERVICE_NAME,
    fileURLToPath(new URL('../migrations', import.meta.url)),
  );
  logger.info({ applied }, 'migrated');
  const verifier = await createPrincipalVerifier(config.PRINCIPAL_PUBLIC_KEY, SERVICE_NAME);
  const server = buildServer({ pool, verifier, logger });
  const port = await server.listen(config.PORT, config.HOST);
  announceListening(SERVICE_NAME, port);
  onShutdown(logger, async () => {
    await server.close();
    await pool.end();
  });
});
