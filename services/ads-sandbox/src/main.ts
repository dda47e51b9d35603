/** The ads sandbox (the simulated ad platform): its HTTP server on a database (the wiring is startService's). */
import { httpServer, startService } from '@adsmcp/runtime/service-kit';
import { loadConfig } from './config.ts';
import { buildServer, MIGRATIONS_DIR, SCHEMA, SERVICE_NAME } from './server.ts';

startService({
  name: SERVICE_NAME,
  config: loadConfig,
  database: { schema: SCHEMA, migrationsDir: MIGRATIONS_DIR },
  // Its callers hold its admin token or an account's credential, not principal tokens.
  trusts: [],
  server: ({ pool, logger, config }) =>
    httpServer(
      buildServer({
        pool,
        adminToken: config.SANDBOX_ADMIN_TOKEN,
        logger,
        ratePerSecond: config.SANDBOX_RATE_PER_SECOND,
        credentialValidDays: config.SANDBOX_CREDENTIAL_VALID_DAYS,
      }),
    ),
});
