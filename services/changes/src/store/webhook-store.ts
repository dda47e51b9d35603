/** Queries on webhooks, their pending events and their delivery log. Every query names the workspace, except the workers' own. */
import type { Queryable } from '@adsmcp/runtime/db';
import type { ExpiryHours } from '../domain/change.ts';

export interface WebhookRow {
  webhook_id: string;
  workspace_id: string;
  url: string;
  events: string[];
  format: 'json' | 'slack';
  secret_sealed: Buffer;
  review_base_url: string;
  created_by: string;
  created_at: Date;
  deleted_by: string | null;
  deleted_at: Date | null;
}

export async function insertWebhook(
  db: Queryable,
  w: Pick<
    WebhookRow,
    | 'webhook_id'
    | 'workspace_id'
    | 'url'
    | 'events'
    | 'format'
    | 'secret_sealed'
    | 'review_base_url'
    | 'created_by'
  >,
): Promise<WebhookRow> {
  const { rows } = await db.query<WebhookRow>(
    `INSERT INTO webhooks (webhook_id, workspace_id, url, events, format, secret_sealed, review_base_url, created_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *`,
    [
      w.webhook_id,
      w.workspace_id,
      w.url,
      w.events,
      w.format,
      w.secret_sealed,
      w.review_base_url,
      w.created_by,
    ],
  );
  return rows[0] as WebhookRow;
}

export async function countLiveWebhooks(db: Queryable, workspaceId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM webhooks WHERE workspace_id = $1 AND deleted_at IS NULL',
    [workspaceId],
  );
  return rows[0]?.n ?? 0;
}

export async function listWebhooks(db: Queryable, workspaceId: string): Promise<WebhookRow[]> {
  const { rows } = await db.query<WebhookRow>(
    'SELECT * FROM webhooks WHERE workspace_id = $1 AND deleted_at IS NULL ORDER BY created_at, webhook_id',
    [workspaceId],
  );
  return rows;
}

/** Deletes a live webhook (kept, marked deleted, for its delivery log); undefined when there was none. */
export async function deleteWebhook(
  db: Queryable,
  d: { workspaceId: string; webhookId: string; by: string },
): Promise<WebhookRow | undefined> {
  const { rows } = await db.query<WebhookRow>(
    `UPDATE webhooks SET deleted_at = now(), deleted_by = $3
      WHERE workspace_id = $1 AND webhook_id = $2 AND deleted_at IS NULL RETURNING *`,
    [d.workspaceId, d.webhookId, d.by],
  );
  return rows[0];
}

/** The delivery worker's read: the webhook whatever its workspace, deleted ones too. */
export async function findWebhook(db: Queryable, webhookId: string): Promise<WebhookRow | undefined> {
  const { rows } = await db.query<WebhookRow>('SELECT * FROM webhooks WHERE webhook_id = $1', [webhookId]);
  return rows[0];
}

export async function liveWebhooksFor(
  db: Queryable,
  workspaceId: string,
  event: string,
): Promise<WebhookRow[]> {
  const { rows } = await db.query<WebhookRow>(
    `SELECT * FROM webhooks WHERE workspace_id = $1 AND deleted_at IS NULL AND $2 = ANY (events)
      ORDER BY created_at, webhook_id`,
    [workspaceId, event],
  );
  return rows;
}

export interface WebhookEventRow {
  event_id: string;
  workspace_id: string;
  event: string;
  subject_id: string;
  at: Date;
}

/** Takes up to `limit` events not yet fanned out, locked for this transaction (others skip them). */
export async function claimPendingEvents(db: Queryable, limit: number): Promise<WebhookEventRow[]> {
  const { rows } = await db.query<WebhookEventRow>(
    `SELECT event_id::text, workspace_id, event, subject_id, at FROM webhook_events
      WHERE fanned_out_at IS NULL ORDER BY event_id LIMIT $1 FOR UPDATE SKIP LOCKED`,
    [limit],
  );
  return rows;
}

export async function markFannedOut(db: Queryable, eventIds: string[]): Promise<void> {
  await db.query('UPDATE webhook_events SET fanned_out_at = now() WHERE event_id = ANY ($1::bigint[])', [
    eventIds,
  ]);
}

/**
 * Records `change.expired` once for each change that expired after its prepare or approval was
 * itself an event (so a workspace that registers its first webhook is not sent the expiries of
 * older changes): a prepared change past its hours after prepare, an approved one past its hours
 * after approval, as domain/change.ts expiresAt.
 */
export async function recordExpiries(db: Queryable, defaults: ExpiryHours): Promise<number> {
  const res = await db.query(
    `WITH due AS (
       SELECT c.workspace_id, c.change_id,
              CASE WHEN c.status = 'prepared'
                   THEN c.prepared_at + make_interval(hours => coalesce(s.prepared_valid_hours, $1))
                   ELSE c.approved_at + make_interval(hours => coalesce(s.approval_valid_hours, $2)) END AS expired_at
         FROM changes c
         LEFT JOIN LATERAL (
           SELECT prepared_valid_hours, approval_valid_hours FROM change_expiry_settings x
            WHERE x.workspace_id = c.workspace_id ORDER BY set_at DESC LIMIT 1
         ) s ON true
        WHERE c.status IN ('prepared', 'approved')
          AND c.workspace_id IN (SELECT workspace_id FROM webhooks WHERE deleted_at IS NULL)
          AND EXISTS (SELECT 1 FROM webhook_events e WHERE e.subject_id = c.change_id::text
                       AND e.event IN ('change.awaiting_approval', 'change.approved'))
     )
     INSERT INTO webhook_events (workspace_id, event, subject_id, at)
     SELECT workspace_id, 'change.expired', change_id::text, expired_at FROM due WHERE expired_at <= now()
     ON CONFLICT (subject_id) WHERE event = 'change.expired' DO NOTHING`,
    [defaults.preparedValidHours, defaults.approvalValidHours],
  );
  return res.rowCount ?? 0;
}

/**
 * Forgets events fanned out more than `days` ago (their deliveries keep their own log); keep it
 * past the longest expiry (720 hours), since an expiry is recorded only for a change whose
 * prepare or approval event is still here.
 */
export async function pruneFannedOut(db: Queryable, days: number): Promise<void> {
  await db.query(
    `DELETE FROM webhook_events WHERE fanned_out_at < now() - make_interval(days => $1) AND event <> 'change.expired'`,
    [days],
  );
}
export interface DeliveryRow {
  delivery_id: string;
  attempt: number;
  webhook_id: string;
  workspace_id: string;
  url: string;
  event: string;
  subject_id: string;
  outcome: 'delivered' | 'failed' | 'gave_up';
  response_status: number | null;
  error: string | null;
  at: Date;
}

/** Records one attempt; a give-up recorded after its attempt's failure replaces that failure. */
export async function recordDelivery(db: Queryable, d: Omit<DeliveryRow, 'at'>): Promise<void> {
  await db.query(
    `INSERT INTO webhook_deliveries
       (delivery_id, attempt, webhook_id, workspace_id, url, event, subject_id, outcome, response_status, error)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
     ON CONFLICT (delivery_id, attempt) DO UPDATE SET outcome = EXCLUDED.outcome,
       response_status = coalesce(EXCLUDED.response_status, webhook_deliveries.response_status),
       error = coalesce(EXCLUDED.error, webhook_deliveries.error), at = EXCLUDED.at`,
    [
      d.delivery_id,
      d.attempt,
      d.webhook_id,
      d.workspace_id,
      d.url,
      d.event,
      d.subject_id,
      d.outcome,
      d.response_status,
      d.error,
    ],
  );
}

export async function listDeliveries(
  db: Queryable,
  workspaceId: string,
  limit: number,
): Promise<DeliveryRow[]> {
  const { rows } = await db.query<DeliveryRow>(
    `SELECT * FROM webhook_deliveries WHERE workspace_id = $1 ORDER BY at DESC, delivery_id, attempt DESC LIMIT $2`,
    [workspaceId, limit],
  );
  return rows;
}
