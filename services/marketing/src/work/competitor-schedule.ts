/**
 * The competitor-check schedule: a recurring job on the bus (startRecurring) enqueues a check for every enabled source that is due
 * (the outbox row and the source's next check move in one transaction), and a bus consumer on
 * the competitor-check topic runs them. Pausing a source clears its next check, so nothing more
 * is enqueued, and a check already enqueued finds it paused and does nothing.
 */
import type { BusTransport, Consumer } from '@adsmcp/runtime/bus/bus';
import { deterministicId, enqueue } from '@adsmcp/runtime/bus/outbox';
import { startRecurring } from '@adsmcp/runtime/bus/recurring';
import { inTransaction, type Pool } from '@adsmcp/runtime/db';
import type { Logger } from '@adsmcp/runtime/log';
import { nextCheckAt } from '../domain/competitor-source.ts';
import { lockDueSources, setNextCheck } from '../store/competitor-store.ts';
import type { CheckMessage, CompetitorChecker } from './competitor-checks.ts';

export const COMPETITOR_CHECK_TOPIC = 'competitor-check';
/** The scheduler's ticks: once a period, one process of the service looks for due sources. */
export const COMPETITOR_DUE_TOPIC = 'competitor-check.due';
/** How often the scheduler looks for due sources. */
export const SCHEDULE_EVERY_MS = 30_000;
/** Sources enqueued per look; the rest wait for the next one. */
const DUE_BATCH = 100;

/**
 * enqueueDueChecks enqueues a check of every enabled source due at `now` (up to a batch) and
 * moves each one's next check an interval on, with jitter. The message id derives from the
 * source and the time it was due, so a scheduler that retries never enqueues the same check twice.
 */
export async function enqueueDueChecks(
  pool: Pool,
  { now, random, limit = DUE_BATCH }: { now: Date; random: () => number; limit?: number },
): Promise<number> {
  return inTransaction(pool, async (tx) => {
    const due = await lockDueSources(tx, now, limit);
    for (const source of due) {
      const payload: CheckMessage = {
        workspace_id: source.workspaceId,
        source_id: source.sourceId,
        due_at: source.nextCheckAt.toISOString(),
      };
      await enqueue(tx, {
        id: deterministicId('competitor-check', source.sourceId, payload.due_at),
        topic: COMPETITOR_CHECK_TOPIC,
        key: source.sourceId,
        payload: { ...payload },
      });
      await setNextCheck(tx, source.sourceId, nextCheckAt(now, source.intervalHours, random));
    }
    return due.length;
  });
}

export interface CompetitorWatchOptions {
  pool: Pool;
  logger: Logger;
  bus: BusTransport;
  checker: CompetitorChecker;
  everyMs?: number;
  clock?: () => Date;
  random?: () => number;
}

export interface CompetitorWatch {
  /** Stops the scheduler and the consumer, waiting for what is under way. */
  stop(): Promise<void>;
}

/**
 * startCompetitorWatch starts the consumer of the competitor-check topic and the scheduler that
 * feeds it (once a period for the service, whichever of its processes runs it). A failed look for due sources is logged and the next one tries again.
 */
export async function startCompetitorWatch(o: CompetitorWatchOptions): Promise<CompetitorWatch> {
  const clock = o.clock ?? (() => new Date());
  const random = o.random ?? Math.random;
  const everyMs = o.everyMs ?? SCHEDULE_EVERY_MS;
  const consumer: Consumer = await o.bus.consume<CheckMessage>({
    name: 'marketing-competitor-check',
    topic: COMPETITOR_CHECK_TOPIC,
    handler: (message, ctx) => o.checker.checkScheduled(message.payload, ctx),
    // A check reads one page within the fetcher's time bound; a few at once, politely.
    concurrency: 2,
    maxAttempts: 5,
    backoff: { baseMs: 30_000, capMs: 15 * 60_000 },
  });
  const looking = await startRecurring({
    bus: o.bus,
    pool: o.pool,
    logger: o.logger,
    topic: COMPETITOR_DUE_TOPIC,
    everyMs,
    run: async () => {
      try {
        const enqueued = await enqueueDueChecks(o.pool, { now: clock(), random });
        if (enqueued > 0) o.logger.info({ enqueued }, 'competitor checks enqueued');
      } catch (err) {
        o.logger.error({ err }, 'looking for due competitor checks failed; the next look tries again');
      }
    },
  });
  return {
    async stop() {
      await looking.stop();
      await consumer.stop();
    },
  };
}
