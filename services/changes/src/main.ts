/** The changes service: wiring only (config -> pool -> migrations -> bus -> worker -> server -> listen). */
import { fileURLToPath } from 'node:url';
import { AssetService } from '@adsmcp/proto/marketing/v1/assets_pb';
import { UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { migrateBus, startPruning } from '@adsmcp/runtime/bus/outbox';
import { createBusTransport } from '@adsmcp/runtime/bus/transport';
import { openServiceDatabase } from '@adsmcp/runtime/db';
import { announceListening, onShutdown, runMain } from '@adsmcp/runtime/lifecycle';
import { createLogger } from '@adsmcp/runtime/log';
import { registerBusMetrics, startMetrics } from '@adsmcp/runtime/metrics';
import { createPrincipalSigner, createPrincipalVerifier, GATEWAY_ISSUER } from '@adsmcp/runtime/principal';
import { createServiceClient } from '@adsmcp/runtime/service-client';
import { startTracing } from '@adsmcp/runtime/telemetry';
import { loadConfig } from './config.ts';
import { buildServer, ISSUER, OPTIMIZER_ISSUER, SERVICE_NAME } from './server.ts';
import { APPLY_TOPIC, type ApplyMessage } from './work/apply-message.ts';
import { startApplySweeper } from './work/apply-sweeper.ts';
import { APPLY_CONSUMER, createApplyGiveUp, createApplyHandler } from './work/apply-worker.ts';

const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;

runMain(SERVICE_NAME, async () => {
  const config = loadConfig();
  // Before any server is built: the Fastify instrumentation attaches to instances made afterwards.
  const tracing = await startTracing(SERVICE_NAME);
  const logger = createLogger(SERVICE_NAME);
  const metrics = await startMetrics(SERVICE_NAME, { host: config.HOST, logger });
  const pool = await openServiceDatabase({
    url: config.DATABASE_URL,
    schema: SERVICE_NAME,
    migrationsDir: fileURLToPath(new URL('../migrations', import.meta.url)),
    logger,
  });
  await migrateBus(pool, SERVICE_NAME);
  const verifier = await createPrincipalVerifier(
    {
      [GATEWAY_ISSUER]: config.PRINCIPAL_PUBLIC_KEY,
      ...(config.OPTIMIZER_PUBLIC_KEY === undefined
        ? {}
        : { [OPTIMIZER_ISSUER]: config.OPTIMIZER_PUBLIC_KEY }),
    },
    SERVICE_NAME,
  );
  const signer = await createPrincipalSigner(config.CHANGES_PRIVATE_KEY, ISSUER);
  const upstream = createServiceClient(UpstreamService, config.UPSTREAM_PROXY_URL, 'upstream-proxy', signer);
  const marketing =
    config.MARKETING_URL === undefined
      ? undefined
      : createServiceClient(AssetService, config.MARKETING_URL, 'marketing', signer);
  // Kafka when KAFKA_BROKERS is set, else the PostgreSQL queue on the outbox table.
  registerBusMetrics(pool);
  const bus = createBusTransport({ pool, logger, env: config, clientId: SERVICE_NAME });
  const applying = {
    pool,
    upstream,
    marketing,
    logger,
    approvalValidMs: config.APPROVAL_VALID_HOURS * HOUR_MS,
  };
  await bus.consume<ApplyMessage>({
    name: APPLY_CONSUMER,
    topic: APPLY_TOPIC,
    handler: createApplyHandler(applying),
    giveUp: createApplyGiveUp(applying),
    maxAttempts: config.APPLY_MAX_ATTEMPTS,
    leaseMs: config.APPLY_LEASE_MS,
    backoff: { baseMs: 500, capMs: 60_000 },
    concurrency: 4,
  });
  const stopSweeping = startApplySweeper(applying, config.APPLY_SWEEP_EVERY_MS, config.APPLY_SWEEP_QUIET_MS);
  // Done messages and inbox records are kept a week: far beyond any redelivery window.
  const stopPruning = startPruning({ pool, logger, everyMs: HOUR_MS, olderThanMs: 7 * DAY_MS });
  const server = buildServer({ pool, verifier, logger, upstream, marketing });
  const port = await server.listen(config.PORT, config.HOST);
  announceListening(SERVICE_NAME, port, { metrics_port: metrics.port });
  onShutdown(logger, async () => {
    await server.close();
    await stopPruning();
    await stopSweeping();
    await bus.stop();
    await pool.end();
    await metrics.close();
    await tracing.shutdown();
  });
});
