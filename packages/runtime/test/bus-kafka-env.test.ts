/**
 * How a service reaches Kafka beside its brokers (TLS, SASL) and how the topics the bus creates
 * are laid out, read from the environment: what is accepted, and the error for what is not.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { kafkaSettings } from '../src/bus/index.ts';
import { ConfigError } from '../src/config.ts';

test('with no Kafka settings the transport connects in plain TCP without SASL and lays topics out by its defaults', () => {
  assert.deepEqual(kafkaSettings({}), {});
  assert.deepEqual(kafkaSettings({ KAFKA_SSL: 'false', KAFKA_SASL_MECHANISM: '' }), {});
});

test('TLS, SASL and the topic layout are read from KAFKA_SSL, KAFKA_SASL_* and KAFKA_TOPIC_PARTITIONS / KAFKA_REPLICATION_FACTOR', () => {
  assert.deepEqual(
    kafkaSettings({
      KAFKA_SSL: 'true',
      KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512',
      KAFKA_SASL_USERNAME: 'adsmcp-changes',
      KAFKA_SASL_PASSWORD: 's3cret',
      KAFKA_TOPIC_PARTITIONS: '12',
      KAFKA_REPLICATION_FACTOR: '3',
    }),
    {
      ssl: true,
      sasl: { mechanism: 'scram-sha-512', username: 'adsmcp-changes', password: 's3cret' },
      partitions: 12,
      replicationFactor: 3,
    },
  );
  assert.deepEqual(kafkaSettings({ KAFKA_SSL: '1' }), { ssl: true });
});

test('each Kafka setting that breaks its rule is named in one error, with the rule and the value', () => {
  const refused = (env: Parameters<typeof kafkaSettings>[0], message: string) =>
    assert.throws(
      () => kafkaSettings(env),
      (err: unknown) => err instanceof ConfigError && err.message === message,
      JSON.stringify(env),
    );
  refused({ KAFKA_SSL: 'yes' }, 'KAFKA_SSL must be true or false (got "yes")');
  refused(
    { KAFKA_SASL_MECHANISM: 'gssapi', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'p' },
    'KAFKA_SASL_MECHANISM must be one of plain, scram-sha-256, scram-sha-512 (got "gssapi")',
  );
  refused(
    { KAFKA_SASL_MECHANISM: 'plain' },
    'KAFKA_SASL_USERNAME is required when KAFKA_SASL_MECHANISM is set; KAFKA_SASL_PASSWORD is required when KAFKA_SASL_MECHANISM is set',
  );
  refused(
    { KAFKA_SASL_PASSWORD: 'p' },
    'KAFKA_SASL_MECHANISM is required when KAFKA_SASL_USERNAME or KAFKA_SASL_PASSWORD is set',
  );
  refused(
    { KAFKA_TOPIC_PARTITIONS: '0', KAFKA_REPLICATION_FACTOR: '2.5' },
    'KAFKA_TOPIC_PARTITIONS must be a whole number from 1 to 10000 (got "0"); KAFKA_REPLICATION_FACTOR must be a whole number from 1 to 100 (got "2.5")',
  );
});
