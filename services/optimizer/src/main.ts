/** The optimizer service: its peers, the scheduler and the publish worker, and its Connect server (the wiring is startService's). */
import { ChangesService } from '@adsmcp/proto/changes/v1/changes_pb';
import { WebhooksService } from '@adsmcp/proto/changes/v1/webhooks_pb';
import { AssetService } from '@adsmcp/proto/marketing/v1/assets_pb';
import { UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { createPrincipalSigner } from '@adsmcp/runtime/principal';
import { createServiceClient } from '@adsmcp/runtime/service-client';
import { consume, startService } from '@adsmcp/runtime/service-kit';
import { OPTIMIZER_ISSUER } from '@adsmcp/runtime/trust';
import { loadConfig } from './config.ts';
import { buildServer, MIGRATIONS_DIR, SCHEMA, SERVICE_NAME } from './server.ts';
import {
  createPublishGiveUp,
  createPublishHandler,
  PUBLISH_TOPIC,
  type PublishMessage,
} from './work/publish.ts';
import {
  createScheduleHandler,
  SCHEDULE_TOPIC,
  type ScheduleMessage,
  startScheduler,
} from './work/schedule.ts';
import {
  createWebhookEventHandler,
  WEBHOOK_EVENTS_TOPIC,
  type WebhookEventMessage,
} from './work/webhook-events.ts';

const clock = () => new Date();

startService({
  name: SERVICE_NAME,
  config: loadConfig,
  database: { schema: SCHEMA, migrationsDir: MIGRATIONS_DIR, bus: true },
  trusts: ['gateway'],
  // The service's own key: its worker publishes with it, and it checks variants' assets with it.
  peers: async ({ config, logger }) => {
    const signer =
      config.OPTIMIZER_PRIVATE_KEY === undefined
        ? undefined
        : await createPrincipalSigner(config.OPTIMIZER_PRIVATE_KEY, OPTIMIZER_ISSUER);
    if (signer === undefined || config.CHANGES_URL === undefined)
      logger.warn('OPTIMIZER_PRIVATE_KEY or CHANGES_URL is not set: approved proposals are not published');
    return {
      changes:
        signer !== undefined && config.CHANGES_URL !== undefined
          ? createServiceClient(ChangesService, config.CHANGES_URL, 'changes', signer)
          : undefined,
      // Proposal events go to the changes service, which keeps and delivers the workspace's webhooks.
      webhooks:
        signer !== undefined && config.CHANGES_URL !== undefined
          ? createServiceClient(WebhooksService, config.CHANGES_URL, 'changes', signer)
          : undefined,
      // The assets variants name are checked as they are submitted, when the marketing service is known.
      assets:
        signer !== undefined && config.MARKETING_URL !== undefined
          ? createServiceClient(AssetService, config.MARKETING_URL, 'marketing', signer)
          : undefined,
      // Review runs' snapshots are read from the ad platform there, as this service's worker.
      upstream:
        signer !== undefined && config.UPSTREAM_PROXY_URL !== undefined
          ? createServiceClient(UpstreamService, config.UPSTREAM_PROXY_URL, 'upstream-proxy', signer)
          : undefined,
    };
  },
  consumers: ({ pool, logger, config, peers: { changes, webhooks } }) => [
    consume<ScheduleMessage>({
      name: 'optimizer-schedule',
      topic: SCHEDULE_TOPIC,
      handler: createScheduleHandler({ clock, logger }),
      backoff: { baseMs: 1_000, capMs: 60_000 },
    }),
    // Approved proposals are published only with a key and the changes service to publish to.
    ...(changes === undefined
      ? []
      : [
          consume<PublishMessage>({
            name: 'optimizer-publish',
            topic: PUBLISH_TOPIC,
            handler: createPublishHandler({ pool, changes, logger, clock }),
            giveUp: createPublishGiveUp({ pool, logger }),
            maxAttempts: config.PUBLISH_MAX_ATTEMPTS,
            backoff: { baseMs: 1_000, capMs: 60_000 },
            concurrency: 2,
          }),
        ]),
    ...(webhooks === undefined
      ? []
      : [
          consume<WebhookEventMessage>({
            name: 'optimizer-webhook-events',
            topic: WEBHOOK_EVENTS_TOPIC,
            handler: createWebhookEventHandler({ webhooks }),
            maxAttempts: 100,
            backoff: { baseMs: 1_000, capMs: 300_000 },
          }),
        ]),
  ],
  jobs: ({ pool, logger, config, bus }) => [
    startScheduler({ pool, logger, bus, everyMs: config.SCHEDULE_EVERY_MS, clock }),
  ],
  server: ({ pool, verifier, logger, peers: { assets, upstream } }) =>
    buildServer({
      pool,
      verifier,
      logger,
      clock,
      ...(assets === undefined ? {} : { assets }),
      ...(upstream === undefined ? {} : { upstream }),
    }),
});
