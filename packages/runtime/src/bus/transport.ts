/**
 * Which transport a service's bus runs on: Kafka when `KAFKA_BROKERS` is set, else the Postgres
 * queue on the outbox table (the one-machine default). Every process of a service must use the
 * same one: the two do not hand messages to each other.
 *
 * How a process reaches Kafka beside its brokers (TLS, SASL) and how the topics it creates are
 * laid out are read from the environment too: see `kafkaSettings`.
 */
import type { SASLOptions } from 'kafkajs';
import { ConfigError } from '../config.ts';
import type { Pool } from '../db.ts';
import type { Logger } from '../log.ts';
import type { BusTransport } from './bus.ts';
import { createKafkaTransport, type KafkaTransportDeps } from './kafka-transport.ts';
import { createPgTransport } from './pg-transport.ts';

/** The variables the Kafka transport reads beside `KAFKA_BROKERS`. */
export const KAFKA_SETTINGS_VARIABLES = [
  'KAFKA_SSL',
  'KAFKA_SASL_MECHANISM',
  'KAFKA_SASL_USERNAME',
  'KAFKA_SASL_PASSWORD',
  'KAFKA_TOPIC_PARTITIONS',
  'KAFKA_REPLICATION_FACTOR',
] as const;

export type KafkaSettingsEnv = Partial<Record<(typeof KAFKA_SETTINGS_VARIABLES)[number], string | undefined>>;

/** What the Kafka transport takes from the environment beside the brokers. */
export type KafkaSettings = Pick<KafkaTransportDeps, 'ssl' | 'sasl' | 'partitions' | 'replicationFactor'>;

const SASL_MECHANISMS = ['plain', 'scram-sha-256', 'scram-sha-512'] as const;

function wholeNumber(name: string, raw: string | undefined, max: number, problems: string[]) {
  if (raw === undefined || raw.trim() === '') return undefined;
  const n = Number(raw.trim());
  if (Number.isInteger(n) && n >= 1 && n <= max) return n;
  problems.push(`${name} must be a whole number from 1 to ${max} (got "${raw}")`);
  return undefined;
}

/**
 * kafkaSettings reads, for a service whose bus is on Kafka:
 *
 * - `KAFKA_SSL`: `true` (or `1`) for TLS to the brokers, verified against the system's
 *   certificate authorities; `false`, `0` or unset for plain TCP;
 * - `KAFKA_SASL_MECHANISM` (`plain`, `scram-sha-256` or `scram-sha-512`) with
 *   `KAFKA_SASL_USERNAME` and `KAFKA_SASL_PASSWORD`: all three or none;
 * - `KAFKA_TOPIC_PARTITIONS` (1 to 10000) and `KAFKA_REPLICATION_FACTOR` (1 to 100): how the topics
 *   the transport creates are laid out (defaults in kafka-transport.ts).
 *
 * Throws one ConfigError naming every variable that breaks its rule.
 */
export function kafkaSettings(env: KafkaSettingsEnv): KafkaSettings {
  const problems: string[] = [];
  const out: KafkaSettings = {};
  const ssl = env.KAFKA_SSL?.trim().toLowerCase();
  if (ssl === 'true' || ssl === '1') out.ssl = true;
  else if (ssl !== undefined && ssl !== '' && ssl !== 'false' && ssl !== '0')
    problems.push(`KAFKA_SSL must be true or false (got "${env.KAFKA_SSL}")`);

  const mechanism = env.KAFKA_SASL_MECHANISM?.trim().toLowerCase() || undefined;
  const username = env.KAFKA_SASL_USERNAME || undefined;
  const password = env.KAFKA_SASL_PASSWORD || undefined;
  if (mechanism === undefined) {
    if (username !== undefined || password !== undefined)
      problems.push(
        'KAFKA_SASL_MECHANISM is required when KAFKA_SASL_USERNAME or KAFKA_SASL_PASSWORD is set',
      );
  } else if (!(SASL_MECHANISMS as readonly string[]).includes(mechanism)) {
    problems.push(
      `KAFKA_SASL_MECHANISM must be one of ${SASL_MECHANISMS.join(', ')} (got "${env.KAFKA_SASL_MECHANISM}")`,
    );
  } else {
    if (username === undefined)
      problems.push('KAFKA_SASL_USERNAME is required when KAFKA_SASL_MECHANISM is set');
    if (password === undefined)
      problems.push('KAFKA_SASL_PASSWORD is required when KAFKA_SASL_MECHANISM is set');
    if (username !== undefined && password !== undefined)
      out.sasl = {
        mechanism: mechanism as (typeof SASL_MECHANISMS)[number],
        username,
        password,
      } as SASLOptions;
  }

  const partitions = wholeNumber('KAFKA_TOPIC_PARTITIONS', env.KAFKA_TOPIC_PARTITIONS, 10_000, problems);
  if (partitions !== undefined) out.partitions = partitions;
  const replication = wholeNumber('KAFKA_REPLICATION_FACTOR', env.KAFKA_REPLICATION_FACTOR, 100, problems);
  if (replication !== undefined) out.replicationFactor = replication;
  if (problems.length > 0) throw new ConfigError(problems.join('; '));
  return out;
}

export interface BusTransportDeps {
  /** The service's pool (search_path at the schema holding the bus tables). */
  pool: Pool;
  logger: Logger;
  /**
   * Where `KAFKA_BROKERS` is read: the service's config or the process environment. The other
   * Kafka variables (KAFKA_SETTINGS_VARIABLES) are read here when it has them, else from the
   * process environment (a service's config lists only `KAFKA_BROKERS`).
   */
  env: { KAFKA_BROKERS?: string | undefined } & KafkaSettingsEnv;
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
  const settingsEnv: KafkaSettingsEnv = {};
  for (const name of KAFKA_SETTINGS_VARIABLES) settingsEnv[name] = env[name] ?? process.env[name];
  const settings = kafkaSettings(settingsEnv);
  logger.info(
    {
      bus: 'kafka',
      brokers: chosen.brokers,
      ssl: settings.ssl === true,
      sasl: settings.sasl?.mechanism ?? 'none',
    },
    'bus transport: Kafka',
  );
  if (settings.sasl?.mechanism === 'plain' && settings.ssl !== true)
    logger.warn('KAFKA_SASL_MECHANISM=plain without KAFKA_SSL sends the Kafka password unencrypted');
  return createKafkaTransport({ ...settings, ...kafka, pool, logger, brokers: chosen.brokers, clientId });
}
