/** The marketing service: wiring only (config -> pool -> migrations -> bus -> competitor watch, performance imports -> server -> listen). */
import { migrateBus, startPruning } from '@adsmcp/runtime/bus/outbox';
import { createBusTransport } from '@adsmcp/runtime/bus/transport';
import { openServiceDatabase } from '@adsmcp/runtime/db';
import { announceListening, onShutdown, runMain } from '@adsmcp/runtime/lifecycle';
import { createLogger } from '@adsmcp/runtime/log';
import { registerBusMetrics, startMetrics } from '@adsmcp/runtime/metrics';
import { createPrincipalVerifier, GATEWAY_ISSUER } from '@adsmcp/runtime/principal';
import { createSafeFetcher } from '@adsmcp/runtime/safe-fetch';
import { startTracing } from '@adsmcp/runtime/telemetry';
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

const HOUR_MS = 60 * 60 * 1000;
/** The changes service's issuer: its worker reads the campaign images a change uploads. */
const CHANGES_ISSUER = 'adsmcp-changes';
/** The optimizer's issuer: it checks the campaign assets its variants name. */
const OPTIMIZER_ISSUER = 'adsmcp-optimizer';
/** Deliveries of one performance import before it is marked failed (gave up). */
const IMPORT_MAX_ATTEMPTS = 5;

runMain(SERVICE_NAME, async () => {
  const config = loadConfig();
  // Before any server is built: the Fastify instrumentation attaches to instances made afterwards.
  const tracing = await startTracing(SERVICE_NAME);
  const logger = createLogger(SERVICE_NAME);
  const metrics = await startMetrics(SERVICE_NAME, { host: config.HOST, logger });
  const pool = await openServiceDatabase({
    url: config.DATABASE_URL,
    schema: SERVICE_NAME,
    migrationsDir: MIGRATIONS_DIR,
    logger,
  });
  const verifier = await createPrincipalVerifier(
    {
      [GATEWAY_ISSUER]: config.PRINCIPAL_PUBLIC_KEY,
      ...(config.CHANGES_PUBLIC_KEY === undefined ? {} : { [CHANGES_ISSUER]: config.CHANGES_PUBLIC_KEY }),
      ...(config.OPTIMIZER_PUBLIC_KEY === undefined
        ? {}
        : { [OPTIMIZER_ISSUER]: config.OPTIMIZER_PUBLIC_KEY }),
    },
    SERVICE_NAME,
  );
  // One bus for the service's work: Kafka when KAFKA_BROKERS is set, else the PostgreSQL queue on the
  // outbox table. Topics: competitor checks (scheduled) and performance imports.
  await migrateBus(pool, SERVICE_NAME);
  registerBusMetrics(pool);
  const bus = createBusTransport({ pool, logger, env: config, clientId: SERVICE_NAME });
  const competitorWatch = await startCompetitorWatch({
    pool,
    logger,
    bus,
    checker: createCompetitorChecker({ pool, fetchPage: createSafeFetcher(), logger }),
  });
  // Performance imports are parsed, checked and saved off the request.
  await bus.consume<ImportMessage>({
    name: 'marketing-performance-import',
    topic: IMPORT_TOPIC,
    handler: createImportHandler({ pool, logger }),
    giveUp: createImportGiveUp({ pool, logger }),
    maxAttempts: IMPORT_MAX_ATTEMPTS,
    backoff: { baseMs: 500, capMs: 30_000 },
    concurrency: 2,
  });
  const stopPruning = startPruning({ pool, logger, everyMs: HOUR_MS, olderThanMs: 7 * 24 * HOUR_MS });
  const server = buildServer({ pool, verifier, logger });
  const port = await server.listen(config.PORT, config.HOST);
  announceListening(SERVICE_NAME, port, { metrics_port: metrics.port });
  onShutdown(logger, async () => {
    await server.close();
    await competitorWatch.stop();
    await stopPruning();
    await bus.stop();
    await pool.end();
    await metrics.close();
    await tracing.shutdown();
  });
});
