/** The optimizer service: wiring only (config -> pool -> migrations -> bus -> workers -> server -> listen). */

import { ChangesService } from '@adsmcp/proto/changes/v1/changes_pb';
import { AssetService } from '@adsmcp/proto/marketing/v1/assets_pb';
import { migrateBus, startPruning } from '@adsmcp/runtime/bus/outbox';
import { createBusTransport } from '@adsmcp/runtime/bus/transport';
import { openServiceDatabase } from '@adsmcp/runtime/db';
import { announceListening, onShutdown, runMain } from '@adsmcp/runtime/lifecycle';
import { createLogger } from '@adsmcp/runtime/log';
import { registerBusMetrics, startMetrics } from '@adsmcp/runtime/metrics';
import { createPrincipalSigner, createPrincipalVerifier } from '@adsmcp/runtime/principal';
import { createServiceClient } from '@adsmcp/runtime/service-client';
import { startTracing } from '@adsmcp/runtime/telemetry';
import { loadConfig } from './config.ts';
import { PUBLISH_TOPIC, type PublishMessage } from './handlers/review-handlers.ts';
import { buildServer, ISSUER, MIGRATIONS_DIR, SCHEMA, SERVICE_NAME } from './server.ts';
import { createPublishGiveUp, createPublishHandler } from './work/publish.ts';
import {
  createScheduleHandler,
  SCHEDULE_TOPIC,
  type ScheduleMessage,
  startScheduler,
} from './work/schedule.ts';

const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;

runMain(SERVICE_NAME, async () => {
  const config = loadConfig();
  // Before any server is built: the Fastify instrumentation attaches to instances made afterwards.
  const tracing = await startTracing(SERVICE_NAME);
  const logger = createLogger(SERVICE_NAME);
  const metrics = await startMetrics(SERVICE_NAME, { host: config.HOST, logger });
  const clock = () => new Date();
  const pool = await openServiceDatabase({
    url: config.DATABASE_URL,
    schema: SCHEMA,
    migrationsDir: MIGRATIONS_DIR,
    logger,
  });
  await migrateBus(pool, SCHEMA);
  const verifier = await createPrincipalVerifier(config.PRINCIPAL_PUBLIC_KEY, SERVICE_NAME);
  // Kafka when KAFKA_BROKERS is set, else the PostgreSQL queue on the outbox table.
  registerBusMetrics(pool);
  const bus = createBusTransport({ pool, logger, env: config, clientId: SERVICE_NAME });
  await bus.consume<ScheduleMessage>({
    name: 'optimizer-schedule',
    topic: SCHEDULE_TOPIC,
    handler: createScheduleHandler({ clock, logger }),
    backoff: { baseMs: 1_000, capMs: 60_000 },
  });
  // The service's own key: its worker publishes with it, and it checks variants' assets with it.
  const signer =
    config.OPTIMIZER_PRIVATE_KEY === undefined
      ? undefined
      : await createPrincipalSigner(config.OPTIMIZER_PRIVATE_KEY, ISSUER);
  if (signer !== undefined && config.CHANGES_URL !== undefined) {
    const changes = createServiceClient(ChangesService, config.CHANGES_URL, 'changes', signer);
    await bus.consume<PublishMessage>({
      name: 'optimizer-publish',
      topic: PUBLISH_TOPIC,
      handler: createPublishHandler({ pool, changes, logger, clock }),
      giveUp: createPublishGiveUp({ pool, logger }),
      maxAttempts: config.PUBLISH_MAX_ATTEMPTS,
      backoff: { baseMs: 1_000, capMs: 60_000 },
      concurrency: 2,
    });
  } else {
    logger.warn('OPTIMIZER_PRIVATE_KEY or CHANGES_URL is not set: approved proposals are not published');
  }
  const stopScheduler = startScheduler({ pool, logger, everyMs: config.SCHEDULE_EVERY_MS, clock });
  const stopPruning = startPruning({ pool, logger, everyMs: HOUR_MS, olderThanMs: 7 * DAY_MS });
  // The assets variants name are checked as they are submitted, when the marketing service is known.
  const assets =
    signer !== undefined && config.MARKETING_URL !== undefined
      ? createServiceClient(AssetService, config.MARKETING_URL, 'marketing', signer)
      : undefined;
  const server = buildServer({ pool, verifier, logger, clock, ...(assets === undefined ? {} : { assets }) });
  const port = await server.listen(config.PORT, config.HOST);
  announceListening(SERVICE_NAME, port, { metrics_port: metrics.port });
  onShutdown(logger, async () => {
    await server.close();
    await stopScheduler();
    await stopPruning();
    await bus.stop();
    await pool.end();
    await metrics.close();
    await tracing.shutdown();
  });
});
