/** The marketing service: the competitor watch, the performance-import worker and its Connect server (the wiring is startService's). */
import { WebhooksService } from '@adsmcp/proto/changes/v1/webhooks_pb';
import { UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { createPrincipalSigner } from '@adsmcp/runtime/principal';
import { createSafeFetcher } from '@adsmcp/runtime/safe-fetch';
import { createServiceClient } from '@adsmcp/runtime/service-client';
import { consume, startService } from '@adsmcp/runtime/service-kit';
import { MARKETING_ISSUER } from '@adsmcp/runtime/trust';
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
import {
  createImportFinishedHandler,
  type ImportFinishedMessage,
  WEBHOOK_EVENTS_TOPIC,
} from './work/webhook-events.ts';

/** Deliveries of one performance import before it is marked failed (gave up). */
const IMPORT_MAX_ATTEMPTS = 5;

startService({
  name: SERVICE_NAME,
  config: loadConfig,
  // Bus topics: competitor checks (scheduled) and performance imports.
  database: { migrationsDir: MIGRATIONS_DIR, bus: true },
  // The changes worker reads the campaign images a change uploads; the optimizer checks the assets its variants name.
  trusts: ['gateway', 'changes', 'optimizer'],
  // Its own key signs the import events sent to the changes service (which keeps and delivers the
  // workspace's webhooks) and the platform reads of performance reports.
  peers: async ({ config, logger }) => {
    const signer =
      config.MARKETING_PRIVATE_KEY === undefined
        ? undefined
        : await createPrincipalSigner(config.MARKETING_PRIVATE_KEY, MARKETING_ISSUER);
    if (signer === undefined || config.CHANGES_URL === undefined)
      logger.warn('MARKETING_PRIVATE_KEY or CHANGES_URL is not set: import.finished is not sent to webhooks');
    if (signer === undefined || config.UPSTREAM_PROXY_URL === undefined)
      logger.warn(
        'MARKETING_PRIVATE_KEY or UPSTREAM_PROXY_URL is not set: performance reports cannot be created',
      );
    return {
      webhooks:
        signer !== undefined && config.CHANGES_URL !== undefined
          ? createServiceClient(WebhooksService, config.CHANGES_URL, 'changes', signer)
          : undefined,
      upstream:
        signer !== undefined && config.UPSTREAM_PROXY_URL !== undefined
          ? createServiceClient(UpstreamService, config.UPSTREAM_PROXY_URL, 'upstream-proxy', signer)
          : undefined,
    };
  },
  consumers: ({ pool, logger, peers: { webhooks } }) => [
    // Performance imports are parsed, checked and saved off the request.
    consume<ImportMessage>({
      name: 'marketing-performance-import',
      topic: IMPORT_TOPIC,
      handler: createImportHandler({ pool, logger, announce: webhooks !== undefined }),
      giveUp: createImportGiveUp({ pool, logger, announce: webhooks !== undefined }),
      maxAttempts: IMPORT_MAX_ATTEMPTS,
      backoff: { baseMs: 500, capMs: 30_000 },
      concurrency: 2,
    }),
    ...(webhooks === undefined
      ? []
      : [
          consume<ImportFinishedMessage>({
            name: 'marketing-webhook-events',
            topic: WEBHOOK_EVENTS_TOPIC,
            handler: createImportFinishedHandler({ webhooks }),
            maxAttempts: 100,
            backoff: { baseMs: 1_000, capMs: 300_000 },
          }),
        ]),
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
  server: ({ pool, verifier, logger, peers: { upstream } }) =>
    buildServer({ pool, verifier, logger, ...(upstream === undefined ? {} : { upstream }) }),
});
