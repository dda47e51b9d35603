import { int, optional, readConfig, serviceConfig } from '@adsmcp/runtime/config';

export type Config = ReturnType<typeof loadConfig>;

/** loadConfig reads the optimizer service's environment once; it throws naming anything missing. */
export function loadConfig(env: Record<string, string | undefined> = process.env) {
  return readConfig(
    {
      ...serviceConfig,
      /**
       * This service's own Ed25519 key (PKCS#8 PEM): its worker signs, as issuer adsmcp-optimizer,
       * the calls that publish approved proposals through the changes service. With CHANGES_URL;
       * without both, approved proposals are not published (they expire after publish_hours).
       */
      OPTIMIZER_PRIVATE_KEY: optional(),
      CHANGES_URL: optional(),
      /**
       * The marketing service: with OPTIMIZER_PRIVATE_KEY, the campaign assets a variant names are
       * checked there when a run is completed or a proposal edited (the marketing service trusts
       * the key through OPTIMIZER_PUBLIC_KEY). Without it they are checked only at publishing.
       */
      MARKETING_URL: optional(),
      /**
       * The upstream-proxy: with OPTIMIZER_PRIVATE_KEY, a claimed run's performance snapshot is read
       * there, as this service's worker with the read scope (the upstream-proxy trusts the key
       * through OPTIMIZER_PUBLIC_KEY). Without it, claiming a run cannot return a snapshot.
       */
      UPSTREAM_PROXY_URL: optional(),
      /** How often the scheduler looks for optimizers whose review is due. */
      SCHEDULE_EVERY_MS: int(60_000, 100, 3_600_000),
      PUBLISH_MAX_ATTEMPTS: int(20, 1, 100),
      /** Kafka brokers (host:port, comma-separated); unset, the bus is the PostgreSQL queue. */
      KAFKA_BROKERS: optional(),
    },
    env,
  );
}
