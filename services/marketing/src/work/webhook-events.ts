/**
 * "Import finished" for the workspace's webhooks, which the changes service keeps and delivers: a
 * performance import that ends (completed or failed) is enqueued on this service's outbox in the
 * transaction that records its end, and this consumer hands it to the changes service
 * (RecordWebhookEvent, signed with this service's key), retried until that service has it. The bus
 * has no cross-service topic on its PostgreSQL transport (each service's queue is its own outbox),
 * so the event crosses by RPC, as the optimizer's proposal events do.
 */
import type { WebhooksService } from '@adsmcp/proto/changes/v1/webhooks_pb';
import type { Handler } from '@adsmcp/runtime/bus/bus';
import { deterministicId, enqueue } from '@adsmcp/runtime/bus/outbox';
import type { Queryable } from '@adsmcp/runtime/db';
import type { Principal } from '@adsmcp/runtime/principal';
import { onBehalfOf } from '@adsmcp/runtime/service-client';
import type { Client } from '@connectrpc/connect';

export const WEBHOOK_EVENTS_TOPIC = 'marketing.webhook-events';

export interface ImportFinishedMessage {
  event_id: string;
  event: 'import.finished';
  workspace_id: string;
  subject_id: string;
  status: 'completed' | 'failed';
  summary: string;
  occurred_at: string;
}

interface FinishedImport {
  name: string;
  status: string;
  rows_saved: number;
  ad_count: number;
  error_count: number;
  first_error: string | null;
  finished_at: Date | null;
}

/**
 * Enqueues the `import.finished` of an import that has just ended, in the caller's transaction
 * (the one that marked it completed or failed), so an import that ends always announces it and one
 * rolled back never does. An import not ended is left alone.
 */
export async function enqueueImportFinished(
  tx: Queryable,
  workspaceId: string,
  importId: string,
): Promise<void> {
  const { rows } = await tx.query<FinishedImport>(
    `SELECT name, status, rows_saved, ad_count, error_count, errors->0->>'message' AS first_error, finished_at
       FROM performance_imports WHERE workspace_id = $1 AND import_id = $2`,
    [workspaceId, importId],
  );
  const i = rows[0];
  if (i === undefined || (i.status !== 'completed' && i.status !== 'failed')) return;
  const summary =
    i.status === 'completed'
      ? `${i.name}: ${i.rows_saved} rows of ${i.ad_count} ads saved`
      : `${i.name}: failed with ${i.error_count} ${i.error_count === 1 ? 'error' : 'errors'}` +
        (i.first_error === null ? '' : ` (${i.first_error.slice(0, 300)})`);
  const message: ImportFinishedMessage = {
    event_id: deterministicId('import-finished', importId),
    event: 'import.finished',
    workspace_id: workspaceId,
    subject_id: importId,
    status: i.status,
    summary,
    occurred_at: (i.finished_at ?? new Date()).toISOString(),
  };
  await enqueue(tx, {
    topic: WEBHOOK_EVENTS_TOPIC,
    key: importId,
    id: message.event_id,
    payload: { ...message },
  });
}

export function createImportFinishedHandler(d: {
  webhooks: Client<typeof WebhooksService>;
}): Handler<ImportFinishedMessage> {
  return async (m) => {
    const principal: Principal = {
      workspaceId: m.payload.workspace_id,
      credentialId: `marketing-import:${m.payload.subject_id}`,
      userId: null,
      role: 'editor',
      // The trust table lets this service's tokens carry write to the changes service, for this one call.
      scopes: ['write'],
      via: 'worker',
    };
    await d.webhooks.recordWebhookEvent(
      {
        eventId: m.payload.event_id,
        event: m.payload.event,
        subjectId: m.payload.subject_id,
        status: m.payload.status,
        summary: m.payload.summary,
        occurredAt: m.payload.occurred_at,
      },
      onBehalfOf(principal),
    );
  };
}
