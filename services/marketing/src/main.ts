/** The marketing service: the competitor watch, the performance-import worker and its Connect server (the wiring is startService's). */
import { createSafeFetcher } from '@adsmcp/runtime/safe-fetch';
import { consume, startService } from '@adsmcp/runtime/service-kit';
import { loadConfig } from './config.ts';
import { buildServer, MIGRATIONS_DIR, SERVICE_NAME } from './server.ts';
import { createCompetitorChecker } from './work/competitor-checks.ts';
import { startCompetitorWatch } from './work/competitor-schedule.ts';
import {
  createImportGiveUp,
  createImportHandler,
  IMPORT_TOPIC,
  type ImportMessage,
} from './work/import-worker.ts';

/** Deliveries of one performance import before it is marked failed (gave up). */
const IMPORT_MAX_ATTEMPTS = 5;

startService({
  name: SERVICE_NAME,
  config: loadConfig,
  // Bus topics: competitor checks (scheduled) and performance imports.
  database: { migrationsDir: MIGRATIONS_DIR, bus: true },
  // The changes worker reads the campaign images a change uploads; the optimizer checks the assets its variants name.
  trusts: ['gateway', 'changes', 'optimizer'],
  consumers: ({ pool, logger }) => [
    // Performance imports are parsed, checked and saved off the request.
    consume<ImportMessage>({
      name: 'marketing-performance-import',
      topic: IMPORT_TOPIC,
      handler: createImportHandler({ pool, logger }),
      giveUp: createImportGiveUp({ pool, logger }),
      maxAttempts: IMPORT_MAX_ATTEMPTS,
      backoff: { baseMs: 500, capMs: 30_000 },
      concurrency: 2,
    }),
  ],
  jobs: ({ pool, logger, bus }) => [
    // Due checks enqueued on a schedule, and their consumer: public pages read through the safe fetcher.
    startCompetitorWatch({
      pool,
      logger,
      bus,
      checker: createCompetitorChecker({ pool, fetchPage: createSafeFetcher(), logger }),
    }),
  ],
  server: ({ pool, verifier, logger }) => buildServer({ pool, verifier, logger }),
});
