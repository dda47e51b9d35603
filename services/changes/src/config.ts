import { ConfigError, int, optional, readConfig, serviceConfig, str } from '@adsmcp/runtime/config';

export type Config = ReturnType<typeof loadConfig>;

/** A comma-separated list of host:port (WEBHOOK_ALLOW_HOSTS); empty when unset. */
const hostPorts = {
  read(env: Record<string, string | undefined>, name: string): string[] {
    const raw = env[name] ?? '';
    if (raw.trim() === '') return [];
    return raw.split(',').map((part) => {
      const item = part.trim();
      const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(item);
      if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535) {
        throw new ConfigError(`${name} must be a comma-separated list of host:port (got "${item}")`);
      }
      return item.toLowerCase();
    });
  },
};

/** loadConfig reads the changes service's environment once; it throws naming anything missing. */
export function loadConfig(env: Record<string, string | undefined> = process.env) {
  return readConfig(
    {
      ...serviceConfig,
      /** This service's own Ed25519 key (PKCS#8 PEM): its worker signs the calls that apply changes. */
      CHANGES_PRIVATE_KEY: str(),
      UPSTREAM_PROXY_URL: str(),
      /**
       * The marketing service (one address or its replicas, comma-separated): the campaign images a
       * change's creatives name are read there, with this service's key (the marketing service
       * trusts it through CHANGES_PUBLIC_KEY). Unset, a change that names one is refused.
       */
      MARKETING_URL: optional(),
      /**
       * The optimizer's Ed25519 public key (SPKI PEM): when set, its worker's principal tokens
       * (issuer adsmcp-optimizer, channel worker) are accepted, to record the changes that publish
       * proposals a person approved in the dashboard (RecordApprovedChange).
       */
      OPTIMIZER_PUBLIC_KEY: optional(),
      /**
       * The marketing service's Ed25519 public key (SPKI PEM): when set, its worker's principal
       * tokens (issuer adsmcp-marketing, channel worker) are accepted for one call only, to tell the
       * workspace's webhooks a performance import finished (RecordWebhookEvent).
       */
      MARKETING_PUBLIC_KEY: optional(),
      /** How long a worker that stopped renewing its claim (it died) keeps its message before another worker takes it over. */
      APPLY_LEASE_MS: int(60_000, 1_000, 600_000),
      /**
       * Deliveries of one apply message before it is given up (the change is then brought to an
       * end: tried again with a new message while its approval is valid, or failed with its outcome
       * unknown if it was sent). Outages are bounded by the workspace's approval expiry, not by this: the
       * default covers a day of retries at the longest backoff (60 s).
       */
      APPLY_MAX_ATTEMPTS: int(5000, 1, 100_000),
      /** How often the sweep for changes left applying without an apply message runs. */
      APPLY_SWEEP_EVERY_MS: int(60_000, 100, 3_600_000),
      /** How long a change may be applying with no sign of its apply message before the sweep ends it. */
      APPLY_SWEEP_QUIET_MS: int(600_000, 100, 86_400_000),
      /**
       * Webhook receivers an operator allows for local development, as host:port (comma-separated):
       * these may be plain http on a loopback or private address. Every other webhook URL must be
       * https to a public address (docs/webhooks.md).
       */
      WEBHOOK_ALLOW_HOSTS: hostPorts,
      /** The key webhook secrets are sealed with (base64, 32 bytes); unset, one derived from CHANGES_PRIVATE_KEY. */
      WEBHOOK_SECRET_KEY: optional(),
      /** Attempts of one webhook delivery before it is given up (retried with backoff from WEBHOOK_RETRY_BASE_MS, doubling up to 10 minutes). */
      WEBHOOK_MAX_ATTEMPTS: int(10, 1, 100),
      WEBHOOK_RETRY_BASE_MS: int(5_000, 10, 600_000),
      /** How often recorded events are fanned out into deliveries, and expiries looked for. */
      WEBHOOK_FAN_OUT_EVERY_MS: int(1_000, 50, 600_000),
      /** Comma-separated Kafka brokers (host:port): apply work goes through Kafka; unset, through PostgreSQL. */
      KAFKA_BROKERS: optional(),
    },
    env,
  );
}
