/**
 * The Postgres transport: a queue on the outbox table itself, the embedded default for one
 * machine.
 *
 * A consumer claims due rows of its topic in one short statement (`FOR UPDATE SKIP LOCKED`,
 * status `running`, a lease in `locked_until`, a claim token in `locked_by`), runs the handler
 * outside any transaction (it may call remote APIs for as long as it needs), then marks the row
 * done, or schedules a retry with backoff, or parks it as dead. A handler that records its effect
 * with `ctx.inTx` has the row marked done in that same transaction (under serialByKey its key is
 * free from that commit). While the handler runs, the
 * consumer renews the lease every third of `leaseMs` (a heartbeat: one UPDATE that only matches
 * while the row is still `running` under this claim's token), so a slow handler keeps its
 * message. A consumer that dies mid-handler stops renewing and leaves its rows `running`; once
 * the lease lapses any consumer claims them again, so delivery is at least once and handlers
 * must be idempotent (see `HandlerContext.inTx`). While a lease holds, no other consumer, in
 * this process or another, can claim the row. Order is best effort by insertion.
 *
 * Each row is handled once, by whichever process claims it: one logical consumer per topic.
 * Two consumers with different names on the same topic would split its messages between them,
 * not each get all of them (that is Kafka's consumer groups; here, use a topic per consumer).
 *
 * Consumers wake on `NOTIFY bus_outbox` (sent by a trigger when a message becomes due), on a
 * timer for retries they scheduled, and on a polling interval that also finds expired leases
 * and retries scheduled by other processes.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
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
import { inInboxTransaction } from './inbox.ts';
import { Listener } from './listener.ts';
import { type Rounds, rounds } from './rounds.ts';

export interface PgTransportDeps {
  /** The service's pool (search_path at the schema holding the bus tables). */
  pool: Pool;
  logger: Logger;
  /** Wait before re-establishing a LISTEN connection that broke (default 1 s). */
  reconnectDelayMs?: number;
}

/**
 * createPgTransport returns a transport whose consumers share one LISTEN connection, taken from
 * `pool` on the first `consume` and given back (closed) by `stop`.
 */
export function createPgTransport({ pool, logger, reconnectDelayMs = 1000 }: PgTransportDeps): BusTransport {
  const listener = new Listener(pool, logger, reconnectDelayMs);
  const consumers = new Set<Consumer>();
  let stopped = false;
  return {
    async consume<P = Json>(options: ConsumerOptions<P>): Promise<Consumer> {
      if (stopped) throw new Error('bus transport is stopped');
      await listener.start();
      if (stopped) throw new Error('bus transport is stopped');
      const consumer = new PgConsumer<P>(pool, logger, listener, options);
      consumer.start();
      consumers.add(consumer);
      return consumer;
    },
    async stop() {
      stopped = true;
      await Promise.all([...consumers].map((c) => c.stop()));
      consumers.clear();
      listener.stop();
    },
  };
}

interface OutboxRow {
  id: string;
  seq: number;
  topic: string;
  key: string;
  payload: unknown;
  headers: Record<string, string>;
  attempts: number;
  created_at: Date;
  /** This claim's token: a later claim of the same row (after the lease lapsed) has another. */
  locked_by: string;
  /** Whether the consumer's inbox held the message when it was claimed (it was handled, and not marked done). */
  processed: boolean;
}

interface InFlight {
  id: string;
  done: Promise<void>;
  lease: LeaseKeeper;
}

/** How soon a consumer whose claim failed (the database away, say) looks again. */
const CLAIM_RETRY_MS = 1000;

const DEFAULTS = {
  concurrency: 1,
  maxAttempts: 10,
  backoff: { baseMs: 1000, capMs: 300_000 },
  leaseMs: 60_000,
  pollIntervalMs: 5000,
  stopTimeoutMs: 10_000,
  serialByKey: false,
  claimGatherMs: 0,
};

/** How many of a key group's first due messages a serial-by-key claim reads, per message it may claim. */
const CANDIDATES_PER_CLAIMED = 4;
/** And how many more, so that a claim of one still sees past a few messages of one key. */
const CANDIDATES_MORE = 32;

/** The due rows of topic $1, oldest first, at most $2, skipping those another claim holds. */
const DUE = `SELECT id FROM bus_outbox
   WHERE topic = $1
     AND ((status = 'pending' AND run_at <= now()) OR (status = 'running' AND locked_until <= now()))
   ORDER BY seq
   LIMIT $2
   FOR UPDATE SKIP LOCKED`;

/**
 * DUE for `serialByKey`: the oldest due row of each key that has no message running under a live
 * lease, at most $2 of them. A row whose lease lapsed is due again and no longer holds its key.
 *
 * Taken in turns by key group (the part of the key before its first space; a key without one is
 * its own group): the group with the fewest messages running goes first, then the oldest message.
 * So a group with a long backlog (one ad account's thousand applies) cannot fill every handler
 * slot while another group's messages wait behind it: each group's work goes on at once, at its
 * own pace. Keys without a space keep insertion order.
 *
 * The statement every claim of the topic waits its turn for, so it is kept cheap on a backlog of
 * thousands: keys are compared in the "C" collation (bytes; only their equality matters here), as
 * sorting them in the database's linguistic collation took ten times as long; and the keys running
 * are read once and looked up by hash (NOT IN a small materialized set), where the planner, with
 * statistics from before a burst of messages, chose to scan the topic's index again for every
 * due row: 4 s for 3,000 messages instead of 14 ms.
 *
 * And it reads only the first messages of each group, not the backlog: the groups with messages
 * waiting are found by skipping through an index of them (bus migration 0004; one descent per
 * group), and each group gives its first due messages of keys not running, at most
 * CANDIDATES_PER_CLAIMED times the claim's limit and CANDIDATES_MORE more. Reading every due
 * message made each claim cost more the longer the backlog (10,000 queued applies: 23 to 40 ms a
 * claim, where claims of the topic wait for one another; `npm run bench:claim`). The choice is
 * the same as from the whole backlog: a group's first due messages hold the first message of each
 * of their keys, in the group's order, so a key's first message is always a candidate when it is
 * among the group's first; and a group whose candidates hold at least the limit's number of keys
 * has its claimed messages among them. Only a group whose first candidates are mostly later
 * messages of a few keys gives fewer keys than it has, until those drain: slower, never out of
 * order.
 */
const DUE_ONE_PER_FREE_KEY = `WITH RECURSIVE running AS MATERIALIZED (
       SELECT key COLLATE "C" AS key FROM bus_outbox
        WHERE topic = $1 AND status = 'running' AND locked_until > now()
     ),
     groups AS (
       (SELECT split_part(key, ' ', 1) COLLATE "C" AS grp FROM bus_outbox
         WHERE topic = $1 AND status IN ('pending', 'running')
         ORDER BY split_part(key, ' ', 1) COLLATE "C" LIMIT 1)
       UNION ALL
       SELECT (SELECT split_part(o.key, ' ', 1) COLLATE "C" FROM bus_outbox o
                WHERE o.topic = $1 AND o.status IN ('pending', 'running')
                  AND split_part(o.key, ' ', 1) COLLATE "C" > g.grp
                ORDER BY split_part(o.key, ' ', 1) COLLATE "C" LIMIT 1)
         FROM groups g WHERE g.grp IS NOT NULL
     ),
     candidates AS (
       SELECT c.id, c.seq, c.key, g.grp FROM groups g CROSS JOIN LATERAL (
         SELECT o.id, o.seq, o.key COLLATE "C" AS key FROM bus_outbox o
          WHERE o.topic = $1 AND o.status IN ('pending', 'running')
            AND split_part(o.key, ' ', 1) COLLATE "C" = g.grp
            AND ((o.status = 'pending' AND o.run_at <= now()) OR (o.status = 'running' AND o.locked_until <= now()))
            AND o.key COLLATE "C" NOT IN (SELECT key FROM running)
          ORDER BY o.seq
          LIMIT $2::int * ${CANDIDATES_PER_CLAIMED} + ${CANDIDATES_MORE}) c
        WHERE g.grp IS NOT NULL
     )
   SELECT id FROM bus_outbox
   WHERE id = ANY (ARRAY(
     SELECT id FROM (
       SELECT f.id, f.seq,
              row_number() OVER (PARTITION BY f.grp ORDER BY f.seq) + coalesce(busy.n, 0) AS turn
         FROM (SELECT DISTINCT ON (key) id, seq, grp FROM candidates ORDER BY key, seq) f
         LEFT JOIN (SELECT split_part(key, ' ', 1) AS grp, count(*) AS n FROM running GROUP BY 1) busy
           ON busy.grp = f.grp
     ) first_of_key
     ORDER BY turn, seq
     LIMIT $2::int))
   FOR UPDATE SKIP LOCKED`;

/**
 * Whether the key has a message due that is not running (`topic` and `key` are SQL expressions). The key's rows are read by the
 * key's index and only then filtered by status (OFFSET 0 keeps the filter out of the scan): with
 * statistics from before a burst of messages, the planner otherwise took a partial index of the due
 * messages and filtered the whole backlog by key, 0.8 ms with 3,000 queued instead of 0.01.
 */
const keyWaiting = (topic: string, key: string) => `SELECT 1 FROM (
     SELECT o.status, o.run_at FROM bus_outbox o WHERE o.topic = ${topic} AND o.key = ${key} OFFSET 0) k
   WHERE k.status = 'pending' AND k.run_at <= now()`;

/**
 * The message $1 done, in its handler's transaction, and when $2 (serialByKey) a notification that
 * its key's next message may be claimed, should one wait (doneInTransaction).
 */
const DONE_IN_TRANSACTION = `WITH done AS (
     UPDATE bus_outbox SET status = 'done', locked_by = NULL, locked_until = NULL, updated_at = now()
      WHERE id = $1 AND status <> 'done'
     RETURNING topic, key)
   SELECT pg_notify('bus_outbox', json_build_object('schema', current_schema(), 'topic', d.topic)::text)
     FROM done d
    WHERE $2::boolean AND EXISTS (${keyWaiting('d.topic', 'd.key')})`;

/**
 * A serial-by-key claim as the consumer sends it ($1 topic, $2 limit, $3 token, $4 lease ms, $5 the
 * consumer), for the benchmark that times it against the backlog (bench/bus-claim.ts).
 */
export function serialClaimStatement(): string {
  return claimSql(DUE_ONE_PER_FREE_KEY);
}

/**
 * Claims the rows `due` selects for consumer $5: running, under a lease of $4 ms, token $3; each
 * row says whether the consumer's inbox already holds it, read in the claim rather than in a
 * statement of its own before each handler (a message is rarely there: handled, then not marked
 * done, its process killed between the two).
 */
function claimSql(due: string): string {
  return `WITH due AS (${due})
       UPDATE bus_outbox o
          SET status = 'running', attempts = o.attempts + 1, locked_by = $3,
              locked_until = now() + $4 * interval '1 millisecond', updated_at = now()
         FROM due
        WHERE o.id = due.id
       RETURNING o.id, o.seq, o.topic, o.key, o.payload, o.headers, o.attempts, o.created_at, o.locked_by,
                 EXISTS (SELECT 1 FROM bus_inbox i WHERE i.consumer = $5 AND i.message_id = o.id) AS processed`;
}

/**
 * The claims as the consumers send them: named, so that each connection parses and plans them once
 * (a serial-by-key claim took 1.6 ms unnamed and 0.95 prepared, at 3,000 messages queued; its plan
 * stays the same whatever the backlog, and whatever the statistics say of it).
 */
const CLAIM = claimSql(DUE);
const CLAIM_ONE_PER_FREE_KEY = claimSql(DUE_ONE_PER_FREE_KEY);

class PgConsumer<P> implements Consumer {
  private readonly name: string;
  private readonly topic: string;
  private readonly opts: Required<Omit<ConsumerOptions<P>, 'name' | 'topic' | 'giveUp'>> &
    Pick<ConsumerOptions<P>, 'giveUp'>;
  private readonly log: Logger;
  private running = false;
  private readonly rounds: Rounds = rounds(
    () => this.claimRound(),
    () => this.running,
    (err) => {
      this.log.error({ err }, 'bus claim failed');
      // Tried again shortly, not only at the next notification or poll.
      this.wakeLater(Math.min(CLAIM_RETRY_MS, this.opts.pollIntervalMs));
    },
  );
  private pollTimer: NodeJS.Timeout | undefined;
  private nextDueTimer: NodeJS.Timeout | undefined;
  private readonly retryTimers = new Set<NodeJS.Timeout>();
  private readonly inFlight = new Set<InFlight>();
  private unsubscribe: (() => void) | undefined;
  private stopping: Promise<void> | undefined;

  constructor(
    private readonly pool: Pool,
    logger: Logger,
    private readonly listener: Listener,
    options: ConsumerOptions<P>,
  ) {
    this.name = options.name;
    this.topic = options.topic;
    this.opts = {
      handler: options.handler,
      giveUp: options.giveUp,
      concurrency: options.concurrency ?? DEFAULTS.concurrency,
      maxAttempts: options.maxAttempts ?? DEFAULTS.maxAttempts,
      backoff: options.backoff ?? DEFAULTS.backoff,
      leaseMs: options.leaseMs ?? DEFAULTS.leaseMs,
      pollIntervalMs: options.pollIntervalMs ?? DEFAULTS.pollIntervalMs,
      stopTimeoutMs: options.stopTimeoutMs ?? DEFAULTS.stopTimeoutMs,
      serialByKey: options.serialByKey ?? DEFAULTS.serialByKey,
      claimGatherMs: options.claimGatherMs ?? DEFAULTS.claimGatherMs,
      random: options.random ?? Math.random,
    };
    this.log = logger.child({ consumer: this.name, topic: this.topic });
  }

  start(): void {
    this.running = true;
    this.unsubscribe = this.listener.subscribe(this.topic, () => this.rounds.wake());
    this.pollTimer = setInterval(() => this.rounds.wake(), this.opts.pollIntervalMs);
    this.rounds.wake();
  }

  stop(): Promise<void> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  private async shutdown(): Promise<void> {
    this.running = false;
    this.unsubscribe?.();
    clearInterval(this.pollTimer);
    clearTimeout(this.nextDueTimer);
    for (const t of this.retryTimers) clearTimeout(t);
    this.retryTimers.clear();
    // A claim in progress may still hand us rows; they join inFlight and are waited for below.
    await this.rounds.settled();
    if (this.inFlight.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = await Promise.race([
      Promise.all([...this.inFlight].map((f) => f.done)).then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), this.opts.stopTimeoutMs);
      }),
    ]);
    clearTimeout(timer);
    if (gaveUp) {
      const ids = [...this.inFlight].map((f) => f.id);
      this.log.warn({ ids }, 'bus consumer stopped with handlers still running; their leases will lapse');
      // Aborting also stops the heartbeats, so these leases lapse as if this process had died.
      for (const f of this.inFlight) f.lease.abort(new Error('bus consumer stopped'));
    }
  }

  /**
   * With claimGatherMs, a busy consumer with under a quarter of its slots free waits that long
   * before it claims, for more slots to free: one claim then starts several messages.
   */
  private async gather(): Promise<void> {
    const { concurrency, claimGatherMs } = this.opts;
    if (claimGatherMs <= 0 || this.inFlight.size === 0) return;
    if (concurrency - this.inFlight.size >= Math.ceil(concurrency / 4)) return;
    await sleep(claimGatherMs);
  }

  /** One round: claims due messages until there are none or every handler slot is taken. */
  private async claimRound(): Promise<void> {
    while (this.running && this.inFlight.size < this.opts.concurrency) {
      await this.gather();
      if (!this.running) break;
      // Sent before the claim, so the lease it sets in the database ends no earlier than this.
      const claimedAt = Date.now();
      const rows = await this.claim(this.opts.concurrency - this.inFlight.size);
      this.log.debug({ claimed: rows.length }, 'bus claim');
      for (const row of rows) this.begin(row, claimedAt);
      if (rows.length === 0) {
        await this.wakeAtNextDue();
        break;
      }
    }
  }

  /**
   * A message enqueued for later (`delayMs`) sends no notification when it comes due: the
   * consumer wakes at the time of the first one, when that is before its next poll.
   */
  private async wakeAtNextDue(): Promise<void> {
    // Measured on the database's clock, as the retry timers are (scheduleRetry).
    const { rows } = await this.pool.query<{ wait_ms: number | null }>(
      `SELECT ceil(extract(epoch FROM min(run_at) - clock_timestamp()) * 1000)::int AS wait_ms
         FROM bus_outbox WHERE topic = $1 AND status = 'pending' AND run_at > now()`,
      [this.topic],
    );
    const waitMs = rows[0]?.wait_ms;
    if (waitMs === null || waitMs === undefined || waitMs >= this.opts.pollIntervalMs || !this.running)
      return;
    clearTimeout(this.nextDueTimer);
    this.nextDueTimer = setTimeout(() => this.rounds.wake(), Math.max(0, waitMs) + 1);
  }

  private async claim(limit: number): Promise<OutboxRow[]> {
    const params = [this.topic, limit, randomUUID(), this.opts.leaseMs, this.name];
    if (!this.opts.serialByKey) {
      const { rows } = await this.pool.query<OutboxRow>({ name: 'bus-claim', text: CLAIM, values: params });
      return rows.sort((a, b) => a.seq - b.seq);
    }
    return inTransaction(this.pool, async (tx) => {
      // The claims of one topic take turns: each statement then sees, in its own snapshot, every
      // key the claim before it set running (read committed), so two consumers never both take
      // one key. Held for this short transaction only, never while a handler runs.
      await tx.query({
        name: 'bus-claim-turn',
        text: 'SELECT pg_advisory_xact_lock(hashtextextended($1, 0))',
        values: [`bus-claim ${this.topic}`],
      });
      const { rows } = await tx.query<OutboxRow>({
        name: 'bus-claim-serial',
        text: CLAIM_ONE_PER_FREE_KEY,
        values: params,
      });
      return rows.sort((a, b) => a.seq - b.seq);
    });
  }

  private begin(row: OutboxRow, claimedAt: number): void {
    const log = this.log.child({ message_id: row.id, attempt: row.attempts });
    const lease = new LeaseKeeper(this.pool, row, this.opts.leaseMs, claimedAt, log);
    const entry: InFlight = { id: row.id, lease, done: Promise.resolve() };
    entry.done = this.handle(row, lease, log).then((announced) => {
      lease.release();
      this.inFlight.delete(entry);
      this.rounds.wake();
      if (this.opts.serialByKey && !announced) void this.announceKeyFree(row, log);
    });
    this.inFlight.add(entry);
  }

  /**
   * Under serialByKey, a message of this key that waited while this one ran is due now: the
   * consumers of every process are told (as the trigger tells them of a new message), so one that
   * has a free slot claims it at once, not at its next poll. Best effort: the poll still finds it.
   */
  private async announceKeyFree(row: OutboxRow, log: Logger): Promise<void> {
    try {
      await this.pool.query(
        `SELECT pg_notify('bus_outbox', json_build_object('schema', current_schema(), 'topic', $1::text)::text)
          WHERE EXISTS (${keyWaiting('$1', '$2')})`,
        [row.topic, row.key],
      );
    } catch (err) {
      log.warn({ err }, 'bus could not announce a free key; its next message waits for the poll');
    }
  }

  /**
   * handle runs the handler for one claimed row and records the outcome; it never rejects. It
   * resolves true when the message was marked done in its handler's transaction, which also
   * announced its key's next message.
   */
  private async handle(row: OutboxRow, lease: LeaseKeeper, log: Logger): Promise<boolean> {
    try {
      if (row.processed) {
        await this.markDone(row);
        return false;
      }
    } catch (err) {
      log.error({ err }, 'bus bookkeeping failed; the message is retried when its lease lapses');
      return false;
    }
    if (row.attempts > this.opts.maxAttempts) {
      // Its last attempt never reported back (the consumer died or stopped mid-handler).
      const detail = `lease expired on attempt ${row.attempts - 1} before the handler finished`;
      await this.giveUp(row, lease, log, { kind: 'abandoned', detail }, detail);
      return false;
    }

    let failure: unknown;
    let failed = false;
    const handled = { done: false };
    try {
      await this.run(row, lease.signal, this.opts.handler, handled);
    } catch (err) {
      if (!(err instanceof AlreadyProcessedError)) {
        failed = true;
        failure = err;
      }
    }
    // The handler has settled: no more heartbeats. The outcome below only lands while the claim
    // is still ours (or, for done, whoever's it is).
    lease.release();

    // Its inTx committed the message done with its effect (doneInTransaction): nothing is left to
    // record, and a handler that failed after it is not run again (the inbox has the message).
    if (handled.done) {
      if (failed)
        log.warn({ err: failure }, 'bus handler failed after its transaction committed; the message is done');
      return true;
    }
    if (failed && row.attempts >= this.opts.maxAttempts) {
      await this.giveUp(row, lease, log, { kind: 'failed', error: failure }, errorText(failure));
      return false;
    }
    try {
      if (!failed) {
        await this.markDone(row);
      } else {
        const delayMs = backoffDelay(row.attempts, this.opts.backoff, this.opts.random);
        await this.scheduleRetry(row, errorText(failure), delayMs);
        log.warn({ err: failure, delay_ms: delayMs }, 'bus handler failed; retrying later');
      }
    } catch (err) {
      log.error({ err }, 'bus bookkeeping failed; the message is retried when its lease lapses');
    }
    return false;
  }

  /**
   * giveUp runs the consumer's give-up path for a message past its last attempt, then parks it as
   * dead with `error`. A give-up path that fails keeps the message: it is retried after a backoff,
   * and the next claim, past the last attempt again, runs the give-up path again.
   */
  private async giveUp(
    row: OutboxRow,
    lease: LeaseKeeper,
    log: Logger,
    reason: GiveUpReason,
    error: string,
  ): Promise<void> {
    const giveUp = this.opts.giveUp;
    try {
      if (giveUp !== undefined) {
        try {
          await this.run(row, lease.signal, (message, ctx) => giveUp(message, ctx, reason));
        } catch (err) {
          if (!(err instanceof AlreadyProcessedError)) {
            lease.release();
            const delayMs = backoffDelay(row.attempts, this.opts.backoff, this.opts.random);
            await this.scheduleRetry(row, `${error} (its give-up path failed: ${errorText(err)})`, delayMs);
            log.error({ err, delay_ms: delayMs }, 'bus give-up path failed; trying it again later');
            return;
          }
        }
      }
      lease.release();
      await this.markDead(row, error);
      log.error({ reason: error }, 'bus message given up and parked as dead');
    } catch (err) {
      log.error({ err }, 'bus bookkeeping failed; the message is retried when its lease lapses');
    }
  }

  /**
   * Runs `fn` on the message. With `handled` (the handler, not the give-up path, whose message is
   * parked dead instead), its inTx also marks the message done in the same transaction, and sets
   * `handled.done` once that committed.
   */
  private run(
    row: OutboxRow,
    signal: AbortSignal,
    fn: Handler<P>,
    handled?: { done: boolean },
  ): Promise<void> {
    const delivery: Delivery<P> = {
      id: row.id,
      topic: row.topic,
      key: row.key,
      // The producer wrote this payload for this topic; it is not re-validated here.
      payload: row.payload as P,
      headers: row.headers,
      attempt: row.attempts,
      enqueuedAt: row.created_at,
    };
    const ctx: HandlerContext = {
      signal,
      inTx: async (f) => {
        if (handled === undefined) return inInboxTransaction(this.pool, this.name, row.id, f);
        const result = await inInboxTransaction(this.pool, this.name, row.id, async (client) => {
          const value = await f(client);
          await this.doneInTransaction(client, row);
          return value;
        });
        handled.done = true;
        return result;
      },
    };
    const requestId = row.headers[REQUEST_ID_HEADER];
    const call = () => consumeInSpan(this.name, delivery, () => fn(delivery, ctx));
    return requestId === undefined ? call() : withRequestId(requestId, call);
  }

  /**
   * Marks the message done in the transaction of the handler's effect, its inbox transaction: a
   * statement and a round trip fewer per message than marking it after the commit, and the
   * message is never left running once its effect has committed. Under serialByKey, a message of
   * the same key that waited is announced in the same statement (a notification is sent at the
   * commit, when the key is free), as announceKeyFree does otherwise.
   */
  private async doneInTransaction(client: PoolClient, row: OutboxRow): Promise<void> {
    await client.query({
      name: 'bus-done-in-tx',
      text: DONE_IN_TRANSACTION,
      values: [row.id, this.opts.serialByKey],
    });
  }

  // Done wins whoever reports it: the handler's work is complete even if our lease lapsed.
  private async markDone(row: OutboxRow): Promise<void> {
    await this.pool.query(
      `UPDATE bus_outbox
          SET status = 'done', locked_by = NULL, locked_until = NULL, updated_at = now()
        WHERE id = $1 AND status <> 'done'`,
      [row.id],
    );
  }

  // Failures only count while we still hold the claim; otherwise another consumer owns the row.
  private async scheduleRetry(row: OutboxRow, error: string, delayMs: number): Promise<void> {
    // The wait is measured on the database's clock, from the end of the statement to run_at, and
    // rounded up: a timer of the bare delay could fire before the row is due by that clock (node's
    // timers count whole milliseconds from a truncated start; the database may run on another
    // host), find nothing to claim, and leave the retry to the next poll.
    const { rows } = await this.pool.query<{ wait_ms: number }>(
      `UPDATE bus_outbox
          SET status = 'pending', run_at = now() + $3 * interval '1 millisecond', last_error = $4,
              locked_by = NULL, locked_until = NULL, updated_at = now()
        WHERE id = $1 AND status = 'running' AND locked_by = $2
        RETURNING greatest(0, ceil(extract(epoch FROM run_at - clock_timestamp()) * 1000))::int AS wait_ms`,
      [row.id, row.locked_by, delayMs, error],
    );
    const waitMs = rows[0]?.wait_ms;
    // One more millisecond for the timer's own truncation.
    if (waitMs !== undefined) this.wakeLater(waitMs + 1);
  }

  /** Wakes the consumer after `ms`, unless it stops first. */
  private wakeLater(ms: number): void {
    if (!this.running) return;
    const timer = setTimeout(() => {
      this.retryTimers.delete(timer);
      this.rounds.wake();
    }, ms);
    this.retryTimers.add(timer);
  }

  private async markDead(row: OutboxRow, error: string): Promise<void> {
    await this.pool.query(
      `UPDATE bus_outbox
          SET status = 'dead', last_error = $3, locked_by = NULL, locked_until = NULL, updated_at = now()
        WHERE id = $1 AND status = 'running' AND locked_by = $2`,
      [row.id, row.locked_by, error],
    );
  }
}

/**
 * LeaseKeeper holds one claim while its handler runs: it renews the lease every `leaseMs / 3`
 * and aborts `signal` when the claim is lost (a renewal matched no row: the message was claimed
 * by another consumer, or is no longer running) or when the lease runs out because renewals kept
 * failing. It stops renewing once released or aborted.
 */
class LeaseKeeper {
  private readonly controller = new AbortController();
  readonly signal = this.controller.signal;
  private readonly beatMs: number;
  private beatTimer: NodeJS.Timeout | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;
  private released = false;

  constructor(
    private readonly pool: Pool,
    private readonly row: OutboxRow,
    private readonly leaseMs: number,
    claimedAt: number,
    private readonly log: Logger,
  ) {
    this.beatMs = Math.max(1, Math.floor(leaseMs / 3));
    this.expireAt(claimedAt + leaseMs);
    this.scheduleBeat(claimedAt + this.beatMs);
  }

  /** release stops renewing (the handler settled); the signal is left as it is. */
  release(): void {
    this.released = true;
    clearTimeout(this.beatTimer);
    clearTimeout(this.expiryTimer);
  }

  /** abort gives the claim up: renewals stop and the handler is told through its signal. */
  abort(reason: Error): void {
    this.release();
    this.controller.abort(reason);
  }

  private get active(): boolean {
    return !this.released && !this.signal.aborted;
  }

  /** expireAt aborts the signal at `at` (local clock) unless a renewal moves it later first. */
  private expireAt(at: number): void {
    clearTimeout(this.expiryTimer);
    this.expiryTimer = setTimeout(
      () => this.abort(new Error('bus lease expired; the message may be redelivered')),
      Math.max(0, at - Date.now()),
    );
  }

  private scheduleBeat(at: number): void {
    this.beatTimer = setTimeout(() => void this.beat(), Math.max(0, at - Date.now()));
  }

  private async beat(): Promise<void> {
    this.beatTimer = undefined;
    if (!this.active) return;
    const sentAt = Date.now();
    let renewed: boolean;
    try {
      const { rowCount } = await this.pool.query(
        `UPDATE bus_outbox SET locked_until = now() + $3 * interval '1 millisecond'
          WHERE id = $1 AND status = 'running' AND locked_by = $2`,
        [this.row.id, this.row.locked_by, this.leaseMs],
      );
      renewed = rowCount === 1;
    } catch (err) {
      if (!this.active) return;
      // The lease still runs out on time if renewals keep failing; the next beat tries again.
      this.log.warn({ err }, 'bus lease renewal failed');
      this.scheduleBeat(sentAt + this.beatMs);
      return;
    }
    if (!this.active) return;
    if (!renewed) {
      this.log.warn('bus lease lost: the message was claimed by another consumer or is no longer running');
      this.abort(new Error('bus lease lost; another consumer may be handling the message'));
      return;
    }
    // Set by the database at or after sentAt, so the lease it holds ends no earlier than this.
    this.expireAt(sentAt + this.leaseMs);
    this.scheduleBeat(sentAt + this.beatMs);
  }
}

function errorText(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.length > 4000 ? `${text.slice(0, 4000)}…` : text;
}
