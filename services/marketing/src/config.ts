import { optional, readConfig, serviceConfig } from '@adsmcp/runtime/config';

export type Config = ReturnType<typeof loadConfig>;

/** loadConfig reads the marketing service's environment once; it throws naming anything missing. */
export function loadConfig(env: Record<string, string | undefined> = process.env) {
  return readConfig(
    {
      ...serviceConfig,
      /** Kafka brokers (host:port, comma-separated); unset, the bus is the PostgreSQL queue. */
      KAFKA_BROKERS: optional(),
    },
    env,
  );
}
