/**
 * The fan-out: each recorded event (a change's transition, written by the trigger of migration
 * 0014 in the transition's own transaction; an expiry, recorded here) becomes one delivery
 * message per webhook that asked for it, enqueued on the bus in the transaction that marks the
 * event fanned out, so each webhook gets each event once whatever crashes in between.
 */
import { deterministicId, enqueue } from '@adsmcp/runtime/bus/outbox';
import { inTransaction, type Pool } from '@adsmcp/runtime/db';
import { repeatEvery } from '@adsmcp/runtime/lifecycle';
import type { Logger } from '@adsmcp/runtime/log';
import { DEFAULT_EXPIRY } from '../domain/change.ts';
import { findChange } from '../store/change-store.ts';
import {
  claimPendingEvents,
  liveWebhooksFor,
  markFannedOut,
  pruneFannedOut,
  recordExpiries,
} from '../store/webhook-store.ts';
import { bodyFor, isChangeEvent, reviewUrl } from './webhook-rules.ts';

export const WEBHOOK_TOPIC = 'webhooks.deliver';

/** What a delivery message carries: the body is made once, so every attempt sends the same bytes. */
export interface DeliveryMessage {
  delivery_id: string;
  webhook_id: string;
  workspace_id: string;
  event: string;
  subject_id: string;
  body: string;
}

const BATCH = 100;

/** Fans out up to BATCH pending events; returns how many. */
export async function fanOut(pool: Pool): Promise<number> {
  return inTransaction(pool, async (tx) => {
    const events = await claimPendingEvents(tx, BATCH);
    for (const ev of events) {
      if (!isChangeEvent(ev.event)) continue;
      const change = await findChange(tx, ev.workspace_id, ev.subject_id);
      if (change === undefined) continue;
      for (const hook of await liveWebhooksFor(tx, ev.workspace_id, ev.event)) {
        const deliveryId = deterministicId('webhook-delivery', ev.event_id, hook.webhook_id);
        const message: DeliveryMessage = {
          delivery_id: deliveryId,
          webhook_id: hook.webhook_id,
          workspace_id: ev.workspace_id,
          event: ev.event,
          subject_id: ev.subject_id,
          body: bodyFor(hook.format, {
            deliveryId,
            event: ev.event,
            occurredAt: ev.at,
            workspaceId: ev.workspace_id,
            change,
            reviewUrl: reviewUrl(hook.review_base_url, change.change_id),
          }),
        };
        // Keyed by webhook: the consumer sends one webhook's deliveries one at a time, so a
        // receiver that is down holds one slot at most. A delivery retried arrives after later
        // ones (docs/webhooks.md), so each carries its event's time.
        await enqueue(tx, {
          topic: WEBHOOK_TOPIC,
          key: hook.webhook_id,
          id: deliveryId,
          payload: { ...message },
        });
      }
    }
    if (events.length > 0)
      await markFannedOut(
        tx,
        events.map((e) => e.event_id),
      );
    return events.length;
  });
}

/** startWebhookFanOut records expiries and fans out events every `everyMs` until stopped. */
export function startWebhookFanOut(d: { pool: Pool; logger: Logger }, everyMs: number): () => Promise<void> {
  let rounds = 0;
  return repeatEvery(everyMs, async () => {
    try {
      await recordExpiries(d.pool, DEFAULT_EXPIRY);
      while ((await fanOut(d.pool)) === BATCH) {}
      if (rounds++ % 3600 === 0) await pruneFannedOut(d.pool, 31);
    } catch (err) {
      d.logger.warn({ err }, 'the webhook fan-out failed; it runs again shortly');
    }
  });
}
