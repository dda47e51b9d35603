/**
 * Which transport a service's bus runs on: Kafka when `KAFKA_BROKERS` is set, else the Postgres
 * queue on the outbox table (the one-machine default). Every process of a service must use the
 * same one: the two do not hand messages to each other.
 */
import { ConfigError } from '../config.ts';
import type { Pool } from '../db.ts';
import type { Logger } from '../log.ts';
import type { BusTransport } from './bus.ts';
import { createKafkaTransport, type KafkaTransportDeps } from './kafka-transport.ts';
import { createPgTransport } from './pg-transport.ts';

export interface BusTransportDeps {
  /** The service's pool (search_path at the schema holding the bus tables). */
  pool: Pool;
  logger: Logger;
  /** Where `KAFKA_BROKERS` is read: the service's config or the process environment. */
  env: { KAFKA_BROKERS?: string | undefined };
  /** Names this process to Kafka's brokers (the service's name). */
  clientId: string;
  /** Kafka settings beside the brokers, for tests that need a short session. */
  kafka?: Omit<KafkaTransportDeps, 'pool' | 'logger' | 'brokers' | 'clientId'>;
}

/** The transport chosen, and for Kafka the brokers it bootstraps from. */
export type BusTransportKind = { kind: 'postgres' } | { kind: 'kafka'; brokers: string[] };

/**
 * busTransportKind reads `KAFKA_BROKERS` (comma-separated `host:port`); unset or empty means
 * the Postgres transport. Throws a ConfigError naming the variable and the rule when malformed.
 */
export function busTransportKind(env: BusTransportDeps['env']): BusTransportKind {
  const raw = env.KAFKA_BROKERS?.trim();
  if (raw === undefined || raw === '') return { kind: 'postgres' };
  const brokers = raw.split(',').map((b) => b.trim());
  for (const broker of brokers) {
    const match = /^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):(\d{1,5})$/.exec(broker);
    const port = Number(match?.[2]);
    if (match === null || port < 1 || port > 65535)
      throw new ConfigError(
        `KAFKA_BROKERS must be a comma-separated list of host:port with a port from 1 to 65535 (got "${broker}")`,
      );
  }
  return { kind: 'kafka', brokers };
}

/** createBusTransport returns the service's bus transport, logging which one it is. */
export function createBusTransport({ pool, logger, env, clientId, kafka }: BusTransportDeps): BusTransport {
  const chosen = busTransportKind(env);
  if (chosen.kind === 'postgres') {
    logger.info({ bus: 'postgres' }, 'bus transport: the PostgreSQL queue on the outbox table');
    return createPgTransport({ pool, logger });
  }
  logger.info({ bus: 'kafka', brokers: chosen.brokers }, 'bus transport: Kafka');
  return createKafkaTransport({ ...kafka, pool, logger, brokers: chosen.brokers, clientId });
}
