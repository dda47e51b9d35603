/**
 * The bus on the Kafka transport against the broker run from its container image (Testcontainers;
 * testkit/kafka-container.ts, see docs/testing.md): a message published through it is handled
 * once, and a message its handler keeps refusing is parked as dead and copied to `<topic>.dead`.
 * The full contract runs on the same Kafka outside a container (bus-kafka.test.ts); this proves
 * the image is that broker.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type KafkaContainer, startKafkaContainer } from '@adsmcp/testkit/kafka-container';
import { stopTestServer, type TestDatabase, testDatabase } from '@adsmcp/testkit/postgres';
import { Kafka, type KafkaMessage, logLevel } from 'kafkajs';
import {
  type BusTransport,
  createKafkaTransport,
  DEAD_HEADERS,
  deadLetterTopic,
  enqueue,
  listDead,
  migrateBus,
} from '../src/bus/index.ts';
import { createPool, type Pool } from '../src/db.ts';
import { createLogger } from '../src/log.ts';
import { waitFor } from './bus-contract.ts';

const SCHEMA = 'bus_container_test';
const logger = createLogger('bus-container-test', process.env.BUS_TEST_LOG_LEVEL ?? 'silent');

let broker: KafkaContainer | undefined;
let db: TestDatabase | undefined;
let pool: Pool | undefined;
const transports: BusTransport[] = [];

before(async () => {
  [broker, db] = await Promise.all([startKafkaContainer(), testDatabase()]);
  pool = createPool(db.url, SCHEMA);
  await migrateBus(pool, SCHEMA);
  await pool.query(
    'CREATE TABLE effects (message_id uuid NOT NULL, at timestamptz DEFAULT clock_timestamp())',
  );
});

after(async () => {
  for (const t of transports) await t.stop();
  await broker?.stop();
  await pool?.end();
  await db?.drop();
  await stopTestServer();
});

function transport(): BusTransport {
  assert.ok(broker && pool, 'the broker and the database are ready');
  const t = createKafkaTransport({
    pool,
    logger,
    brokers: [broker.brokers],
    clientId: 'bus-container-test',
    sessionTimeoutMs: 6000,
    heartbeatIntervalMs: 500,
    fetchMaxWaitMs: 200,
    relayPollMs: 200,
  });
  transports.push(t);
  return t;
}

test('a message published through the broker in the container is handled, and only once', async () => {
  assert.ok(pool);
  const p = pool;
  await transport().consume({
    name: 'container-once',
    topic: 'container-once',
    handler: async (m, ctx) => {
      await ctx.inTx((c) => c.query('INSERT INTO effects (message_id) VALUES ($1)', [m.id]));
    },
  });
  const id = await enqueue(p, { topic: 'container-once', key: 'k', payload: { n: 1 } });
  const effects = async () =>
    (await p.query('SELECT 1 FROM effects WHERE message_id = $1', [id])).rowCount ?? 0;
  await waitFor('the message handled', async () => (await effects()) > 0, 30_000);
  await sleep(500);
  assert.equal(await effects(), 1);
});

test('a message its handler keeps refusing is parked as dead and copied to <topic>.dead', async () => {
  assert.ok(pool && broker);
  const p = pool;
  const topic = 'container-poisoned';
  await transport().consume({
    name: 'container-poisoned',
    topic,
    maxAttempts: 2,
    backoff: { baseMs: 10, capMs: 20 },
    handler: async () => {
      throw new Error('upstream refused: 422 invalid budget');
    },
  });
  const id = await enqueue(p, { topic, key: 'camp-2', payload: { budget: -2 } });
  await waitFor('a dead letter', async () => (await listDead(p, { topic })).length > 0, 30_000);

  const kafka = new Kafka({
    clientId: 'container-reader',
    brokers: [broker.brokers],
    logLevel: logLevel.NOTHING,
  });
  const consumer = kafka.consumer({
    groupId: `reader-${Date.now()}`,
    sessionTimeout: 6000,
    heartbeatInterval: 500,
  });
  const seen: KafkaMessage[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic: deadLetterTopic(topic), fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => void seen.push(message) });
    await waitFor('the dead-letter copy', async () => seen.length > 0, 15_000);
  } finally {
    await consumer.disconnect();
  }
  const [copy] = seen;
  assert.deepEqual(JSON.parse(copy?.value?.toString() ?? 'null'), { budget: -2 });
  assert.equal(copy?.headers?.[DEAD_HEADERS.messageId]?.toString(), id);
  assert.equal(copy?.headers?.[DEAD_HEADERS.error]?.toString(), 'upstream refused: 422 invalid budget');
});

test('a container that ends before its broker starts is refused with the end of its output', async () => {
  // A cluster id the storage tool would read as an option: the entrypoint refuses it, naming it.
  await assert.rejects(
    startKafkaContainer({ environment: { KAFKA_CLUSTER_ID: '-starts-with-a-dash' } }),
    (err: Error) => {
      assert.match(err.message, /the Kafka container did not start/);
      assert.match(err.message, /KAFKA_CLUSTER_ID must not start with '-'.*-starts-with-a-dash/);
      return true;
    },
  );
});
