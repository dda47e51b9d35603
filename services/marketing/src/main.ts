/** The marketing service: wiring only (config -> pool -> migrations -> server -> listen). */
import { openServiceDatabase } from '@adsmcp/runtime/db';
import { announceListening, onShutdown, runMain } from '@adsmcp/runtime/lifecycle';
import { createLogger } from '@adsmcp/runtime/log';
import { createPrincipalVerifier } from '@adsmcp/runtime/principal';
import { loadConfig } from './config.ts';
import { buildServer, MIGRATIONS_DIR, SERVICE_NAME } from './server.ts';

runMain(SERVICE_NAME, async () => {
  const config = loadConfig();
  const logger = createLogger(SERVICE_NAME);
  const pool = await openServiceDatabase({
    url: config.DATABASE_URL,
    schema: SERVICE_NAME,
    migrationsDir: MIGRATIONS_DIR,
    logger,
  });
  const verifier = await createPrincipalVerifier(config.PRINCIPAL_PUBLIC_KEY, SERVICE_NAME);
  const server = buildServer({ pool, verifier, logger });
  const port = await server.listen(config.PORT, config.HOST);
  announceListening(SERVICE_NAME, port);
  onShutdown(logger, async () => {
    await server.close();
    await pool.end();
  });
});
