/**
 * The Kafka transport (kafkajs), the production choice when `KAFKA_BROKERS` is set.
 *
 * The relay: every transport runs one for its service's outbox. It claims due outbox rows the way
 * the Postgres transport's consumers do (`FOR UPDATE SKIP LOCKED`, in insertion order), publishes
 * each to the Kafka topic named by its `topic`, keyed by its `key` (one key, one partition, so one
 * aggregate's work stays in order), with the message id and enqueue time as Kafka headers beside
 * the producer's own, and marks the rows done in the same transaction once every broker in sync
 * acknowledged them (`acks: -1`). A relay that dies mid-publish rolls back and the rows are
 * published again: delivery is at least once. The relays of one schema take turns on a
 * transaction-scoped advisory lock, so two processes never publish one key out of order.
 *
 * Consumers: `consume` joins the consumer group named `ConsumerOptions.name`; the group shares
 * the topic's partitions among its members and hands them over when one joins, leaves or goes
 * silent (a rebalance). For each message a consumer counts the attempt in `bus_deliveries` before
 * running the handler (so a consumer that died mid-handler used one), skips what the inbox
 * (`bus_inbox`, the same as the Postgres transport's) already holds, and commits the offset only
 * once the handler's work is done. A handler that fails is retried with the same backoff while
 * its partition is held: the partition is paused and rewound to the message, so nothing behind it
 * runs first, and resumed when the backoff is over. After `maxAttempts` the message is parked: it
 * becomes a `dead` row of this service's `bus_outbox` (so `listDead` and `requeue` work as on the
 * Postgres transport; `requeue` makes the relay publish it again) and a copy is published to
 * `<topic>.dead` for whoever watches dead letters there. Then its offset is committed.
 *
 * Liveness: after a broker is lost, kafkajs's way back into the group can stall without a word
 * (commits retried against a coordinator that is gone, a crash that waits for every message handed
 * out, a view of the cluster naming a dead leader). A consumer retries its calls to Kafka for
 * seconds, not a minute, takes no more messages once a call to Kafka failed, looks the cluster up
 * again every 10 s, and is watched from such a failure until it joins again; with no join in time
 * it joins with a new kafkajs consumer (see KafkaBusConsumer.watchJoin). docs/bus.md tells the
 * whole story.
 *
 * Topics: the transport creates each topic it publishes or consumes, and its `<topic>.dead`, with
 * the admin client before first use, with the partitions and replication it was given (by
 * default 6 partitions, replicated on up to 3 brokers as the cluster has them), and never relies
 * on the brokers creating topics on first use. A topic that already exists is used as it is.
 *
 * The relay's producer is idempotent (the brokers drop a retried batch they already appended, so
 * a retry inside one publish never doubles or reorders a message); what the relay publishes again
 * after a failed round is a new send, which the consumers' inboxes absorb. It sends each partition's
 * messages on their own: a kafkajs send spanning several brokers can lose messages when a broker
 * dies (see Relay.publishBatch).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type Admin,
  type EachMessagePayload,
  type ITopicMetadata,
  Kafka,
  type Consumer as KafkaConsumer,
  type KafkaMessage,
  type LogEntry,
  logLevel,
  Partitioners,
  type PartitionMetadata,
  type Producer,
  type SASLOptions,
} from 'kafkajs';
import { inTransaction, type Pool, type PoolClient } from '../db.ts';
import { type Logger, withRequestId } from '../log.ts';
import { consumeInSpan } from '../telemetry.ts';
import {
  AlreadyProcessedError,
  type BusTransport,
  backoffDelay,
  type Consumer,
  type ConsumerOptions,
  type Delivery,
  type GiveUpReason,
  type Handler,
  type HandlerContext,
  type Json,
  REQUEST_ID_HEADER,
} from './bus.ts';
import { inInboxTransaction, isProcessed } from './inbox.ts';
import { Listener } from './listener.ts';
import { enqueue } from './outbox.ts';
import { type Rounds, rounds } from './rounds.ts';

/** The Kafka header carrying the outbox message id (the inbox dedupes by it). */
export const MESSAGE_ID_HEADER = 'bus-message-id';
/** The Kafka header carrying when the message was enqueued (ISO 8601). */
export const ENQUEUED_AT_HEADER = 'bus-enqueued-at';
/** Headers of a copy in `<topic>.dead`: the dead message's id, its consumer, attempts and error. */
export const DEAD_HEADERS = {
  messageId: 'bus-dead-message-id',
  consumer: 'bus-dead-consumer',
  attempts: 'bus-dead-attempts',
  error: 'bus-dead-error',
} as const;

/** The topic where copies of the messages parked by consumers of `topic` are published. */
export function deadLetterTopic(topic: string): string {
  return `${topic}.dead`;
}

export interface KafkaTransportDeps {
  /** The service's pool (search_path at the schema holding the bus tables). */
  pool: Pool;
  logger: Logger;
  /** `host:port` of one or more brokers to bootstrap from. */
  brokers: string[];
  /** Names this process to the brokers (the service's name). */
  clientId: string;
  /** TLS to the brokers (`KAFKA_SSL`), with the system's trusted certificate authorities. */
  ssl?: boolean;
  /** SASL authentication (`KAFKA_SASL_MECHANISM`, `KAFKA_SASL_USERNAME`, `KAFKA_SASL_PASSWORD`). */
  sasl?: SASLOptions;
  /**
   * Partitions of a topic the transport creates (`KAFKA_TOPIC_PARTITIONS`, default 6): the most
   * members of one consumer group that can work at once.
   */
  partitions?: number;
  /**
   * Replicas of each partition of a topic the transport creates (`KAFKA_REPLICATION_FACTOR`);
   * by default 3, or as many brokers as the cluster has when it has fewer. Its
   * `min.insync.replicas` is 2 from 3 replicas on, else 1.
   */
  replicationFactor?: number;
  /**
   * How long the group waits for a member that sends no heartbeat before handing its partitions
   * to others (default 30 s): how long a crashed consumer's messages wait.
   */
  sessionTimeoutMs?: number;
  /** How often consumers tell the group they are alive (default 3 s; a third of the session or less). */
  heartbeatIntervalMs?: number;
  /**
   * The longest a fetch waits at the broker when there is nothing new (default 500 ms). New
   * messages are returned at once; this bounds how late a paused partition is fetched again
   * after its retry delay.
   */
  fetchMaxWaitMs?: number;
  /** How often the relay looks for due outbox rows when no notification arrives (default 1 s). */
  relayPollMs?: number;
  /**
   * How long one relay batch may take to be acknowledged before the relay gives up the partitions
   * not acknowledged yet, leaves their rows pending and tries again later with a new producer
   * (default 10 s). kafkajs's own retries would wait minutes for brokers that are down, holding
   * the claim's transaction open.
   */
  relayPublishTimeoutMs?: number;
  /** How long `consume` waits to join its group before giving up (default 60 s). */
  joinTimeoutMs?: number;
  /**
   * How long a consumer may stay out of its group after a crash (after kafkajs's restart delay),
   * or while it joins again, before it is replaced by a new kafkajs consumer that joins afresh
   * (default 30 s). kafkajs's restart after a broker is lost may never complete, without a word.
   */
  joinWatchMs?: number;
  /** Wait before re-establishing a LISTEN connection that broke (default 1 s). */
  reconnectDelayMs?: number;
}

const DEFAULTS = {
  sessionTimeoutMs: 30_000,
  heartbeatIntervalMs: 3_000,
  fetchMaxWaitMs: 500,
  relayPollMs: 1_000,
  relayPublishTimeoutMs: 10_000,
  joinTimeoutMs: 60_000,
  // A restart that works joins within seconds (connect, find the coordinator, join, sync); one
  // waiting on a rebalance waits for the group's other members, a few heartbeats more. 30 s is
  // well past both, and short next to the session a stuck member's partitions would wait anyway.
  joinWatchMs: 30_000,
  reconnectDelayMs: 1_000,
  partitions: 6,
  replicationFactor: 3,
  concurrency: 1,
  maxAttempts: 10,
  backoff: { baseMs: 1000, capMs: 300_000 },
  stopTimeoutMs: 10_000,
};

/**
 * createKafkaTransport returns a transport whose relay starts publishing this service's outbox at
 * once (connecting in the background and retrying until the brokers answer) and whose consumers
 * each join their own consumer group. `stop` stops the consumers (after their running handlers),
 * then the relay, and disconnects.
 */
export function createKafkaTransport(deps: KafkaTransportDeps): BusTransport {
  const log = deps.logger.child({ bus: 'kafka' });
  const kafka = new Kafka({
    clientId: deps.clientId,
    brokers: deps.brokers,
    logLevel: logLevel.WARN,
    logCreator: kafkaLogTo(log),
    retry: { initialRetryTime: 300, retries: 8 },
    ...(deps.ssl === true ? { ssl: true } : {}),
    ...(deps.sasl === undefined ? {} : { sasl: deps.sasl }),
  });
  const topics = new Topics(kafka, log, deps.partitions ?? DEFAULTS.partitions, deps.replicationFactor);
  const settings: ConsumerSettings = {
    sessionTimeoutMs: deps.sessionTimeoutMs ?? DEFAULTS.sessionTimeoutMs,
    heartbeatIntervalMs: deps.heartbeatIntervalMs ?? DEFAULTS.heartbeatIntervalMs,
    fetchMaxWaitMs: deps.fetchMaxWaitMs ?? DEFAULTS.fetchMaxWaitMs,
    joinTimeoutMs: deps.joinTimeoutMs ?? DEFAULTS.joinTimeoutMs,
    joinWatchMs: deps.joinWatchMs ?? DEFAULTS.joinWatchMs,
  };
  const listener = new Listener(deps.pool, log, deps.reconnectDelayMs ?? DEFAULTS.reconnectDelayMs);
  const relay = new Relay(deps.pool, kafka, topics, listener, log, {
    pollMs: deps.relayPollMs ?? DEFAULTS.relayPollMs,
    publishTimeoutMs: deps.relayPublishTimeoutMs ?? DEFAULTS.relayPublishTimeoutMs,
  });
  const consumers = new Set<Consumer>();
  let stopped = false;
  relay.start();

  return {
    async consume<P = Json>(options: ConsumerOptions<P>): Promise<Consumer> {
      if (stopped) throw new Error('bus transport is stopped');
      const consumer = new KafkaBusConsumer<P>(kafka, topics, deps.pool, log, options, settings);
      consumers.add(consumer);
      try {
        await consumer.start();
      } catch (err) {
        consumers.delete(consumer);
        await consumer.stop();
        throw err;
      }
      if (stopped) {
        await consumer.stop();
        throw new Error('bus transport is stopped');
      }
      return consumer;
    },
    async stop() {
      stopped = true;
      await Promise.all([...consumers].map((c) => c.stop()));
      consumers.clear();
      await relay.stop();
      await topics.close();
      listener.stop();
    },
  };
}

/**
 * kafkaLogTo routes kafkajs's own log lines (warnings and errors only) to `logger`. An error
 * response on a connection is logged at debug: it is also returned to the request's caller,
 * which handles it (a rebalance, a retried request) or reports it.
 */
function kafkaLogTo(logger: Logger) {
  return () =>
    ({ namespace, level, log }: LogEntry): void => {
      const { message, timestamp: _t, logger: _l, ...extra } = log;
      const fields = { kafkajs: namespace, ...extra };
      // The relay limits its producer's retries on purpose (see Relay), which kafkajs warns of.
      // A message refused on purpose (NotTakingMessagesError) comes again after the member's join.
      if (
        namespace === 'Connection' ||
        message.startsWith('Limiting retries for the idempotent') ||
        extra.error instanceof NotTakingMessagesError
      )
        logger.debug(fields, message);
      else if (level <= logLevel.ERROR) logger.error(fields, message);
      else logger.warn(fields, message);
    };
}

/**
 * Topics creates, with the admin client, each topic the transport uses before its first use, and
 * the `<topic>.dead` beside it. A topic is looked up once per transport; one that exists (made by
 * an operator, or by another process a moment before) is used as it is. It keeps each topic's
 * partition count as it found it, by which the relay places each message (see Relay.publishBatch).
 * Exported for the tests on a three-broker cluster.
 */
export class Topics {
  private admin: Admin | undefined;
  private connected: Promise<Admin> | undefined;
  private readonly ready = new Map<string, Promise<void>>();
  private readonly counts = new Map<string, number>();

  constructor(
    private readonly kafka: Kafka,
    private readonly log: Logger,
    private readonly partitions: number,
    private readonly replicationFactor: number | undefined,
  ) {}

  /** ensure resolves once `names` and their dead-letter topics exist. */
  async ensure(names: Iterable<string>): Promise<void> {
    const wanted = new Set<string>();
    for (const name of names) {
      wanted.add(name);
      if (!isDeadLetterTopic(name)) wanted.add(deadLetterTopic(name));
    }
    const missing = [...wanted].filter((t) => !this.ready.has(t));
    if (missing.length > 0) {
      const made = this.create(missing);
      for (const t of missing) {
        // A failed creation is looked up again by the next caller.
        this.ready.set(
          t,
          made.catch((err: unknown) => {
            this.ready.delete(t);
            throw err;
          }),
        );
      }
    }
    await Promise.all([...wanted].map((t) => this.ready.get(t)));
  }

  /**
   * partitionsOf is the partition count of `topic` as `ensure` found it. Partitions an operator
   * adds later are not used until the transport starts again, so a key keeps its partition (and
   * its messages their order) meanwhile.
   */
  partitionsOf(topic: string): number {
    const count = this.counts.get(topic);
    if (count === undefined) throw new Error(`bus topic ${topic} was not looked up before its use`);
    return count;
  }

  private connect(): Promise<Admin> {
    this.connected ??= (async () => {
      const admin = this.kafka.admin();
      this.admin = admin;
      await admin.connect();
      return admin;
    })().catch((err: unknown) => {
      this.connected = undefined;
      throw err;
    });
    return this.connected;
  }

  private async create(names: string[]): Promise<void> {
    const admin = await this.connect();
    const existing = new Set(await admin.listTopics());
    const topics = names.filter((t) => !existing.has(t));
    if (topics.length > 0) await this.createMissing(admin, topics);
    // Read once the new topics have their leaders, as every broker answering reports them.
    const found = await this.metadataOf(admin, names, new Set(topics));
    for (const t of found) if (t.partitions.length > 0) this.counts.set(t.name, t.partitions.length);
    const unknown = names.filter((t) => !this.counts.has(t));
    if (unknown.length > 0) throw new Error(`bus topics ${unknown.join(', ')} have no partitions`);
  }

  private async createMissing(admin: Admin, topics: string[]): Promise<void> {
    const brokers = (await admin.describeCluster()).brokers.length;
    const replicationFactor =
      this.replicationFactor ?? Math.min(DEFAULTS.replicationFactor, Math.max(1, brokers));
    // With 3 replicas or more, a write acknowledged by `acks: -1` is on 2 brokers at least, and
    // one broker may be down without stopping the writes.
    const minInsync = Math.max(1, Math.min(2, replicationFactor - 1));
    await admin.createTopics({
      // kafkajs's own wait gives up when the broker answering does not know the new topic yet
      // (its metadata trails the controller's, as on KRaft clusters): waited for below instead.
      waitForLeaders: false,
      topics: topics.map((topic) => ({
        topic,
        numPartitions: this.partitions,
        replicationFactor,
        configEntries: [{ name: 'min.insync.replicas', value: String(minInsync) }],
      })),
    });
    this.log.info(
      {
        topics,
        partitions: this.partitions,
        replication_factor: replicationFactor,
        min_insync_replicas: minInsync,
      },
      'bus topics created',
    );
  }

  /**
   * metadataOf reads the metadata of `names`, waiting (up to TOPIC_READY_TIMEOUT_MS) while a
   * broker does not know one of them yet or, for the topics in `created`, while a partition has
   * no leader. Each broker answers from its own copy of the cluster's metadata, which trails the
   * controller's for a moment after a topic is created, so two readings in a row may disagree.
   */
  private async metadataOf(
    admin: Admin,
    names: string[],
    created: ReadonlySet<string>,
  ): Promise<ITopicMetadata[]> {
    const deadline = Date.now() + TOPIC_READY_TIMEOUT_MS;
    for (;;) {
      try {
        const { topics: found } = await admin.fetchTopicMetadata({ topics: names });
        const ready = (t: ITopicMetadata): boolean =>
          !created.has(t.name) || (t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0));
        if (found.length === names.length && found.every(ready)) return found;
      } catch (err) {
        const type = (err as { type?: unknown }).type;
        if (type !== 'UNKNOWN_TOPIC_OR_PARTITION' && type !== 'LEADER_NOT_AVAILABLE') throw err;
      }
      if (Date.now() > deadline)
        throw new Error(
          `bus topics ${names.join(', ')} are not known with their leaders after ${TOPIC_READY_TIMEOUT_MS} ms`,
        );
      await sleep(100);
    }
  }

  async close(): Promise<void> {
    const admin = this.admin;
    if (admin === undefined) return;
    await this.connected?.catch(() => undefined);
    await admin.disconnect().catch((err: unknown) => {
      this.log.warn({ err }, 'bus: disconnecting the admin client failed');
    });
  }
}

/** How long new topics may take to have their leaders. */
const TOPIC_READY_TIMEOUT_MS = 30_000;

function isDeadLetterTopic(topic: string): boolean {
  return topic.endsWith('.dead');
}

interface RelayRow {
  id: string;
  topic: string;
  key: string;
  payload: Json;
  headers: Record<string, string>;
  created_at: Date;
}

/** Rows published in one round trip; the next batch is claimed once these are acknowledged. */
const RELAY_BATCH = 100;
const RELAY_RETRY = { baseMs: 500, capMs: 30_000 };

/**
 * The relay: publishes due outbox rows to Kafka and marks them done. It wakes on `NOTIFY
 * bus_outbox` for any topic of its schema, on a polling interval, and after a failed publish
 * (with a growing wait).
 */
class Relay {
  /** The producer of the current connection; a failed round drops it (see `failed`). */
  private producer: Producer | undefined;
  private connected: Promise<Producer> | undefined;
  private running = false;
  private readonly rounds: Rounds = rounds(
    () => this.publishRound(),
    () => this.running,
    (err) => this.failed(err),
  );
  private pollTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private failures = 0;
  private unsubscribe: (() => void) | undefined;
  private listening = false;

  constructor(
    private readonly pool: Pool,
    private readonly kafka: Kafka,
    private readonly topics: Topics,
    private readonly listener: Listener,
    private readonly log: Logger,
    private readonly timing: { pollMs: number; publishTimeoutMs: number },
  ) {}

  private newProducer(): Producer {
    return this.kafka.producer({
      // The transport creates its topics (Topics); a topic missing here is an error, not a new
      // topic with the brokers' defaults.
      allowAutoTopicCreation: false,
      // The brokers drop a batch they already appended when its send is retried (by producer id
      // and sequence number): a retry inside one publish neither doubles nor reorders messages.
      idempotent: true,
      // kafkajs sends an idempotent producer's requests to one broker one at a time anyway; the
      // relay awaits each partition's send before that partition's next, which keeps a key's
      // messages in order by itself.
      maxInFlightRequests: 1,
      // Only for a message without a partition; the relay places each message itself, with the
      // same partitioner (see partitionOf).
      createPartitioner: Partitioners.DefaultPartitioner,
      // Bounded, unlike kafkajs's default for an idempotent producer (retrying forever): the
      // relay holds its claim transaction open while it publishes, and a partition whose send
      // fails is published again later by a new producer.
      retry: { retries: 5 },
    });
  }

  start(): void {
    this.running = true;
    this.unsubscribe = this.listener.subscribeAll(() => this.rounds.wake());
    this.pollTimer = setInterval(() => this.rounds.wake(), this.timing.pollMs);
    this.pollTimer.unref();
    this.rounds.wake();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.unsubscribe?.();
    clearInterval(this.pollTimer);
    clearTimeout(this.retryTimer);
    await this.rounds.settled();
    await this.dropProducer();
  }

  /**
   * dropProducer disconnects the current producer; the next round connects a new one, with a
   * new producer id. After a failed send kafkajs may hold sequence numbers the brokers never
   * appended, which would refuse every later batch of that producer as out of order.
   */
  private async dropProducer(): Promise<void> {
    const producer = this.producer;
    const connected = this.connected;
    this.producer = undefined;
    this.connected = undefined;
    if (producer === undefined) return;
    await connected?.catch(() => undefined);
    await producer.disconnect().catch((err: unknown) => {
      this.log.warn({ err }, 'bus relay: disconnecting the producer failed');
    });
  }

  /**
   * One round: publishes due rows, batch after batch, until a batch is not full. A batch of which
   * a partition's send failed ends the round as a failure once the rows of the partitions the
   * brokers did acknowledge are marked published; the others stay pending.
   */
  private async publishRound(): Promise<void> {
    await this.listen();
    for (;;) {
      if (!this.running) break;
      const { claimed, failure } = await this.publishBatch();
      if (failure !== undefined) throw failure;
      if (claimed < RELAY_BATCH) break;
    }
    this.failures = 0;
  }

  /** A failed round: the rows stay pending, and the relay wakes again after a growing wait. */
  private failed(err: unknown): void {
    this.failures++;
    const delayMs = backoffDelay(this.failures, RELAY_RETRY, Math.random);
    this.log.error({ err, delay_ms: delayMs }, 'bus relay could not publish; the rows stay pending');
    void this.dropProducer();
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.rounds.wake(), delayMs);
  }

  /** listen starts the LISTEN connection once; until it works, polling alone finds new rows. */
  private async listen(): Promise<void> {
    if (this.listening) return;
    try {
      await this.listener.start();
      this.listening = true;
    } catch (err) {
      this.log.warn({ err }, 'bus relay: no LISTEN connection yet; polling');
    }
  }

  private connect(): Promise<Producer> {
    if (this.connected === undefined) {
      const producer = this.newProducer();
      this.producer = producer;
      this.connected = producer.connect().then(
        () => producer,
        (err: unknown) => {
          if (this.producer === producer) {
            this.producer = undefined;
            this.connected = undefined;
          }
          throw err;
        },
      );
    }
    return this.connected;
  }

  /**
   * publishBatch publishes up to RELAY_BATCH due rows, all in one transaction that holds the
   * schema's relay lock, and marks published the rows of each partition the brokers acknowledged;
   * the rows of a partition whose send failed (or was not acknowledged in time) stay pending, and
   * the failure is returned for the round to end on. A failure before the sends rolls the claim
   * back. The rows are published again later (some perhaps twice).
   *
   * Each partition's messages go in a send of their own, the relay placing every message with
   * kafkajs's own partitioner. kafkajs (2.2.4, its last release) loses messages when one send spans
   * partitions led by different brokers and a leader dies: its retry after the failure of one
   * broker's request skips every broker that answered the first attempt, so the partitions that
   * moved to such a broker are never sent again, and the send resolves as acknowledged (kafkajs
   * issue #1303, pull request #1798, open). A send to one partition reaches one broker per attempt,
   * so its retry always goes to the partition's current leader.
   */
  private async publishBatch(): Promise<{ claimed: number; failure: unknown }> {
    const producer = await this.connect();
    let failure: unknown;
    const claimed = await inTransaction(this.pool, async (tx) => {
      await lockRelay(tx);
      const rows = await claimDue(tx, RELAY_BATCH);
      if (rows.length === 0 || !this.running) return 0;
      await this.topics.ensure(new Set(rows.map((r) => r.topic)));
      const sends = byPartition(rows, (topic) => this.topics.partitionsOf(topic)).map((p) => {
        const send = {
          rows: p.rows,
          acked: false,
          done: producer
            .send({
              topic: p.topic,
              acks: -1,
              messages: p.rows.map((row) => ({
                partition: p.partition,
                key: row.key,
                value: JSON.stringify(row.payload),
                headers: {
                  ...row.headers,
                  [MESSAGE_ID_HEADER]: row.id,
                  [ENQUEUED_AT_HEADER]: row.created_at.toISOString(),
                },
              })),
            })
            .then(() => {
              send.acked = true;
            }),
        };
        return send;
      });
      try {
        const settled = await withTimeout(
          Promise.allSettled(sends.map((p) => p.done)),
          this.timing.publishTimeoutMs,
          `the brokers did not acknowledge ${rows.length} messages within ${this.timing.publishTimeoutMs} ms`,
        );
        failure = settled.find((r) => r.status === 'rejected')?.reason;
      } catch (err) {
        failure = err;
      }
      // Read once: a send that is acknowledged after this is published again later, a duplicate
      // the consumers' inboxes absorb.
      const acked = sends.filter((p) => p.acked).flatMap((p) => p.rows.map((r) => r.id));
      if (failure !== undefined)
        this.log.warn(
          { acknowledged: acked.length, pending: rows.length - acked.length },
          'bus relay: a send failed; the messages the brokers acknowledged are marked published, the others stay pending',
        );
      await markPublished(tx, acked);
      return rows.length;
    });
    return { claimed, failure };
  }
}

interface PartitionRows {
  topic: string;
  partition: number;
  rows: RelayRow[];
}

/** The Kafka partitioner the relay places messages with: a key's partition as kafkajs's producer chose it. */
const partitioner = Partitioners.DefaultPartitioner();

/**
 * partitionOf is the partition of `key` in a topic of `count` partitions, as kafkajs's default
 * partitioner (Java's: murmur2 of the key) places it, so a key keeps the partition its earlier
 * messages went to.
 */
function partitionOf(topic: string, key: string, count: number): number {
  return partitioner({ topic, partitionMetadata: partitionsOfCount(count), message: { key, value: null } });
}

/** The partition list partitionOf hands the partitioner, one per partition count, made once. */
const partitionLists = new Map<number, PartitionMetadata[]>();

function partitionsOfCount(count: number): PartitionMetadata[] {
  let list = partitionLists.get(count);
  if (list === undefined) {
    // With a key, the partitioner reads only how many partitions there are.
    list = Array.from({ length: count }, (_, partitionId) => ({
      partitionErrorCode: 0,
      partitionId,
      leader: 0,
      replicas: [],
      isr: [],
    }));
    partitionLists.set(count, list);
  }
  return list;
}

/** byPartition groups `rows` by topic and partition, each group in the rows' order. */
function byPartition(rows: RelayRow[], partitionsOf: (topic: string) => number): PartitionRows[] {
  const groups = new Map<string, PartitionRows>();
  for (const row of rows) {
    const partition = partitionOf(row.topic, row.key, partitionsOf(row.topic));
    const id = `${row.topic}\u0000${partition}`;
    const group = groups.get(id);
    if (group === undefined) groups.set(id, { topic: row.topic, partition, rows: [row] });
    else group.rows.push(row);
  }
  return [...groups.values()];
}

/**
 * withTimeout settles as `work` does, or rejects with `message` after `ms`. A send given up this
 * way is not cancelled: it ends when the relay drops its producer, or lands later, a duplicate
 * the consumers' inboxes absorb.
 */
async function withTimeout<T>(work: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  work.catch(() => undefined);
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** lockRelay waits for this schema's relay lock, held until the transaction ends. */
async function lockRelay(tx: PoolClient): Promise<void> {
  await tx.query(`SELECT pg_advisory_xact_lock(hashtext('bus_relay:' || current_schema()))`);
}

/** claimDue locks the oldest due rows, as the Postgres transport's consumers would claim them. */
async function claimDue(tx: PoolClient, limit: number): Promise<RelayRow[]> {
  const { rows } = await tx.query<RelayRow>(
    `SELECT id, topic, key, payload, headers, created_at FROM bus_outbox
      WHERE (status = 'pending' AND run_at <= now()) OR (status = 'running' AND locked_until <= now())
      ORDER BY seq
      LIMIT $1
      FOR UPDATE SKIP LOCKED`,
    [limit],
  );
  return rows;
}

async function markPublished(tx: PoolClient, ids: string[]): Promise<void> {
  await tx.query(
    `UPDATE bus_outbox
        SET status = 'done', locked_by = NULL, locked_until = NULL, updated_at = now()
      WHERE id = ANY($1::uuid[])`,
    [ids],
  );
}

interface ConsumerSettings {
  sessionTimeoutMs: number;
  heartbeatIntervalMs: number;
  fetchMaxWaitMs: number;
  joinTimeoutMs: number;
  joinWatchMs: number;
}

interface InFlight {
  id: string;
  controller: AbortController;
  /** Makes the message's eachMessage return without committing (stop gave up waiting). */
  abandon: () => void;
}

type Outcome = { kind: 'handled' } | { kind: 'failed'; error: unknown } | { kind: 'abandoned' };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Heartbeat errors after which this member no longer holds its partitions. */
const LEFT_GROUP = new Set(['UNKNOWN_MEMBER_ID', 'ILLEGAL_GENERATION', 'FENCED_INSTANCE_ID']);

/**
 * A message in hand: the offset past it, its log, its group's heartbeat, and how to commit past it
 * and hold its partition, both through the kafkajs consumer that fetched it.
 */
interface InHand {
  next: { topic: string; partition: number; offset: string };
  log: Logger;
  heartbeat: () => Promise<void>;
  consumer: KafkaConsumer;
  commit: () => Promise<void>;
  retryLater: (delayMs: number) => void;
}

/**
 * Thrown to a kafkajs consumer for a message it fetched but must not run: the consumer was replaced
 * (see KafkaBusConsumer.rejoinFresh), or a call to Kafka failed and it is on its way back into its
 * group. Not retriable, so kafkajs stops that consumer's fetching at once; the message's offset is
 * not committed, so it comes again after the join.
 */
class NotTakingMessagesError extends Error {
  readonly retriable = false;
  constructor(why: string) {
    super(`this Kafka consumer takes no more messages: ${why}`);
    this.name = 'NotTakingMessagesError';
  }
}

/**
 * How often a consumer's calls to Kafka (an offset commit among them) are retried before they fail:
 * 0.3 s, then doubling, about 9 s in all, where the client's 8 take about a minute. After the
 * group's coordinator is lost, kafkajs retries a commit against the broker that is gone (it does
 * not look the coordinator up again), so every retry is lost time; a commit that fails makes the
 * member join its group again, which finds the current coordinator. A wait bounding the commit
 * instead would leave kafkajs retrying it in the background, reconnecting to the cluster after the
 * consumer was stopped.
 */
const CONSUMER_RETRIES = 5;

/**
 * How old a consumer's view of the cluster (which broker leads which partition) may grow before
 * kafkajs asks for it again. kafkajs fetches each partition from the leader in that view and looks
 * again only when the view is this old (its default: 5 minutes), also when the view names a leader
 * that is gone: a view taken just after a broker was lost, before its partitions had new leaders,
 * left those partitions unfetched, their messages waiting, with no error anywhere. One metadata
 * request per consumer every 10 s costs the brokers next to nothing.
 */
const CONSUMER_METADATA_MAX_AGE_MS = 10_000;

/** How long a replaced kafkajs consumer may take to leave before its successor joins anyway. */
const REPLACED_LEAVE_WAIT_MS = 5_000;

class KafkaBusConsumer<P> implements Consumer {
  private readonly name: string;
  private readonly topic: string;
  private readonly opts: {
    handler: ConsumerOptions<P>['handler'];
    giveUp: ConsumerOptions<P>['giveUp'];
    concurrency: number;
    maxAttempts: number;
    backoff: NonNullable<ConsumerOptions<P>['backoff']>;
    stopTimeoutMs: number;
    random: () => number;
  };
  private readonly log: Logger;
  /** The kafkajs consumer that is this member now; rejoinFresh replaces it. */
  private consumer: KafkaConsumer;
  /**
   * kafkajs consumers that threw a failed call to Kafka and have not joined again since. kafkajs
   * stops a crashed consumer only once every message it handed out is done, and each of those
   * would first retry its own commit to the lost coordinator for a minute: they are refused
   * instead (NotTakingMessagesError), so the crash, and the join after it, come at once.
   */
  private readonly leavingGroup = new WeakSet<KafkaConsumer>();
  /** Disconnections of replaced kafkajs consumers still under way. */
  private readonly leaving = new Set<Promise<void>>();
  /** Called whenever the current kafkajs consumer joins the group (start waits on it). */
  private readonly onJoin = new Set<() => void>();
  private readonly inFlight = new Set<InFlight>();
  /** The messages kafkajs handed out whose handling, bookkeeping and commit are not done yet. */
  private readonly delivering = new Set<Promise<void>>();
  private readonly resumeTimers = new Set<NodeJS.Timeout>();
  private stopping: Promise<void> | undefined;
  private rejoinTimer: NodeJS.Timeout | undefined;
  private rejoinAttempts = 0;
  private joinWatch: NodeJS.Timeout | undefined;

  constructor(
    private readonly kafka: Kafka,
    private readonly topics: Topics,
    private readonly pool: Pool,
    logger: Logger,
    options: ConsumerOptions<P>,
    private readonly settings: ConsumerSettings,
  ) {
    this.name = options.name;
    this.topic = options.topic;
    this.opts = {
      handler: options.handler,
      giveUp: options.giveUp,
      concurrency: options.concurrency ?? DEFAULTS.concurrency,
      maxAttempts: options.maxAttempts ?? DEFAULTS.maxAttempts,
      backoff: options.backoff ?? DEFAULTS.backoff,
      stopTimeoutMs: options.stopTimeoutMs ?? DEFAULTS.stopTimeoutMs,
      random: options.random ?? Math.random,
    };
    this.log = logger.child({ consumer: this.name, topic: this.topic });
    this.consumer = this.newConsumer();
  }

  /**
   * newConsumer makes a kafkajs consumer for this member. Only the current one works: once
   * replaced, a kafkajs consumer never restarts itself after a crash, refuses any message it still
   * fetches, and is disconnected again if a join it had under way completes after all. So a
   * replacement never leaves two kafkajs consumers of this member running handlers.
   */
  private newConsumer(): KafkaConsumer {
    const consumer: KafkaConsumer = this.kafka.consumer({
      groupId: this.name,
      sessionTimeout: this.settings.sessionTimeoutMs,
      rebalanceTimeout: Math.max(60_000, this.settings.sessionTimeoutMs),
      heartbeatInterval: this.settings.heartbeatIntervalMs,
      maxWaitTimeInMs: this.settings.fetchMaxWaitMs,
      allowAutoTopicCreation: false,
      metadataMaxAge: CONSUMER_METADATA_MAX_AGE_MS,
      retry: {
        retries: CONSUMER_RETRIES,
        restartOnFailure: async () => this.isCurrent(consumer) && this.stopping === undefined,
      },
    });
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (!this.isCurrent(consumer)) return;
      this.log.error({ err: payload.error, restart: payload.restart }, 'bus consumer crashed');
      if (payload.restart) {
        // kafkajs restarts after the failed request's retry wait; the watch starts after it.
        const retryTime = (payload.error as { retryTime?: unknown }).retryTime;
        this.watchJoin(typeof retryTime === 'number' ? retryTime : 0, 'kafkajs restarted it after a crash');
      } else {
        // kafkajs restarts itself after a retriable error only; after any other (a broker refusing
        // a join that raced another member's, say) it has left the group for good. A consumer
        // that stays out of its group silently stops the work of its topic, so it joins again.
        this.rejoinLater();
      }
    });
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
      this.log.info(
        {
          member_id: payload.memberId,
          partitions: payload.memberAssignment[this.topic] ?? [],
          duration_ms: payload.duration,
          replaced: !this.isCurrent(consumer),
        },
        'bus consumer joined its group',
      );
      if (!this.isCurrent(consumer)) {
        this.log.warn('bus consumer: a replaced Kafka consumer joined the group after all; it leaves again');
        void this.retire(consumer);
        return;
      }
      this.leavingGroup.delete(consumer);
      clearTimeout(this.joinWatch);
      this.joinWatch = undefined;
      for (const joined of this.onJoin) joined();
    });
    return consumer;
  }

  private isCurrent(consumer: KafkaConsumer): boolean {
    return consumer === this.consumer;
  }

  /** retire disconnects a replaced kafkajs consumer; shutdown waits for it. */
  private retire(consumer: KafkaConsumer): Promise<void> {
    const left: Promise<void> = consumer
      .disconnect()
      .catch((err: unknown) =>
        this.log.warn({ err }, 'bus consumer: a replaced Kafka consumer failed to leave'),
      )
      .finally(() => this.leaving.delete(left));
    this.leaving.add(left);
    return left;
  }

  /** rejoinLater joins the group again after a growing, jittered wait (1 s, 2 s, … 30 s). */
  private rejoinLater(): void {
    if (this.stopping !== undefined || this.rejoinTimer !== undefined) return;
    // This wait is the backoff; the join watch starts again with the join.
    clearTimeout(this.joinWatch);
    this.joinWatch = undefined;
    const base = Math.min(30_000, 1_000 * 2 ** this.rejoinAttempts);
    const delayMs = Math.round(base * (0.5 + this.opts.random()));
    this.rejoinAttempts++;
    this.log.warn(
      { delay_ms: delayMs, attempt: this.rejoinAttempts },
      'bus consumer: joining its group again',
    );
    this.rejoinTimer = setTimeout(() => {
      this.rejoinTimer = undefined;
      if (this.stopping !== undefined) return;
      this.watchJoin(0, 'it joined its group again after a crash');
      this.joinAgain(this.consumer);
    }, delayMs);
  }

  /** joinAgain joins with `consumer`; a failure to start is tried again later (rejoinLater). */
  private joinAgain(consumer: KafkaConsumer): void {
    this.join(consumer).then(
      () => {
        this.rejoinAttempts = 0;
      },
      (err: unknown) => {
        if (!this.isCurrent(consumer)) return;
        this.log.error({ err }, 'bus consumer: joining its group again failed');
        this.rejoinLater();
      },
    );
  }

  /** expectJoin watches for the join that must follow a failure thrown to kafkajs by `consumer`. */
  private expectJoin(consumer: KafkaConsumer, reason: string): void {
    if (this.isCurrent(consumer)) this.watchJoin(0, reason);
  }

  /**
   * watchJoin bounds how long this member stays out of its group after a failure thrown to kafkajs,
   * a crash, or while it joins again: after a broker is lost, kafkajs's way back may never complete
   * (its crash never comes, or its restart never joins; no error, nothing logged), and a member out
   * of its group silently stops its topic's work. No join within `afterMs` + `joinWatchMs`:
   * rejoinFresh. One watch at a time, from the first of these until the next join.
   */
  private watchJoin(afterMs: number, reason: string): void {
    if (this.stopping !== undefined || this.joinWatch !== undefined) return;
    const waitMs = afterMs + this.settings.joinWatchMs;
    this.joinWatch = setTimeout(() => {
      this.joinWatch = undefined;
      void this.rejoinFresh(waitMs, reason);
    }, waitMs);
  }

  /**
   * rejoinFresh replaces the kafkajs consumer that did not join in time with a new one, which
   * looks the cluster up again (brokers, the group's coordinator) and joins as a new member. The
   * old one is disconnected first (for up to REPLACED_LEAVE_WAIT_MS: its disconnection may hang as
   * its join did) and can no longer work (see newConsumer).
   */
  private async rejoinFresh(waitedMs: number, reason: string): Promise<void> {
    if (this.stopping !== undefined) return;
    clearTimeout(this.rejoinTimer);
    this.rejoinTimer = undefined;
    this.log.warn(
      { waited_ms: waitedMs, reason },
      'bus consumer: not back in its group in time; joining again with a new Kafka consumer',
    );
    const old = this.consumer;
    const fresh = this.newConsumer();
    this.consumer = fresh;
    await Promise.race([this.retire(old), sleep(REPLACED_LEAVE_WAIT_MS)]);
    if (this.stopping !== undefined || !this.isCurrent(fresh)) return;
    this.watchJoin(0, 'it joined with a new Kafka consumer');
    this.joinAgain(fresh);
  }

  /**
   * join connects, subscribes and runs `consumer`; kafkajs then joins the group in the background.
   * A consumer still connecting when the bus consumer is stopped is disconnected here.
   */
  private async join(consumer: KafkaConsumer = this.consumer): Promise<void> {
    // Made before the group subscribes, so a consumer that starts before anything was published
    // finds its topic with the intended partitions.
    await this.topics.ensure([this.topic]);
    await consumer.connect();
    await this.subscribe(consumer);
    if (this.stopping !== undefined || !this.isCurrent(consumer)) {
      await consumer.disconnect();
      return;
    }
    await consumer.run({
      autoCommit: false,
      // One message of a partition at a time, and one key is on one partition: this is what
      // ConsumerOptions.serialByKey asks for, so that option needs nothing more here.
      partitionsConsumedConcurrently: this.opts.concurrency,
      eachMessage: (payload) => this.delivered(this.onMessage(consumer, payload)),
    });
  }

  /**
   * subscribe subscribes to the topic, from its oldest message for a new group (what was enqueued
   * before it first ran is its work). A topic made a moment ago may still be unknown to the broker
   * this client asks (a broker's metadata trails the controller's, more so on a busy machine), so
   * that answer is waited out, as long as joining may take.
   */
  private async subscribe(consumer: KafkaConsumer): Promise<void> {
    const deadline = Date.now() + this.settings.joinTimeoutMs;
    for (;;) {
      try {
        await consumer.subscribe({ topic: this.topic, fromBeginning: true });
        return;
      } catch (err) {
        const type = (err as { type?: unknown }).type;
        const notYet = type === 'UNKNOWN_TOPIC_OR_PARTITION' || type === 'LEADER_NOT_AVAILABLE';
        if (!notYet || Date.now() > deadline) throw err;
        await sleep(200);
      }
    }
  }

  /** start joins the group; it resolves once this member has its partitions. */
  async start(): Promise<void> {
    let joinedNow: () => void = () => undefined;
    const joined = new Promise<void>((resolve) => {
      joinedNow = resolve;
    });
    // Whichever kafkajs consumer is current when the join comes (a crash before the join may
    // have been followed by a rejoin, with the same one or a new one).
    this.onJoin.add(joinedNow);
    try {
      await this.join();
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([
        joined.then(() => false),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(true), this.settings.joinTimeoutMs);
        }),
      ]);
      clearTimeout(timer);
      if (timedOut)
        throw new Error(
          `bus consumer ${this.name} did not join its Kafka consumer group within ${this.settings.joinTimeoutMs} ms`,
        );
    } finally {
      this.onJoin.delete(joinedNow);
    }
  }

  stop(): Promise<void> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  /** Tracks a message's handling until it is over, commit included (shutdown waits for it). */
  private delivered(handling: Promise<void>): Promise<void> {
    this.delivering.add(handling);
    return handling.finally(() => this.delivering.delete(handling));
  }

  /**
   * shutdown stops taking messages (the topic paused), lets the running handlers finish and
   * commit, and then leaves the group; after `stopTimeoutMs` it abandons the handlers still
   * running: their signals are aborted and their offsets stay uncommitted, so the group's next
   * owner of the partition runs them again. The handlers end before the leave because kafkajs
   * commits nothing once its stop has begun (it returns from a commit without one): a handler
   * that finished during the leave would have its message delivered again.
   */
  private async shutdown(): Promise<void> {
    for (const t of this.resumeTimers) clearTimeout(t);
    this.resumeTimers.clear();
    clearTimeout(this.rejoinTimer);
    clearTimeout(this.joinWatch);
    this.joinWatch = undefined;
    try {
      this.consumer.pause([{ topic: this.topic }]);
    } catch (err) {
      // Not running yet (still joining): nothing was handed out to wait for.
      this.log.debug({ err }, 'bus consumer: nothing to pause before leaving');
    }
    const started = Date.now();
    if (!(await this.within(Promise.allSettled([...this.delivering]), this.opts.stopTimeoutMs)))
      this.abandonInFlight();
    const disconnected = this.consumer.disconnect().then(
      () => undefined,
      (err: unknown) => this.log.warn({ err }, 'bus consumer: leaving the group failed'),
    );
    const left = Promise.all([disconnected, ...this.leaving]);
    if (!(await this.within(left, Math.max(0, this.opts.stopTimeoutMs - (Date.now() - started)))))
      this.abandonInFlight();
    await disconnected;
  }

  /** Whether `work` ended within `ms`. */
  private async within(work: Promise<unknown>, ms: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const ended = await Promise.race([
      work.then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), ms);
      }),
    ]);
    clearTimeout(timer);
    return ended;
  }

  /** Gives up the handlers still running at stop: aborted, their messages left for the group. */
  private abandonInFlight(): void {
    if (this.inFlight.size === 0) return;
    const ids = [...this.inFlight].map((f) => f.id);
    this.log.warn({ ids }, 'bus consumer stopped with handlers still running; the group will redeliver');
    for (const f of this.inFlight) {
      f.controller.abort(new Error('bus consumer stopped'));
      f.abandon();
    }
  }

  private async onMessage(consumer: KafkaConsumer, payload: EachMessagePayload): Promise<void> {
    if (!this.isCurrent(consumer)) throw new NotTakingMessagesError('it was replaced by a new one');
    if (this.leavingGroup.has(consumer))
      throw new NotTakingMessagesError('a call to Kafka failed and it is joining its group again');
    const { topic, partition, message } = payload;
    const next = { topic, partition, offset: (BigInt(message.offset) + 1n).toString() };
    const hand: InHand = {
      next,
      log: this.log.child({ partition, offset: message.offset }),
      heartbeat: payload.heartbeat,
      consumer,
      commit: () => consumer.commitOffsets([next]),
      retryLater: (delayMs) => this.retryLater(consumer, payload, delayMs),
    };
    const delivery = decode<P>(topic, message);
    if (delivery === undefined) {
      hand.log.error(
        'bus consumer skipped a message that the bus did not publish (no message id or no JSON value)',
      );
      await this.commitPast(hand);
      return;
    }
    hand.log = hand.log.child({ message_id: delivery.id });

    let attempt: number;
    try {
      if (await isProcessed(this.pool, this.name, delivery.id)) {
        await hand.commit();
        return;
      }
      attempt = await countAttempt(this.pool, this.name, delivery.id);
    } catch (err) {
      this.bookkeepingFailed(err, hand);
      return;
    }
    const counted = { ...delivery, attempt };

    if (attempt > this.opts.maxAttempts) {
      // Its last attempt never reported back (the consumer died or was stopped mid-handler).
      const detail = `attempt ${attempt - 1} never reported back: its consumer stopped or left the group before the handler finished`;
      await this.giveUpOrRetry(counted, hand, { kind: 'abandoned', detail }, detail);
      return;
    }

    const outcome = await this.run(counted, hand.heartbeat, hand.log, this.opts.handler);
    if (outcome.kind === 'abandoned') return;
    if (outcome.kind === 'failed' && attempt >= this.opts.maxAttempts) {
      await this.giveUpOrRetry(
        counted,
        hand,
        { kind: 'failed', error: outcome.error },
        errorText(outcome.error),
      );
      return;
    }
    try {
      if (outcome.kind === 'handled') {
        await hand.commit();
      } else {
        const delayMs = backoffDelay(attempt, this.opts.backoff, this.opts.random);
        await recordFailure(this.pool, this.name, delivery.id, errorText(outcome.error));
        hand.log.warn({ err: outcome.error, delay_ms: delayMs }, 'bus handler failed; retrying later');
        hand.retryLater(delayMs);
      }
    } catch (err) {
      this.bookkeepingFailed(err, hand);
    }
  }

  /** Holds the message's partition: it is fetched again from this message once `delayMs` is over. */
  private retryLater(
    consumer: KafkaConsumer,
    { topic, partition, message, pause }: EachMessagePayload,
    delayMs: number,
  ): void {
    const resume = pause();
    consumer.seek({ topic, partition, offset: message.offset });
    const timer = setTimeout(() => {
      this.resumeTimers.delete(timer);
      resume();
    }, delayMs);
    this.resumeTimers.add(timer);
  }

  /** Commits past the message in hand, handing a failure to bookkeepingFailed. */
  private async commitPast(hand: InHand): Promise<void> {
    try {
      await hand.commit();
    } catch (err) {
      this.bookkeepingFailed(err, hand);
    }
  }

  /**
   * giveUpOrRetry runs the consumer's give-up path for a message past its last attempt, then parks
   * it and commits past it. A give-up path that fails keeps the message: it is delivered again
   * after the backoff, past its last attempt, so given up again.
   */
  private async giveUpOrRetry(
    counted: Delivery<P>,
    hand: InHand,
    reason: GiveUpReason,
    error: string,
  ): Promise<void> {
    const { log } = hand;
    try {
      const given = this.opts.giveUp;
      if (given !== undefined) {
        const outcome = await this.run(counted, hand.heartbeat, log, (m, ctx) => given(m, ctx, reason));
        if (outcome.kind === 'abandoned') return;
        if (outcome.kind === 'failed') {
          const delayMs = backoffDelay(counted.attempt, this.opts.backoff, this.opts.random);
          log.error(
            { err: outcome.error, delay_ms: delayMs },
            'bus give-up path failed; trying it again later',
          );
          await recordFailure(
            this.pool,
            this.name,
            counted.id,
            `${error} (its give-up path failed: ${errorText(outcome.error)})`,
          );
          hand.retryLater(delayMs);
          return;
        }
      }
      await this.park(counted, counted.attempt, error);
      log.error({ reason: error }, 'bus message given up and parked as dead');
      await hand.commit();
    } catch (err) {
      this.bookkeepingFailed(err, hand);
    }
  }

  /**
   * bookkeepingFailed handles a failure around the handler (the database, an offset commit). A
   * commit refused by a rebalance is thrown on, so kafkajs rejoins the group; the partition's next
   * owner gets the message again and skips it if the inbox holds it. Any other failure of a call
   * to Kafka (the offset commit) is thrown on too, so kafkajs restarts this member, which looks up
   * the group's coordinator again: kafkajs's offset commits keep asking the broker that was the
   * coordinator when the member joined, and after that broker is lost every commit fails ("Broker
   * 2 not found in the cached metadata") until the member joins again. Either way the member is
   * then watched until it joins (see watchJoin): kafkajs's way back may hang before its crash as
   * well as after it. Anything else (the database): the message is tried again after a while.
   */
  private bookkeepingFailed(err: unknown, hand: InHand): void {
    const { log, retryLater } = hand;
    const rebalance = rebalanceError(err);
    if (rebalance !== undefined) {
      log.info({ reason: rebalance.message }, 'bus consumer: the group is rebalancing; rejoining');
      this.expectJoin(hand.consumer, `the group was rebalancing (${rebalance.message})`);
      throw rebalance;
    }
    if (isKafkaError(err)) {
      log.warn({ err }, 'bus consumer: a call to Kafka failed; joining the group again');
      this.leavingGroup.add(hand.consumer);
      this.expectJoin(hand.consumer, `a call to Kafka failed (${errorText(err)})`);
      throw err;
    }
    const delayMs = backoffDelay(1, this.opts.backoff, this.opts.random);
    log.error({ err, delay_ms: delayMs }, 'bus bookkeeping failed; the message is tried again later');
    retryLater(delayMs);
  }

  /**
   * run calls the handler, telling the group this member is alive while it runs (kafkajs sends no
   * heartbeat of its own during a handler). Resolves with the outcome, or `abandoned` when stop
   * gave up waiting.
   */
  private async run(
    delivery: Delivery<P>,
    heartbeat: () => Promise<void>,
    log: Logger,
    fn: Handler<P>,
  ): Promise<Outcome> {
    const controller = new AbortController();
    let abandon: () => void = () => undefined;
    const abandoned = new Promise<Outcome>((resolve) => {
      abandon = () => resolve({ kind: 'abandoned' });
    });
    const entry: InFlight = { id: delivery.id, controller, abandon };
    const beat = setInterval(() => {
      heartbeat().catch((err: unknown) => {
        const type = (err as { type?: unknown }).type;
        if (typeof type === 'string' && LEFT_GROUP.has(type) && !controller.signal.aborted) {
          log.warn(
            { err },
            'bus consumer left its group while the handler ran; the message may run elsewhere',
          );
          controller.abort(new Error('bus consumer left its group; the message may be redelivered'));
        }
      });
    }, this.settings.heartbeatIntervalMs);
    const ctx: HandlerContext = {
      signal: controller.signal,
      inTx: (fn) => inInboxTransaction(this.pool, this.name, delivery.id, fn),
    };
    const requestId = delivery.headers[REQUEST_ID_HEADER];
    const call = async () => consumeInSpan(this.name, delivery, () => fn(delivery, ctx));
    const handled: Promise<Outcome> = (
      requestId === undefined ? call() : withRequestId(requestId, call)
    ).then(
      () => ({ kind: 'handled' }),
      (error: unknown) =>
        error instanceof AlreadyProcessedError ? { kind: 'handled' } : { kind: 'failed', error },
    );
    this.inFlight.add(entry);
    try {
      return await Promise.race([handled, abandoned]);
    } finally {
      clearInterval(beat);
      this.inFlight.delete(entry);
    }
  }

  /**
   * park makes the message a dead row of this service's outbox (listDead, requeue) and, in the
   * same transaction, enqueues its copy for `<topic>.dead`, which the relay publishes.
   */
  private async park(delivery: Delivery<P>, attempts: number, error: string): Promise<void> {
    await inTransaction(this.pool, async (tx) => {
      await tx.query(
        `INSERT INTO bus_outbox (id, topic, key, payload, headers, status, attempts, last_error, created_at)
         VALUES ($1, $2, $3, $4::jsonb, $5::jsonb, 'dead', $6, $7, $8)
         ON CONFLICT (id) DO UPDATE
           SET status = 'dead', attempts = EXCLUDED.attempts, last_error = EXCLUDED.last_error,
               locked_by = NULL, locked_until = NULL, updated_at = now()`,
        [
          delivery.id,
          delivery.topic,
          delivery.key,
          JSON.stringify(delivery.payload),
          JSON.stringify(delivery.headers),
          attempts,
          error,
          delivery.enqueuedAt,
        ],
      );
      await enqueue(tx, {
        id: randomUUID(),
        topic: deadLetterTopic(delivery.topic),
        key: delivery.key,
        payload: delivery.payload as Json,
        headers: {
          ...delivery.headers,
          [DEAD_HEADERS.messageId]: delivery.id,
          [DEAD_HEADERS.consumer]: this.name,
          [DEAD_HEADERS.attempts]: String(attempts),
          [DEAD_HEADERS.error]: error.slice(0, 1000),
        },
      });
    });
  }
}

/** decode turns a Kafka message published by a relay into a delivery (attempt still unknown). */
function decode<P>(topic: string, message: KafkaMessage): Delivery<P> | undefined {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(message.headers ?? {})) {
    const last = Array.isArray(value) ? value.at(-1) : value;
    if (last !== undefined) headers[name] = Buffer.isBuffer(last) ? last.toString('utf8') : String(last);
  }
  const id = headers[MESSAGE_ID_HEADER];
  if (id === undefined || !UUID.test(id) || message.value === null) return undefined;
  let payload: P;
  try {
    // The producer wrote this payload for this topic; it is not re-validated here.
    payload = JSON.parse(message.value.toString('utf8')) as P;
  } catch {
    return undefined;
  }
  const enqueued = headers[ENQUEUED_AT_HEADER];
  delete headers[MESSAGE_ID_HEADER];
  delete headers[ENQUEUED_AT_HEADER];
  return {
    id,
    topic,
    key: message.key?.toString('utf8') ?? '',
    payload,
    headers,
    attempt: 0,
    enqueuedAt: new Date(enqueued ?? Number(message.timestamp)),
  };
}

/** countAttempt records one more delivery of `messageId` to `consumer` and returns the count. */
async function countAttempt(pool: Pool, consumer: string, messageId: string): Promise<number> {
  const { rows } = await pool.query<{ attempts: number }>(
    `INSERT INTO bus_deliveries (consumer, message_id, attempts) VALUES ($1, $2, 1)
     ON CONFLICT (consumer, message_id)
       DO UPDATE SET attempts = bus_deliveries.attempts + 1, updated_at = now()
     RETURNING attempts`,
    [consumer, messageId],
  );
  const attempts = rows[0]?.attempts;
  if (attempts === undefined) throw new Error('bus_deliveries returned no row');
  return attempts;
}

async function recordFailure(pool: Pool, consumer: string, messageId: string, error: string): Promise<void> {
  await pool.query(
    `UPDATE bus_deliveries SET last_error = $3, updated_at = now() WHERE consumer = $1 AND message_id = $2`,
    [consumer, messageId, error],
  );
}

/**
 * rebalanceError finds, in `err` or the errors it wraps (kafkajs wraps a request's last error
 * once its retries are spent), the broker's word that the group is rebalancing or moved on
 * without this member. Thrown from eachMessage, that error makes kafkajs rejoin the group.
 */
function rebalanceError(err: unknown): Error | undefined {
  for (let e = err; e instanceof Error; e = (e as { cause?: unknown }).cause) {
    const type = (e as { type?: unknown }).type;
    if (
      type === 'REBALANCE_IN_PROGRESS' ||
      type === 'NOT_COORDINATOR_FOR_GROUP' ||
      type === 'ILLEGAL_GENERATION'
    )
      return e;
  }
  return undefined;
}

/** isKafkaError tells a failure of a call to Kafka (kafkajs names its errors KafkaJS…) from others. */
function isKafkaError(err: unknown): boolean {
  return err instanceof Error && err.name.startsWith('KafkaJS');
}

function errorText(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.length > 4000 ? `${text.slice(0, 4000)}…` : text;
}
