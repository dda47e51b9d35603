/** The marketing service: wiring only (config -> pool -> migrations -> bus -> competitor watch, performance imports -> server -> listen). */
import { migrateBus, startPruning } from '@adsmcp/runtime/bus/outbox';
import { createPgTransport } from '@adsmcp/runtime/bus/pg-transport';
import { openServiceDatabase } from '@adsmcp/runtime/db';
import { announceListening, onShutdown, runMain } from '@adsmcp/runtime/lifecycle';
import { createLogger } from '@adsmcp/runtime/log';
import { createPrincipalVerifier } from '@adsmcp/runtime/principal';
import { createSafeFetcher } from '@adsmcp/runtime/safe-fetch';
import { loadConfig } from './config.ts';
import { buildServer, MIGRATIONS_DIR, SERVICE_NAME } from './server.ts';
import { createCompetitorChecker } from './work/competitor-checks.ts';
import { startCompetitorWatch } from './work/competitor-schedule.ts';
import { createImportHandler, IMPORT_TOPIC, type ImportMessage } from './work/import-worker.ts';

const HOUR_MS = 60 * 60 * 1000;
/** Deliveries of one performance import before it is marked failed (gave up). */
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
  const verifier = await createPrincipalVerifier(config.PRINCIPAL_PUBLIC_KEY, SERVICE_NAME);
  // --- Competitor watch: scheduled checks of competitor sources on the Postgres bus
  // (competitor-check topic). Kept as one block: the bus and its pruning may be shared with other
  // topics of this service.
  await migrateBus(pool, SERVICE_NAME);
  const competitorBus = createPgTransport({ pool, logger });
  const competitorWatch = await startCompetitorWatch({
    pool,
    logger,
    bus: competitorBus,
    checker: createCompetitorChecker({ pool, fetchPage: createSafeFetcher(), logger }),
  });
  const stopCompetitorPruning = startPruning({
    pool,
    logger,
    everyMs: HOUR_MS,
    olderThanMs: 7 * 24 * HOUR_MS,
  });
  // --- end of competitor watch
  // --- Performance imports: parsed, checked and saved off the request by a consumer of the
  // performance-import topic. The bus tables were migrated above, and the pruning above covers
  // every topic of this service's outbox; this block has its own transport so that it can move
  // without the competitor watch.
  const importBus = createPgTransport({ pool, logger });
  await importBus.consume<ImportMessage>({
    name: 'marketing-performance-import',
    topic: IMPORT_TOPIC,
    handler: createImportHandler({ pool, logger, maxAttempts: IMPORT_MAX_ATTEMPTS }),
    maxAttempts: IMPORT_MAX_ATTEMPTS,
    backoff: { baseMs: 500, capMs: 30_000 },
    concurrency: 2,
  });
  // --- end of performance imports
  const server = buildServer({ pool, verifier, logger });
  const port = await server.listen(config.PORT, config.HOST);
  announceListening(SERVICE_NAME, port);
  onShutdown(logger, async () => {
    await server.close();
    await competitorWatch.stop(); // competitor watch
    await stopCompetitorPruning(); // competitor watch
    await competitorBus.stop(); // competitor watch
    await importBus.stop(); // performance imports
    await pool.end();
  });
});
