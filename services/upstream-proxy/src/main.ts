/** The upstream-proxy: its platform client and its Connect server, on a database and no bus (the wiring is startService's). */
import { startService } from '@adsmcp/runtime/service-kit';
import { loadConfig } from './config.ts';
import { createCredentialCipher } from './domain/credential-cipher.ts';
import { buildServer, MIGRATIONS_DIR, SCHEMA, SERVICE_NAME } from './server.ts';
import { createPlatformClient } from './upstream/platform-client.ts';

startService({
  name: SERVICE_NAME,
  config: loadConfig,
  database: { schema: SCHEMA, migrationsDir: MIGRATIONS_DIR },
  trusts: ['gateway', 'changes', 'optimizer', 'marketing'],
  server: ({ pool, verifier, logger, config }) =>
    buildServer({
      pool,
      verifier,
      logger,
      cipher: createCredentialCipher(config.UPSTREAM_CREDENTIAL_KEY),
      platform: createPlatformClient({ baseUrl: config.UPSTREAM_URL, timeoutMs: config.UPSTREAM_TIMEOUT_MS }),
      budget: { ratePerSecond: config.UPSTREAM_RATE_PER_SECOND, burst: config.UPSTREAM_BURST },
    }),
});
