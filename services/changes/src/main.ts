/** The changes service: its peers, the apply worker and its sweeper, and its Connect server (the wiring is startService's). */
import { fileURLToPath } from 'node:url';
import { AssetService } from '@adsmcp/proto/marketing/v1/assets_pb';
import { MarketingService } from '@adsmcp/proto/marketing/v1/marketing_pb';
import { UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { createPrincipalSigner } from '@adsmcp/runtime/principal';
import { createSafeFetcher } from '@adsmcp/runtime/safe-fetch';
import { createServiceClient } from '@adsmcp/runtime/service-client';
import { consume, type ServiceDepsWith, startService } from '@adsmcp/runtime/service-kit';
import { CHANGES_ISSUER } from '@adsmcp/runtime/trust';
import { type Config, loadConfig } from './config.ts';
import { buildServer, SERVICE_NAME } from './server.ts';
import { createDeliveryGiveUp, createDeliveryHandler, WEBHOOK_CONSUMER } from './webhooks/delivery.ts';
import { type DeliveryMessage, startWebhookFanOut, WEBHOOK_TOPIC } from './webhooks/fan-out.ts';
import { createSecretCipher, webhookKey } from './webhooks/secret-cipher.ts';
import { APPLY_TOPIC, type ApplyMessage } from './work/apply-message.ts';
import { startApplySweeper } from './work/apply-sweeper.ts';
import {
  APPLY_CLAIM_GATHER_MS,
  APPLY_CONCURRENCY,
  APPLY_CONSUMER,
  createApplyGiveUp,
  createApplyHandler,
} from './work/apply-worker.ts';
import { startAuditBackfill } from './work/audit-backfill.ts';
import { startAuditChainer } from './work/audit-chainer.ts';

type Peers = Awaited<ReturnType<typeof peersOf>>;

/** The services it calls, signed for with its own key (CHANGES_PRIVATE_KEY). */
async function peersOf(config: Config) {
  const signer = await createPrincipalSigner(config.CHANGES_PRIVATE_KEY, CHANGES_ISSUER);
  return {
    upstream: createServiceClient(UpstreamService, config.UPSTREAM_PROXY_URL, 'upstream-proxy', signer),
    webhookCipher: createSecretCipher(webhookKey(config.WEBHOOK_SECRET_KEY, config.CHANGES_PRIVATE_KEY)),
    marketing:
      config.MARKETING_URL === undefined
        ? undefined
        : createServiceClient(AssetService, config.MARKETING_URL, 'marketing', signer),
    items:
      config.MARKETING_URL === undefined
        ? undefined
        : createServiceClient(MarketingService, config.MARKETING_URL, 'marketing', signer),
  };
}

/** What the apply worker and its sweeper share. */
const applying = ({ pool, logger, peers }: ServiceDepsWith<Config, true, Peers>) => ({
  pool,
  logger,
  ...peers,
});

/** What the webhook delivery worker uses: the fetcher allows only the hosts an operator listed beyond its rules. */
const webhookSending = ({ pool, logger, peers, config }: ServiceDepsWith<Config, true, Peers>) => ({
  pool,
  logger,
  cipher: peers.webhookCipher,
  fetch: createSafeFetcher({ allowHosts: config.WEBHOOK_ALLOW_HOSTS, totalTimeoutMs: 10_000 }),
});

startService({
  name: SERVICE_NAME,
  config: loadConfig,
  database: {
    migrationsDir: fileURLToPath(new URL('../migrations', import.meta.url)),
    bus: true,
    // The expired changes' deep pages (change-store.ts, listChanges): one reader at a time is
    // the common case, two lets a second wait less.
    genericPlans: 2,
  },
  trusts: ['gateway', 'optimizer', 'marketing'],
  peers: ({ config }) => peersOf(config),
  consumers: (d) => {
    const work = applying(d);
    return [
      consume<ApplyMessage>({
        name: APPLY_CONSUMER,
        topic: APPLY_TOPIC,
        handler: createApplyHandler(work),
        giveUp: createApplyGiveUp(work),
        serialByKey: true,
        maxAttempts: d.config.APPLY_MAX_ATTEMPTS,
        leaseMs: d.config.APPLY_LEASE_MS,
        backoff: { baseMs: 500, capMs: 60_000 },
        concurrency: APPLY_CONCURRENCY,
        claimGatherMs: APPLY_CLAIM_GATHER_MS,
      }),
      consume<DeliveryMessage>({
        name: WEBHOOK_CONSUMER,
        topic: WEBHOOK_TOPIC,
        handler: createDeliveryHandler(webhookSending(d)),
        giveUp: createDeliveryGiveUp(webhookSending(d)),
        maxAttempts: d.config.WEBHOOK_MAX_ATTEMPTS,
        backoff: { baseMs: d.config.WEBHOOK_RETRY_BASE_MS, capMs: 600_000 },
        // One webhook's deliveries one at a time: a receiver that does not answer takes one of
        // the four sending slots at most, and other webhooks' deliveries go on.
        serialByKey: true,
        concurrency: 4,
      }),
    ];
  },
  jobs: (d) => [
    startApplySweeper(applying(d), d.config.APPLY_SWEEP_EVERY_MS, d.config.APPLY_SWEEP_QUIET_MS),
    startWebhookFanOut(d, d.config.WEBHOOK_FAN_OUT_EVERY_MS),
    startAuditBackfill(d.pool, d.logger),
    startAuditChainer(d.pool, d.logger),
  ],
  server: ({ pool, genericPlans, verifier, logger, peers, config }) =>
    buildServer({
      pool,
      genericPlans,
      verifier,
      logger,
      ...peers,
      webhooks: { cipher: peers.webhookCipher, allowHosts: config.WEBHOOK_ALLOW_HOSTS },
    }),
});
