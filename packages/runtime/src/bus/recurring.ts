/**
 * A recurring job on the bus: one message per period of `everyMs` (a tick), run by one process of
 * the service, which does the job and then enqueues the tick of the next period, delivered at its
 * time (`delayMs`). Where a timer in every process looked for due work on its own, the service
 * now looks once a period, one process at a time (the consumer's `serialByKey` on the one key of
 * the ticks), and a process that stops or dies does not stop the schedule: its tick is run by
 * another process once its lease lapses.
 *
 * A tick's id is its period, so the ticks every process enqueues at start, and the next tick
 * enqueued by a tick run twice, are one message. The next tick is the period after the current
 * one, so after a pause the schedule resumes at once without running the periods it missed; and
 * always after the tick's own period, even when the tick arrives before its period by this
 * process's clock. It can: its delay is measured from the start of the transaction that enqueued
 * it, and the database's clock may run ahead of the service's. A tick that enqueued "the period
 * after the current one" then enqueued itself, which is already there, and the schedule stopped.
 */
import type { Pool, Queryable } from '../db.ts';
import type { Logger } from '../log.ts';
import type { BusTransport, Consumer } from './bus.ts';
import { deterministicId, enqueue } from './outbox.ts';

export interface RecurringOptions {
  bus: BusTransport;
  pool: Pool;
  logger: Logger;
  /** The ticks' topic, and the consumer's name. */
  topic: string;
  everyMs: number;
  /** The job. It logs its own failures: a tick whose job threw is not run again (the next tick is). */
  run: () => Promise<void>;
  /** The clock in milliseconds (default Date.now). */
  now?: () => number;
}

interface Tick {
  [key: string]: number;
  period: number;
}

/** Longest wait between polls for a tick that came due (the PostgreSQL transport's default). */
const POLL_MS = 5000;

/**
 * startRecurring starts the consumer of the job's ticks and enqueues the tick of the current
 * period (due at once; one message whichever processes enqueue it). The returned consumer's
 * `stop` stops this process's share; the schedule goes on in the others.
 */
export async function startRecurring(o: RecurringOptions): Promise<Consumer> {
  if (!(o.everyMs > 0)) throw new RangeError(`a recurring job's period must be positive, got ${o.everyMs}`);
  const now = o.now ?? Date.now;
  const period = () => Math.floor(now() / o.everyMs);
  const nextAfter = (tick: Tick) => Math.max(tick.period, period()) + 1;
  const enqueueTick = (db: Queryable, p: number) =>
    enqueue(db, {
      topic: o.topic,
      key: o.topic,
      id: deterministicId('tick', o.topic, String(p)),
      payload: { period: p } satisfies Tick,
      delayMs: Math.max(0, p * o.everyMs - now()),
    });
  const consumer = await o.bus.consume<Tick>({
    name: o.topic,
    topic: o.topic,
    serialByKey: true,
    // The consumer that enqueued a tick wakes at its time; the others find it by their poll.
    pollIntervalMs: Math.min(o.everyMs, POLL_MS),
    maxAttempts: 5,
    backoff: { baseMs: Math.min(o.everyMs, 1000), capMs: Math.max(o.everyMs, 1000) },
    handler: async (tick, ctx) => {
      try {
        await o.run();
      } catch (err) {
        o.logger.error({ err, topic: o.topic }, 'a recurring job failed; its next period runs it again');
      }
      await ctx.inTx((tx) => enqueueTick(tx, nextAfter(tick.payload)));
    },
    // A tick that could not enqueue its successor (the database away) still keeps the schedule.
    giveUp: async (tick, ctx) => {
      await ctx.inTx((tx) => enqueueTick(tx, nextAfter(tick.payload)));
    },
  });
  await enqueueTick(o.pool, period());
  return consumer;
}
