import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import { busTransportKind, createBusTransport } from '../src/bus/index.ts';
import { ConfigError } from '../src/config.ts';
import { createPool } from '../src/db.ts';

test('without KAFKA_BROKERS the bus runs on PostgreSQL; with it, on Kafka at the brokers listed', () => {
  assert.deepEqual(busTransportKind({}), { kind: 'postgres' });
  assert.deepEqual(busTransportKind({ KAFKA_BROKERS: '' }), { kind: 'postgres' });
  assert.deepEqual(busTransportKind({ KAFKA_BROKERS: ' kafka-0.kafka:9092 , 127.0.0.1:19092,[::1]:9093 ' }), {
    kind: 'kafka',
    brokers: ['kafka-0.kafka:9092', '127.0.0.1:19092', '[::1]:9093'],
  });
});

test('a malformed KAFKA_BROKERS is refused with an error naming the variable, the rule and the bad entry', () => {
  for (const [value, bad] of [
    ['kafka', 'kafka'],
    ['kafka:0', 'kafka:0'],
    ['kafka:70000', 'kafka:70000'],
    ['a:9092,', ''],
    ['http://kafka:9092', 'http://kafka:9092'],
  ] as const) {
    assert.throws(
      () => busTransportKind({ KAFKA_BROKERS: value }),
      (err: unknown) =>
        err instanceof ConfigError &&
        err.message ===
          `KAFKA_BROKERS must be a comma-separated list of host:port with a port from 1 to 65535 (got "${bad}")`,
      value,
    );
  }
});

test('createBusTransport says in the log which transport it chose', async () => {
  const lines: { msg: string; bus: string }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  // Never connected: the Postgres transport opens connections on its first consume.
  const pool = createPool('postgres://127.0.0.1:1/none', 'bus_choice');
  const transport = createBusTransport({ pool, logger, env: {}, clientId: 'test' });
  await transport.stop();
  await pool.end();
  assert.deepEqual(
    lines.map((l) => [l.bus, l.msg]),
    [['postgres', 'bus transport: the PostgreSQL queue on the outbox table']],
  );
});
