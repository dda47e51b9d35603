/** The marketing service: wiring only (config -> pool -> migrations -> bus -> workers -> server -> listen). */
import { migrateBus, startPruning } from '@adsmcp/runtime/bus/outbox';
import { createPgTransport } from '@adsmcp/runtime/bus/pg-transport';
import { openServiceDatabase } from '@adsmcp/runtime/db';
import { announceListening, onShutdown, runMain } from '@adsmcp/runtime/lifecycle';
import { createLogger } from '@adsmcp/runtime/log';
import { createPrincipalVerifier } from '@adsmcp/runtime/principal';
import { loadConfig } from './config.ts';
import { buildServer, MIGRATIONS_DIR, SERVICE_NAME } from './server.ts';
import { createImportHandler, IMPORT_TOPIC, type ImportMessage } from './work/import-worker.ts';

const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;
/** Deliveries of one import before it is marked failed (gave up). */
const IMPORT_MAX_ATTEMPTS = 5;

runMain(SERVICE_NAME, async () => {
  const config = loadConfig();
  const logger = createLogger(SERVICE_NAME);
  const pool = await openServiceDatabase({
    url: config.DATABASE_URL,
    schema: SERVICE_NAME,
    migrationsDir: MIGRATIONS_DIR,
    logger,
  });
  await migrateBus(pool, SERVICE_NAME);
  const bus = createPgTransport({ pool, logger });

  // --- Performance imports: parsed, checked and saved off the request, on the bus. ---
  await bus.consume<ImportMessage>({
    name: 'marketing-performance-import',
    topic: IMPORT_TOPIC,
    handler: createImportHandler({ pool, logger, maxAttempts: IMPORT_MAX_ATTEMPTS }),
    maxAttempts: IMPORT_MAX_ATTEMPTS,
    backoff: { baseMs: 500, capMs: 30_000 },
    concurrency: 2,
  });
  // --- end of performance imports ---

  // Done messages and inbox records are kept a week: far beyond any redelivery window.
  const stopPruning = startPruning({ pool, logger, everyMs: HOUR_MS, olderThanMs: 7 * DAY_MS });
  const verifier = await createPrincipalVerifier(config.PRINCIPAL_PUBLIC_KEY, SERVICE_NAME);
  const server = buildServer({ pool, verifier, logger });
  const port = await server.listen(config.PORT, config.HOST);
  announceListening(SERVICE_NAME, port);
  onShutdown(logger, async () => {
    await server.close();
    await stopPruning();
    await bus.stop();
    await pool.end();
  });
});
