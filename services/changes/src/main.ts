/** The changes service: its peers, the apply worker and its sweeper, and its Connect server (the wiring is startService's). */
import { fileURLToPath } from 'node:url';
import { AssetService } from '@adsmcp/proto/marketing/v1/assets_pb';
import { UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { createPrincipalSigner } from '@adsmcp/runtime/principal';
import { createServiceClient } from '@adsmcp/runtime/service-client';
import { consume, type ServiceDepsWith, startService } from '@adsmcp/runtime/service-kit';
import { CHANGES_ISSUER } from '@adsmcp/runtime/trust';
import { type Config, loadConfig } from './config.ts';
import { buildServer, SERVICE_NAME } from './server.ts';
import { APPLY_TOPIC, type ApplyMessage } from './work/apply-message.ts';
import { startApplySweeper } from './work/apply-sweeper.ts';
import { APPLY_CONSUMER, createApplyGiveUp, createApplyHandler } from './work/apply-worker.ts';

type Peers = Awaited<ReturnType<typeof peersOf>>;

/** The services it calls, signed for with its own key (CHANGES_PRIVATE_KEY). */
async function peersOf(config: Config) {
  const signer = await createPrincipalSigner(config.CHANGES_PRIVATE_KEY, CHANGES_ISSUER);
  return {
    upstream: createServiceClient(UpstreamService, config.UPSTREAM_PROXY_URL, 'upstream-proxy', signer),
    marketing:
      config.MARKETING_URL === undefined
        ? undefined
        : createServiceClient(AssetService, config.MARKETING_URL, 'marketing', signer),
  };
}

/** What the apply worker and its sweeper share. */
const applying = ({ pool, logger, peers }: ServiceDepsWith<Config, true, Peers>) => ({
  pool,
  logger,
  ...peers,
});

startService({
  name: SERVICE_NAME,
  config: loadConfig,
  database: { migrationsDir: fileURLToPath(new URL('../migrations', import.meta.url)), bus: true },
  trusts: ['gateway', 'optimizer'],
  peers: ({ config }) => peersOf(config),
  consumers: (d) => {
    const work = applying(d);
    return [
      consume<ApplyMessage>({
        name: APPLY_CONSUMER,
        topic: APPLY_TOPIC,
        handler: createApplyHandler(work),
        giveUp: createApplyGiveUp(work),
        maxAttempts: d.config.APPLY_MAX_ATTEMPTS,
        leaseMs: d.config.APPLY_LEASE_MS,
        backoff: { baseMs: 500, capMs: 60_000 },
        concurrency: 4,
      }),
    ];
  },
  jobs: (d) => [startApplySweeper(applying(d), d.config.APPLY_SWEEP_EVERY_MS, d.config.APPLY_SWEEP_QUIET_MS)],
  server: ({ pool, verifier, logger, peers }) => buildServer({ pool, verifier, logger, ...peers }),
});
