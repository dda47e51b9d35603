/**
 * The bus on the Kafka transport: the contract every transport meets (bus-contract.ts), then
 * what only this transport does: the topics it creates, the relay's messages on their topics,
 * and dead-letter copies.
 *
 * The brokers are a real Apache Kafka (one KRaft node, testkit/kafka-broker.ts) that creates no
 * topic on first use: every topic here was created by the transport or by the test.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type KafkaBrokerCluster, startKafkaBroker } from '@adsmcp/testkit/kafka-broker';
import kafkajs, { Kafka, type KafkaMessage, logLevel, Partitioners } from 'kafkajs';
import {
  createKafkaTransport,
  DEAD_HEADERS,
  deadLetterTopic,
  ENQUEUED_AT_HEADER,
  enqueue,
  listDead,
  MESSAGE_ID_HEADER,
} from '../src/bus/index.ts';
import { startRecurring } from '../src/bus/recurring.ts';
import { inTransaction } from '../src/db.ts';
import { createLogger, withRequestId } from '../src/log.ts';
import { busContract, waitFor } from './bus-contract.ts';

// Not among the names Node finds in kafkajs's CommonJS exports.
const { ConfigResourceTypes } = kafkajs;
const logger = createLogger('bus-test', process.env.BUS_TEST_LOG_LEVEL ?? 'silent');
let cluster: KafkaBrokerCluster | undefined;
const brokers = () => {
  assert.ok(cluster, 'the broker is running');
  return cluster.brokers.split(',');
};

const suite = busContract({
  name: 'Kafka (Apache Kafka 4, one KRaft node)',
  async setup() {
    cluster = await startKafkaBroker();
  },
  async teardown() {
    await cluster?.stop();
  },
  // The shortest session the broker allows by default (group.min.session.timeout.ms): a stopped
  // member's partitions move within it.
  transport: (pool) =>
    createKafkaTransport({
      pool,
      logger,
      brokers: brokers(),
      clientId: 'bus-test',
      sessionTimeoutMs: 6000,
      heartbeatIntervalMs: 500,
      fetchMaxWaitMs: 200,
      relayPollMs: 200,
    }),
  quietMs: 500,
  // Mostly waiting for group joins and rebalances: run a few at once.
  concurrency: 4,
});

/** readTopic reads `topic` from its start with a group of its own until `count` messages came. */
async function readTopic(topic: string, count: number): Promise<KafkaMessage[]> {
  const kafka = new Kafka({ clientId: 'bus-test-reader', brokers: brokers(), logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({
    groupId: `reader-${topic}-${Date.now()}`,
    sessionTimeout: 6000,
    heartbeatInterval: 500,
    maxWaitTimeInMs: 200,
  });
  const seen: KafkaMessage[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => void seen.push(message) });
    await waitFor(`${count} messages on ${topic}`, async () => seen.length >= count, 15_000);
  } finally {
    await consumer.disconnect();
  }
  return seen;
}

const text = (v: Buffer | string | (Buffer | string)[] | undefined) =>
  Array.isArray(v) ? v.map(String).join(',') : v?.toString();

describe('the Kafka transport', { concurrency: 3 }, () => {
  test('a message on the topic that the bus did not publish is skipped, and the messages behind it are handled', async (t) => {
    const topic = 'foreign';
    const kafka = new Kafka({ clientId: 'bus-test-foreign', brokers: brokers(), logLevel: logLevel.NOTHING });
    // An operator's topic, made beforehand with one partition: the transport uses it as it is.
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
    await admin.disconnect();
    const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    await producer.connect();
    // Same key as the bus message below: same partition, ahead of it.
    await producer.send({
      topic,
      messages: [
        { key: 'k', value: 'not json' },
        { key: 'k', value: '{}' },
      ],
    });
    await producer.disconnect();
    const id = await enqueue(suite.pool, { topic, key: 'k', payload: { n: 1 } });

    const seen: string[] = [];
    const transport = suite.transportFor(t, suite.pool);
    await transport.consume({ name: 'foreign', topic, handler: async (m) => void seen.push(m.id) });
    await waitFor('the bus message', async () => seen.length > 0);
    await transport.stop();
    assert.deepEqual(seen, [id]);
  });

  test('a consumer creates its topic and <topic>.dead with the partitions and replication it was given, min.insync.replicas set, before anything was published', async (t) => {
    const kafka = new Kafka({ clientId: 'bus-test-admin', brokers: brokers(), logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    t.after(() => admin.disconnect());
    const transport = createKafkaTransport({
      pool: suite.pool,
      logger,
      brokers: brokers(),
      clientId: 'bus-test-topics',
      partitions: 3,
      sessionTimeoutMs: 6000,
      heartbeatIntervalMs: 500,
    });
    t.after(() => transport.stop());
    assert.ok(!(await admin.listTopics()).includes('laid-out'), 'the broker does not have the topic yet');
    await transport.consume({ name: 'laid-out', topic: 'laid-out', handler: async () => undefined });

    const { topics } = await admin.fetchTopicMetadata({ topics: ['laid-out', 'laid-out.dead'] });
    assert.deepEqual(
      topics
        .map((topic) => ({
          name: topic.name,
          partitions: topic.partitions.length,
          replicas: [...new Set(topic.partitions.map((p) => p.replicas.length))],
        }))
        .sort((a, b) => a.name.localeCompare(b.name)),
      [
        // One broker: the default replication (3) is capped at the brokers the cluster has.
        { name: 'laid-out', partitions: 3, replicas: [1] },
        { name: 'laid-out.dead', partitions: 3, replicas: [1] },
      ],
    );
    const configs = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [
        { type: ConfigResourceTypes.TOPIC, name: 'laid-out', configNames: ['min.insync.replicas'] },
      ],
    });
    assert.equal(configs.resources[0]?.configEntries[0]?.configValue, '1');
  });

  test('the relay publishes an outbox row to its topic, keyed by its key, with its id, enqueue time and headers, and marks it done', async (t) => {
    const topic = 'relayed';
    suite.transportFor(t, suite.pool); // its relay publishes; nothing consumes
    const id = await withRequestId('req-7', () =>
      inTransaction(suite.pool, (c) =>
        enqueue(c, {
          topic,
          key: 'change-9',
          payload: { change_id: 'change-9' },
          headers: { origin: 'test' },
        }),
      ),
    );
    const status = async () =>
      (await suite.pool.query<{ status: string }>('SELECT status FROM bus_outbox WHERE id = $1', [id]))
        .rows[0]?.status;
    await waitFor('the row to be published', async () => (await status()) === 'done');

    const [message, ...more] = await readTopic(topic, 1);
    assert.equal(more.length, 0);
    assert.equal(message?.key?.toString(), 'change-9');
    assert.deepEqual(JSON.parse(message?.value?.toString() ?? 'null'), { change_id: 'change-9' });
    const headers = Object.fromEntries(Object.entries(message?.headers ?? {}).map(([k, v]) => [k, text(v)]));
    assert.equal(headers[MESSAGE_ID_HEADER], id);
    assert.equal(headers.origin, 'test');
    assert.equal(headers['x-request-id'], 'req-7');
    assert.ok(!Number.isNaN(Date.parse(headers[ENQUEUED_AT_HEADER] ?? '')), 'an ISO enqueue time');
  });

  test('three consumers of one name starting at the same moment (replicas rolled out together) all join the group, and each message has its effect once', async (t) => {
    const topic = 'together';
    const transports = [0, 1, 2].map(() => suite.transportFor(t, suite.pool));
    // The joins race at the coordinator; one the broker refuses must be made again, not given up.
    // While the group settles a message may reach a second member before the first committed it
    // (Kafka delivers at least once): its effect, written in the inbox transaction, is kept once.
    await Promise.all(
      transports.map((transport, i) =>
        transport.consume({
          name: 'together',
          topic,
          concurrency: 2,
          handler: async (m, ctx) => {
            await ctx.inTx((c) =>
              c.query('INSERT INTO effects (message_id, consumer) VALUES ($1, $2)', [m.id, `member-${i}`]),
            );
          },
        }),
      ),
    );
    const ids = await inTransaction(suite.pool, async (c) => {
      const out: string[] = [];
      for (let i = 0; i < 30; i++) out.push(await enqueue(c, { topic, key: `k${i}`, payload: { i } }));
      return out;
    });
    const effects = async () =>
      (
        await suite.pool.query<{ message_id: string; n: number }>(
          'SELECT message_id, count(*)::int AS n FROM effects WHERE message_id = ANY($1) GROUP BY message_id',
          [ids],
        )
      ).rows;
    await waitFor('all 30 handled', async () => (await effects()).length === 30, 30_000);
    await Promise.all(transports.map((tr) => tr.stop()));
    assert.deepEqual(
      (await effects()).filter((r) => r.n !== 1),
      [],
      'each message had its effect exactly once',
    );
  });

  test('a message parked as dead is also copied to <topic>.dead with its consumer, attempts and error', async (t) => {
    const topic = 'poisoned';
    const transport = suite.transportFor(t, suite.pool);
    await transport.consume({
      name: 'poisoned',
      topic,
      maxAttempts: 2,
      backoff: { baseMs: 10, capMs: 20 },
      handler: async () => {
        throw new Error('upstream refused: 422 invalid budget');
      },
    });
    const id = await enqueue(suite.pool, { topic, key: 'camp-2', payload: { budget: -2 } });
    await waitFor('a dead letter', async () => (await listDead(suite.pool, { topic })).length > 0);

    const [copy] = await readTopic(deadLetterTopic(topic), 1);
    assert.equal(deadLetterTopic(topic), 'poisoned.dead');
    assert.equal(copy?.key?.toString(), 'camp-2');
    assert.deepEqual(JSON.parse(copy?.value?.toString() ?? 'null'), { budget: -2 });
    const headers = Object.fromEntries(Object.entries(copy?.headers ?? {}).map(([k, v]) => [k, text(v)]));
    assert.equal(headers[DEAD_HEADERS.messageId], id);
    assert.equal(headers[DEAD_HEADERS.consumer], 'poisoned');
    assert.equal(headers[DEAD_HEADERS.attempts], '2');
    assert.equal(headers[DEAD_HEADERS.error], 'upstream refused: 422 invalid budget');
    assert.notEqual(headers[MESSAGE_ID_HEADER], id, 'the copy is a message of its own');
  });

  test('a recurring job on two processes runs once a period between them, never two at once (ticks delivered at their time by the relay)', async (t) => {
    const everyMs = 1000;
    const runs: number[] = [];
    let running = 0;
    let overlapped = false;
    const started = Date.now();
    for (const p of [suite.pool, suite.pool2])
      await startRecurring({
        bus: suite.transportFor(t, p),
        pool: p,
        logger,
        topic: 'recurring',
        everyMs,
        run: async () => {
          running++;
          overlapped ||= running > 1;
          runs.push(Date.now() - started);
          await sleep(50);
          running--;
        },
      });
    const from = runs.length;
    await sleep(everyMs * 4);
    const inFour = runs.length - from;
    // A timer in each process would have run about eight times; the bus runs it about four.
    assert.ok(inFour >= 3 && inFour <= 5, `runs in four periods: ${JSON.stringify(runs)}`);
    assert.equal(overlapped, false, 'never two runs at once');
  });
});
