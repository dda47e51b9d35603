/**
 * Proposal events for the workspace's webhooks, which the changes service keeps and delivers: a
 * proposal awaiting review is enqueued on this service's outbox in the transaction that records
 * it, and this consumer hands it to the changes service (RecordWebhookEvent, signed with this
 * service's key), retried until that service has it. The bus has no cross-service topic on its
 * PostgreSQL transport (each service's queue is its own outbox), so the event crosses by RPC.
 */
import type { WebhooksService } from '@adsmcp/proto/changes/v1/webhooks_pb';
import type { Handler } from '@adsmcp/runtime/bus/bus';
import { deterministicId, enqueue } from '@adsmcp/runtime/bus/outbox';
import type { Queryable } from '@adsmcp/runtime/db';
import type { Principal } from '@adsmcp/runtime/principal';
import { onBehalfOf } from '@adsmcp/runtime/service-client';
import type { Client } from '@connectrpc/connect';
import type { Proposal } from '../domain/proposal.ts';

export const WEBHOOK_EVENTS_TOPIC = 'optimizer.webhook-events';

export interface WebhookEventMessage {
  event_id: string;
  event: 'proposal.awaiting_approval';
  workspace_id: string;
  subject_id: string;
  account_id: string;
  summary: string;
  review_path: string;
  occurred_at: string;
}

/** Enqueues a new proposal's `proposal.awaiting_approval`, in the caller's transaction. */
export async function enqueueProposalAwaiting(
  tx: Queryable,
  p: Proposal,
  runSummary: string,
  now: Date,
): Promise<void> {
  const message: WebhookEventMessage = {
    event_id: deterministicId('proposal-awaiting', p.proposalId),
    event: 'proposal.awaiting_approval',
    workspace_id: p.workspaceId,
    subject_id: p.proposalId,
    account_id: p.accountId,
    summary: runSummary === '' ? p.variant.title : `${p.variant.title} (${runSummary})`,
    review_path: `/dashboard/proposals/${p.proposalId}`,
    occurred_at: now.toISOString(),
  };
  await enqueue(tx, {
    topic: WEBHOOK_EVENTS_TOPIC,
    key: p.proposalId,
    id: message.event_id,
    payload: { ...message },
  });
}

export function createWebhookEventHandler(d: {
  webhooks: Client<typeof WebhooksService>;
}): Handler<WebhookEventMessage> {
  return async (m) => {
    const principal: Principal = {
      workspaceId: m.payload.workspace_id,
      credentialId: `optimizer-proposal:${m.payload.subject_id}`,
      userId: null,
      role: 'editor',
      scopes: ['read', 'write'],
      via: 'worker',
    };
    await d.webhooks.recordWebhookEvent(
      {
        eventId: m.payload.event_id,
        event: m.payload.event,
        subjectId: m.payload.subject_id,
        accountId: m.payload.account_id,
        summary: m.payload.summary,
        reviewPath: m.payload.review_path,
        occurredAt: m.payload.occurred_at,
      },
      onBehalfOf(principal),
    );
  };
}
