import { optional, readConfig, serviceConfig } from '@adsmcp/runtime/config';

export type Config = ReturnType<typeof loadConfig>;

/** loadConfig reads the marketing service's environment once; it throws naming anything missing. */
export function loadConfig(env: Record<string, string | undefined> = process.env) {
  return readConfig(
    {
      ...serviceConfig,
      /** Kafka brokers (host:port, comma-separated); unset, the bus is the PostgreSQL queue. */
      KAFKA_BROKERS: optional(),
      /**
       * The changes service's Ed25519 public key (SPKI PEM): when set, its worker's principal tokens
       * (issuer adsmcp-changes, channel worker) are accepted, so it can read the campaign images a
       * change uploads (GetCampaignAssetContent; it asks with the read scope only).
       */
      CHANGES_PUBLIC_KEY: optional(),
      /**
       * The optimizer's Ed25519 public key (SPKI PEM): when set, its principal tokens (issuer
       * adsmcp-optimizer, channel worker) are accepted, so it can check the campaign assets an
       * optimization variant names (GetCampaignAssets; it asks with the read scope only).
       */
      OPTIMIZER_PUBLIC_KEY: optional(),
      /**
       * This service's own Ed25519 key (PKCS#8 PEM): its worker signs, as issuer adsmcp-marketing,
       * the calls that tell the changes service a performance import finished, for the workspace's
       * webhooks (RecordWebhookEvent; the changes service trusts the key through
       * MARKETING_PUBLIC_KEY). With CHANGES_URL; without both, no import.finished is delivered.
       */
      MARKETING_PRIVATE_KEY: optional(),
      CHANGES_URL: optional(),
      /**
       * The upstream-proxy: with MARKETING_PRIVATE_KEY, a performance report reads the account's
       * ad groups and insights there, as this service with the read scope (the upstream-proxy
       * trusts the key through MARKETING_PUBLIC_KEY). Without both, no report can be created.
       */
      UPSTREAM_PROXY_URL: optional(),
    },
    env,
  );
}
