/**
 * The delivery worker: POSTs one event to one webhook, signed with the webhook's secret, through
 * the request-forgery-safe fetcher, and records every attempt with its outcome. An attempt that
 * gets no 2xx throws, so the bus tries again after its backoff; past the last attempt the
 * give-up path records that the delivery was given up. Deliveries are at least once: the
 * delivery id header lets a receiver drop a repeat.
 */
import type { Delivery, GiveUp, Handler } from '@adsmcp/runtime/bus/bus';
import { inTransaction, type Pool, type Queryable } from '@adsmcp/runtime/db';
import type { Logger } from '@adsmcp/runtime/log';
import type { SafeFetch } from '@adsmcp/runtime/safe-fetch';
import { appendAuditEvent } from '../store/audit-store.ts';
import { type DeliveryRow, findWebhook, recordDelivery } from '../store/webhook-store.ts';
import type { DeliveryMessage } from './fan-out.ts';
import type { SecretCipher } from './secret-cipher.ts';
import { DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, signature } from './webhook-rules.ts';

export const WEBHOOK_CONSUMER = 'changes-webhooks';

export interface DeliveryDeps {
  pool: Pool;
  logger: Logger;
  cipher: SecretCipher;
  fetch: SafeFetch;
  now?: () => Date;
}

type Outcome = Pick<DeliveryRow, 'outcome' | 'response_status' | 'error'>;

/** Records an attempt's outcome in the delivery log and, in the same transaction, the audit log. */
async function record(db: Queryable, m: Delivery<DeliveryMessage>, url: string, o: Outcome): Promise<void> {
  const p = m.payload;
  await recordDelivery(db, {
    delivery_id: p.delivery_id,
    attempt: m.attempt,
    webhook_id: p.webhook_id,
    workspace_id: p.workspace_id,
    url,
    event: p.event,
    subject_id: p.subject_id,
    ...o,
  });
  await appendAuditEvent(db, {
    workspaceId: p.workspace_id,
    actor: 'worker:webhooks',
    kind: `webhook.${o.outcome}`,
    subject: p.webhook_id,
    details: {
      webhook_id: p.webhook_id,
      delivery_id: p.delivery_id,
      event: p.event,
      subject_id: p.subject_id,
      attempt: m.attempt,
      response_status: o.response_status,
      error: o.error,
    },
  });
}

export function createDeliveryHandler(d: DeliveryDeps): Handler<DeliveryMessage> {
  const now = d.now ?? (() => new Date());
  return async (m, ctx) => {
    const p = m.payload;
    const hook = await findWebhook(d.pool, p.webhook_id);
    if (hook === undefined || hook.deleted_at !== null) {
      d.logger.info(
        { webhook_id: p.webhook_id, delivery_id: p.delivery_id },
        'webhook deleted: delivery dropped',
      );
      return;
    }
    const secret = d.cipher.open(hook.secret_sealed, {
      workspaceId: hook.workspace_id,
      webhookId: hook.webhook_id,
    });
    const t = Math.floor(now().getTime() / 1000);
    let outcome: Outcome;
    try {
      const res = await d.fetch(hook.url, {
        method: 'POST',
        body: p.body,
        accept: '*/*',
        // Only the status is recorded: a receiver's 2xx with a large or slow page is delivered.
        statusOnly: true,
        signal: ctx.signal,
        headers: {
          'content-type': 'application/json',
          [SIGNATURE_HEADER]: signature(secret, t, p.body),
          [DELIVERY_HEADER]: p.delivery_id,
          [EVENT_HEADER]: p.event,
        },
      });
      outcome =
        res.status >= 200 && res.status < 300
          ? { outcome: 'delivered', response_status: res.status, error: null }
          : {
              outcome: 'failed',
              response_status: res.status,
              error: `the receiver answered HTTP ${res.status}`,
            };
    } catch (err) {
      outcome = {
        outcome: 'failed',
        response_status: null,
        error: err instanceof Error ? err.message : String(err),
      };
    }
    if (outcome.outcome === 'delivered') {
      await ctx.inTx((tx) => record(tx, m, hook.url, outcome));
      return;
    }
    // A failed attempt is recorded on its own (the inbox is for the delivery that succeeds), then retried.
    await inTransaction(d.pool, (tx) => record(tx, m, hook.url, outcome));
    throw new Error(`webhook delivery ${p.delivery_id} attempt ${m.attempt}: ${outcome.error}`);
  };
}

/** Past the last attempt: the delivery log and the audit log say it was given up. */
export function createDeliveryGiveUp(d: DeliveryDeps): GiveUp<DeliveryMessage> {
  return async (m, ctx, reason) => {
    const hook = await findWebhook(d.pool, m.payload.webhook_id);
    const error =
      reason.kind === 'failed'
        ? `no attempt was answered with 2xx; the last: ${reason.error instanceof Error ? reason.error.message : String(reason.error)}`
        : `the last attempt never reported back: ${reason.detail}`;
    await ctx.inTx((tx) =>
      record(tx, m, hook?.url ?? '', { outcome: 'gave_up', response_status: null, error }),
    );
  };
}
