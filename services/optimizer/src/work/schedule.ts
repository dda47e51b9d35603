/**
 * The cadence: every enabled optimizer gets a review run every cadence_hours. A scheduler tick (a
 * recurring job on the bus) finds the optimizers whose review is due, moves each one's next review on and puts a message on
 * the bus in the same transaction; the consumer queues the run (reusing open work). A paused
 * optimizer has no next review, so it is never due.
 */

import type { BusTransport, Consumer, Delivery, HandlerContext } from '@adsmcp/runtime/bus/bus';
import { deterministicId, enqueue } from '@adsmcp/runtime/bus/outbox';
import { startRecurring } from '@adsmcp/runtime/bus/recurring';
import { inTransaction, type Pool } from '@adsmcp/runtime/db';
import type { Logger } from '@adsmcp/runtime/log';
import { lockOptimizer } from '../store/optimizer-store.ts';
import { featureSuspended, lockDueOptimizers, requestRun, setNextReview } from '../store/review-store.ts';

export const SCHEDULE_TOPIC = 'optimizer.schedule';
const HOUR_MS = 3_600_000;

export interface ScheduleMessage {
  [key: string]: string;
  optimizer_id: string;
  workspace_id: string;
  due_at: string;
}

/** The next review after one due at `due`: a cadence later, or a cadence from now when far behind. */
export function nextReviewAfter(due: Date, cadenceHours: number, now: Date): Date {
  const next = new Date(due.getTime() + cadenceHours * HOUR_MS);
  return next > now ? next : new Date(now.getTime() + cadenceHours * HOUR_MS);
}

/** scheduleDue puts a review message on the bus for each optimizer due at `now`; it returns how many. */
export async function scheduleDue(pool: Pool, now: Date, limit = 100): Promise<number> {
  return inTransaction(pool, async (tx) => {
    const due = await lockDueOptimizers(tx, now, limit);
    for (const o of due) {
      const message: ScheduleMessage = {
        optimizer_id: o.optimizer_id,
        workspace_id: o.workspace_id,
        due_at: o.next_review_at.toISOString(),
      };
      // One message per optimizer and due time, however often this runs.
      await enqueue(tx, {
        topic: SCHEDULE_TOPIC,
        key: o.optimizer_id,
        payload: message,
        id: deterministicId('review', o.optimizer_id, message.due_at),
      });
      await setNextReview(tx, o.optimizer_id, nextReviewAfter(o.next_review_at, o.cadence_hours, now));
    }
    return due.length;
  });
}

/** The ticks of the scheduler: once a period, one process of the service looks for due reviews. */
export const SCHEDULE_DUE_TOPIC = 'optimizer.schedule-due';

/**
 * startScheduler runs scheduleDue every `everyMs`, as a recurring job on the bus (startRecurring):
 * once a period for the service, not once per process. The consumer it returns stops this
 * process's share.
 */
export function startScheduler(o: {
  pool: Pool;
  logger: Logger;
  bus: BusTransport;
  everyMs: number;
  clock: () => Date;
}): Promise<Consumer> {
  return startRecurring({
    bus: o.bus,
    pool: o.pool,
    logger: o.logger,
    topic: SCHEDULE_DUE_TOPIC,
    everyMs: o.everyMs,
    run: async () => {
      try {
        const n = await scheduleDue(o.pool, o.clock());
        if (n > 0) o.logger.info({ optimizers: n }, 'reviews scheduled');
      } catch (err) {
        o.logger.error({ err }, 'scheduling reviews failed; retrying on the next tick');
      }
    },
  });
}

/**
 * The consumer of SCHEDULE_TOPIC: queues the optimizer's review unless it was paused, or its
 * workspace's optimizer feature ended, meanwhile.
 */
export function createScheduleHandler(d: { clock: () => Date; logger: Logger }) {
  return async (message: Delivery<ScheduleMessage>, ctx: HandlerContext): Promise<void> => {
    const { optimizer_id: optimizerId, workspace_id: workspaceId } = message.payload;
    await ctx.inTx(async (tx) => {
      const optimizer = await lockOptimizer(tx, workspaceId, optimizerId);
      if (optimizer === undefined || !optimizer.enabled) return;
      if (await featureSuspended(tx, workspaceId)) {
        d.logger.info(
          { optimizer_id: optimizerId },
          'scheduled review not queued: the optimizer feature has ended',
        );
        return;
      }
      const { run, created } = await requestRun(tx, optimizer, 'schedule', 'schedule', d.clock());
      d.logger.info({ optimizer_id: optimizerId, run_id: run.runId, created }, 'scheduled review queued');
    });
  };
}
