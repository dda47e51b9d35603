/**
 * The bus contract shared by every transport: the message a consumer receives, the handler it
 * runs, the options that govern retries, and the transport interface itself.
 *
 * Producers never talk to a transport: they write an outbox row with `enqueue` (outbox.ts) in
 * the same transaction as the state change that causes the work. What moves the row to a
 * handler is the transport:
 *
 * - The Postgres transport (pg-transport.ts), the embedded default, is a queue on the outbox
 *   table itself: consumers claim due rows with `FOR UPDATE SKIP LOCKED` and a lease.
 * - The Kafka transport (kafka-transport.ts, kafkajs), chosen when `KAFKA_BROKERS` is set
 *   (transport.ts). A relay in each service claims pending outbox rows the same way, publishes
 *   each to the Kafka topic named by `topic` with `key` as the message key (so one key keeps its
 *   order in one partition), `id` and `headers` as Kafka headers, and marks the row done once the
 *   brokers acknowledged it. `consume` joins the consumer group named after
 *   `ConsumerOptions.name`; since Kafka delivers at least once, it dedupes through the same inbox
 *   table (`bus_inbox`, inbox.ts) and offers the same `ctx.inTx`. It retries with the same
 *   backoff while holding the partition, then parks a message that keeps failing as a dead row
 *   of the consuming service's outbox (so `listDead`/`requeue` in outbox.ts work on both
 *   transports) with a copy in the `<topic>.dead` topic.
 *
 * Delivery is at least once on every transport. A handler must therefore be idempotent: either
 * its effect is only in this service's database and done through `ctx.inTx` (exactly once), or
 * the remote call it makes carries an idempotency key derived from the message id.
 */
import type { PoolClient } from '../db.ts';

/** Any value that survives a round trip through `jsonb`. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** What a producer writes to the outbox. */
export interface OutgoingMessage {
  /** Routing name: a Kafka topic, or the queue name in the Postgres transport. */
  topic: string;
  /** Ordering and partitioning key (for example the change id). */
  key: string;
  payload: Json;
  /** Small string metadata; `x-request-id` is filled from the current request when absent. */
  headers?: Record<string, string>;
  /**
   * A caller-chosen message id (a uuid). Enqueuing the same id twice stores one message, so a
   * producer that retries is idempotent; see `deterministicId`.
   */
  id?: string;
  /** Delivered no sooner than this many milliseconds after the enqueuing transaction (default 0). */
  delayMs?: number;
}

/** A message as a handler receives it. `P` is what the producer wrote; it is not re-validated. */
export interface Delivery<P = Json> {
  id: string;
  topic: string;
  key: string;
  payload: P;
  headers: Record<string, string>;
  /** 1 on the first delivery; counts claims, so a consumer that died mid-handler used one. */
  attempt: number;
  enqueuedAt: Date;
}

/** What a handler gets beside the message. */
export interface HandlerContext {
  /**
   * inTx runs `fn` in a transaction on the service's pool that also records this message in the
   * consumer's inbox. Either both commit or neither does, so a handler's own database effect
   * happens exactly once even when the message is delivered twice (a consumer that died, froze or
   * lost its database connection mid-handler and whose lease lapsed, a Kafka redelivery).
   *
   * When another delivery already recorded the message, `fn`'s work is rolled back and inTx
   * throws `AlreadyProcessedError`; let it propagate: the consumer treats it as success. Call
   * inTx at most once per delivery, as the last step that matters: a handler that fails after
   * its inTx committed is not run again (the inbox says the message is done).
   */
  inTx<T>(fn: (client: PoolClient) => Promise<T>): Promise<T>;
  /**
   * Aborted when this consumer no longer holds the message, so another may be running it: a
   * lease renewal found the claim taken (by another consumer, after renewals failed long enough
   * for the lease to lapse), or renewals kept failing until the lease ran out. Also aborted when
   * the consumer stops and gives up waiting for the handler. A handler that merely runs long is
   * not aborted: its lease is renewed while it runs. On Kafka: aborted when this consumer left
   * its group while the handler ran (its partitions went to another member), or when it stops
   * and gives up waiting. Pass it to `fetch` and friends.
   */
  signal: AbortSignal;
}

/** A handler resolves when the message is handled; throwing schedules a retry. */
export type Handler<P = Json> = (message: Delivery<P>, ctx: HandlerContext) => Promise<void>;

/**
 * Why a message is given up: its last attempt threw (`failed`, with what it threw), or its last
 * attempt never reported back (`abandoned`: the consumer died, was killed or stopped while the
 * handler ran, so whatever the handler had done by then is not known).
 */
export type GiveUpReason = { kind: 'failed'; error: unknown } | { kind: 'abandoned'; detail: string };

/**
 * A consumer's give-up path: runs once a message is past its last attempt, before it is parked as
 * dead, so that what the message was doing is brought to an end (a change marked failed, with
 * what is known of its outcome) instead of being left half-done. It gets the same context as the
 * handler: record its effect through `ctx.inTx`. Throwing keeps the message: the give-up path is
 * run again after a backoff (on the next claim), until it succeeds.
 */
export type GiveUp<P = Json> = (
  message: Delivery<P>,
  ctx: HandlerContext,
  reason: GiveUpReason,
) => Promise<void>;

/** Exponential backoff: `min(capMs, baseMs * 2^(attempt-1))`, then jittered into its upper half. */
export interface BackoffOptions {
  baseMs: number;
  capMs: number;
}

export interface ConsumerOptions<P = Json> {
  /**
   * Names the logical consumer: its inbox rows and, on Kafka, its consumer group. Every process
   * that runs the same consumer uses the same name.
   */
  name: string;
  topic: string;
  handler: Handler<P>;
  /**
   * Handlers running at once in this process (default 1). On Kafka: partitions handled at once,
   * each one message at a time, so one key's messages never run side by side.
   */
  concurrency?: number;
  /**
   * No two messages of one key run at once, across every process of this consumer (default
   * false), as graphile-worker's named queues: a key whose message is running waits, the other
   * keys go on. PostgreSQL: a claim skips a key with a running message whose lease holds (a lapsed
   * lease frees its key with its message), claims of the topic taking turns under a lock held for
   * the claim's transaction only. Kafka: always so (one key, one partition, one message of a
   * partition at a time); only a rebalance while a handler runs on after its member was dropped
   * can overlap it, as a lapsed lease can on PostgreSQL.
   */
  serialByKey?: boolean;
  /** Deliveries before a message is given up and parked as dead (default 10). */
  maxAttempts?: number;
  /** Runs when a message is past its last attempt, before it is parked as dead (see GiveUp). */
  giveUp?: GiveUp<P>;
  /** Default `{ baseMs: 1000, capMs: 300_000 }`. */
  backoff?: BackoffOptions;
  /**
   * How long a claim keeps a message from other consumers without renewal (default 60 s). While
   * the handler runs, the consumer renews it every `leaseMs / 3`, so a handler may run longer
   * than this and is still not run elsewhere. A consumer that dies stops renewing: this is how
   * long its messages wait before another consumer takes them over, and how long renewals may
   * fail (the database unreachable) before the handler's signal is aborted. Postgres transport
   * only: on Kafka the consumer group's session timeout plays this part.
   */
  leaseMs?: number;
  /** How often to look for due messages when no notification arrives (default 5 s; Postgres transport only). */
  pollIntervalMs?: number;
  /**
   * How long a busy consumer (a handler running, under a quarter of its slots free) waits for
   * more slots to free before it claims (default 0: it claims as each slot frees). A claim is a
   * transaction of its own, and a serial-by-key one waits its turn behind the topic's others: a
   * consumer of many short handlers then claims several messages at a time, not one each, for this
   * much more wait before a message starts. An idle consumer claims at once. Postgres transport
   * only: Kafka fetches in batches anyway.
   */
  claimGatherMs?: number;
  /** How long `stop` waits for running handlers before abandoning them (default 10 s). */
  stopTimeoutMs?: number;
  /** Source of jitter in [0, 1); tests pass `() => 1` for the full delay. */
  random?: () => number;
}

/** A running consumer. */
export interface Consumer {
  /**
   * stop takes no new messages, waits up to `stopTimeoutMs` for running handlers, then aborts
   * the rest; their leases lapse and another consumer retries them (on Kafka: their offsets stay
   * uncommitted, and the group's next owner of the partition retries them).
   */
  stop(): Promise<void>;
}

/** What every bus transport provides. */
export interface BusTransport {
  /** consume starts a consumer; it resolves once the consumer listens for new messages. */
  consume<P = Json>(options: ConsumerOptions<P>): Promise<Consumer>;
  /** stop stops every consumer started here and releases the transport's connections. */
  stop(): Promise<void>;
}

/**
 * The header carrying the producing request's id (the same name as the Connect request header);
 * the handler runs with it as the current request id, so its logs join the request's.
 */
export const REQUEST_ID_HEADER = 'x-request-id';

/** Thrown by `inTx` when the message is already in the consumer's inbox. */
export class AlreadyProcessedError extends Error {
  constructor(
    readonly consumer: string,
    readonly messageId: string,
  ) {
    super(`message ${messageId} was already processed by ${consumer}`);
    this.name = 'AlreadyProcessedError';
  }
}

/** backoffDelay is the wait before the retry that follows failed delivery number `attempt`. */
export function backoffDelay(
  attempt: number,
  { baseMs, capMs }: BackoffOptions,
  random: () => number,
): number {
  const full = Math.min(capMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(full / 2 + (full / 2) * random());
}
