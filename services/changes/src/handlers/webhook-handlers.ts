/** The WebhooksService RPCs: a workspace admin registers, lists and deletes webhooks and reads their delivery log. */
import { randomUUID } from 'node:crypto';
import type { WebhooksService } from '@adsmcp/proto/changes/v1/webhooks_pb';
import { deterministicId, enqueue } from '@adsmcp/runtime/bus/outbox';
import { principalOf } from '@adsmcp/runtime/connect-server';
import { inTransaction, type Pool } from '@adsmcp/runtime/db';
import { FailedPreconditionError, InvalidArgumentError, NotFoundError } from '@adsmcp/runtime/errors';
import { actorName } from '@adsmcp/runtime/principal';
import { checkUrl, SafeFetchError } from '@adsmcp/runtime/safe-fetch';
import { shownUrl } from '@adsmcp/runtime/shown-url';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { appendAuditEvent } from '../store/audit-store.ts';
import {
  countLiveWebhooks,
  deleteWebhook as deleteWebhookRow,
  insertWebhook,
  listDeliveries,
  listWebhooks as listWebhookRows,
  liveWebhooksFor,
  type WebhookRow,
} from '../store/webhook-store.ts';
import { type DeliveryMessage, WEBHOOK_TOPIC } from '../webhooks/fan-out.ts';
import type { SecretCipher } from '../webhooks/secret-cipher.ts';
import {
  checkEvents,
  checkFormat,
  checkUrlLength,
  IMPORT_STATUSES,
  type ImportStatus,
  importBodyFor,
  isImportEvent,
  isProposalEvent,
  MAX_WEBHOOKS,
  newSecret,
  type ProposalEvent,
  proposalBodyFor,
} from '../webhooks/webhook-rules.ts';

export interface WebhookHandlerDeps {
  pool: Pool;
  cipher: SecretCipher;
  /** WEBHOOK_ALLOW_HOSTS: `host:port` pairs an operator allowed over plain http, for local development. */
  allowHosts: readonly string[];
  /** The fetcher's resolver (tests pass one); the system resolver by default. */
  resolve?: (hostname: string) => Promise<string[]>;
}

function webhookProto(w: WebhookRow) {
  return {
    webhookId: w.webhook_id,
    url: w.url,
    events: w.events,
    format: w.format,
    createdBy: w.created_by,
    createdAt: w.created_at.toISOString(),
  };
}

/** The URL by the safe fetcher's rules, or an invalid-argument error naming `url` and the rule it breaks. */
async function checkedUrl(raw: string, d: WebhookHandlerDeps): Promise<string> {
  checkUrlLength(raw);
  try {
    const url = await checkUrl(raw, {
      allowHosts: d.allowHosts,
      ...(d.resolve ? { resolve: d.resolve } : {}),
    });
    return url.toString();
  } catch (err) {
    if (!(err instanceof SafeFetchError)) throw err;
    const rule = err.message.startsWith('url ') ? err.message : `url is refused: ${err.message}`;
    throw new InvalidArgumentError(
      `${rule}; a webhook URL must be https to a public address (an operator may allow a host:port for local development with WEBHOOK_ALLOW_HOSTS)`,
    );
  }
}

function checkBaseUrl(raw: string): string {
  try {
    const u = new URL(raw);
    if (u.protocol === 'https:' || u.protocol === 'http:') return u.origin;
  } catch {}
  throw new InvalidArgumentError("review_base_url must be the dashboard's absolute http(s) URL");
}

// Each RPC's function takes its request and answer types from the generated service, so a moved
// function is checked exactly as its table entry was.
type Impl = ServiceImpl<typeof WebhooksService>;
type Req<K extends keyof Impl> = Parameters<Impl[K]>[0];
type Res<K extends keyof Impl> = Promise<Awaited<ReturnType<Impl[K]>>>;

export function webhookHandlers(d: WebhookHandlerDeps): ServiceImpl<typeof WebhooksService> {
  return {
    createWebhook: (req, ctx) => createWebhook(d, req, ctx),
    listWebhooks: (req, ctx) => listWebhooks(d, req, ctx),
    deleteWebhook: (req, ctx) => deleteWebhook(d, req, ctx),
    recordWebhookEvent: (req, ctx) => recordWebhookEvent(d, req, ctx),
    listWebhookDeliveries: (req, ctx) => listWebhookDeliveries(d, req, ctx),
  };
}

async function createWebhook(
  d: WebhookHandlerDeps,
  req: Req<'createWebhook'>,
  ctx: HandlerContext,
): Res<'createWebhook'> {
  const p = principalOf(ctx);
  const events = checkEvents(req.events);
  const format = checkFormat(req.format);
  const reviewBase = checkBaseUrl(req.reviewBaseUrl);
  const url = await checkedUrl(req.url, d);
  const webhookId = randomUUID();
  const secret = newSecret();
  const by = actorName(p);
  const row = await inTransaction(d.pool, async (tx) => {
    // Serialised per workspace, so two registrations at once cannot both pass the bound.
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`webhooks:${p.workspaceId}`]);
    if ((await countLiveWebhooks(tx, p.workspaceId)) >= MAX_WEBHOOKS) {
      throw new FailedPreconditionError(
        `a workspace keeps at most ${MAX_WEBHOOKS} webhooks; delete one first`,
      );
    }
    const w = await insertWebhook(tx, {
      webhook_id: webhookId,
      workspace_id: p.workspaceId,
      url,
      events,
      format,
      secret_sealed: d.cipher.seal(secret, { workspaceId: p.workspaceId, webhookId }),
      review_base_url: reviewBase,
      created_by: by,
    });
    await appendAuditEvent(tx, {
      workspaceId: p.workspaceId,
      actor: by,
      kind: 'webhook.registered',
      subject: webhookId,
      details: { webhook_id: webhookId, url: shownUrl(url), events, format },
    });
    return w;
  });
  return { webhook: webhookProto(row), secret };
}

async function listWebhooks(
  d: WebhookHandlerDeps,
  _req: Req<'listWebhooks'>,
  ctx: HandlerContext,
): Res<'listWebhooks'> {
  const p = principalOf(ctx);
  return { webhooks: (await listWebhookRows(d.pool, p.workspaceId)).map(webhookProto) };
}

async function deleteWebhook(
  d: WebhookHandlerDeps,
  req: Req<'deleteWebhook'>,
  ctx: HandlerContext,
): Res<'deleteWebhook'> {
  const p = principalOf(ctx);
  const by = actorName(p);
  await inTransaction(d.pool, async (tx) => {
    const gone = await deleteWebhookRow(tx, { workspaceId: p.workspaceId, webhookId: req.webhookId, by });
    if (gone === undefined) throw new NotFoundError(`webhook ${req.webhookId} not found in this workspace`);
    await appendAuditEvent(tx, {
      workspaceId: p.workspaceId,
      actor: by,
      kind: 'webhook.deleted',
      subject: gone.webhook_id,
      details: {
        webhook_id: gone.webhook_id,
        url: shownUrl(gone.url),
        events: gone.events,
        format: gone.format,
      },
    });
  });
  return {};
}

/**
 * An event of another service (the optimizer's worker, a proposal awaiting review; the
 * marketing service's, an import finished), each through its own outbox, so the event is sent
 * even if this service was away when it was made: one delivery per webhook that asked for it,
 * queued in one transaction; the same event_id queues nothing twice. Only worker tokens reach
 * this call, and the trust table lets the marketing service's make no other call here.
 */
async function recordWebhookEvent(
  d: WebhookHandlerDeps,
  req: Req<'recordWebhookEvent'>,
  ctx: HandlerContext,
): Res<'recordWebhookEvent'> {
  const p = principalOf(ctx);
  if (!isProposalEvent(req.event) && !isImportEvent(req.event)) {
    throw new InvalidArgumentError(
      `event must be proposal.awaiting_approval or import.finished (got ${JSON.stringify(req.event.slice(0, 80))})`,
    );
  }
  // Above the longest a producer makes (a variant title and an 8000-character run summary).
  if (req.summary.length > 10_000) {
    throw new InvalidArgumentError(`summary must be at most 10000 characters (got ${req.summary.length})`);
  }
  const event = req.event;
  let status: ImportStatus | undefined;
  if (isImportEvent(event)) {
    if (!(IMPORT_STATUSES as readonly string[]).includes(req.status)) {
      throw new InvalidArgumentError(
        `status must be completed or failed for import.finished (got ${JSON.stringify(req.status.slice(0, 40))})`,
      );
    }
    status = req.status as ImportStatus;
  } else if (!/^\/dashboard\/[A-Za-z0-9/_-]{1,200}$/.test(req.reviewPath)) {
    throw new InvalidArgumentError('review_path must be a dashboard path such as /dashboard/proposals/<id>');
  }
  const occurredAt = new Date(req.occurredAt);
  if (Number.isNaN(occurredAt.getTime()))
    throw new InvalidArgumentError('occurred_at must be an RFC 3339 time');
  const queued = await inTransaction(d.pool, async (tx) => {
    const hooks = await liveWebhooksFor(tx, p.workspaceId, event);
    for (const hook of hooks) {
      const deliveryId = deterministicId('webhook-delivery', req.eventId, hook.webhook_id);
      const facts = { deliveryId, occurredAt, workspaceId: p.workspaceId, summary: req.summary };
      const body =
        status !== undefined && isImportEvent(event)
          ? importBodyFor(hook.format, { ...facts, event, importId: req.subjectId, status })
          : proposalBodyFor(hook.format, {
              ...facts,
              event: event as ProposalEvent,
              proposalId: req.subjectId,
              accountId: req.accountId,
              reviewUrl: new URL(req.reviewPath, hook.review_base_url).toString(),
            });
      const message: DeliveryMessage = {
        delivery_id: deliveryId,
        webhook_id: hook.webhook_id,
        workspace_id: p.workspaceId,
        event,
        subject_id: req.subjectId,
        body,
      };
      await enqueue(tx, {
        topic: WEBHOOK_TOPIC,
        key: hook.webhook_id,
        id: deliveryId,
        payload: { ...message },
      });
    }
    return hooks.length;
  });
  return { queued };
}

async function listWebhookDeliveries(
  d: WebhookHandlerDeps,
  req: Req<'listWebhookDeliveries'>,
  ctx: HandlerContext,
): Res<'listWebhookDeliveries'> {
  const p = principalOf(ctx);
  // 1 to 200 by the request's field rule; 0 asks for the default.
  const limit = req.limit === 0 ? 50 : req.limit;
  const rows = await listDeliveries(d.pool, p.workspaceId, limit);
  return {
    deliveries: rows.map((r) => ({
      deliveryId: r.delivery_id,
      webhookId: r.webhook_id,
      url: r.url,
      event: r.event,
      subjectId: r.subject_id,
      attempt: r.attempt,
      outcome: r.outcome,
      responseStatus: r.response_status ?? 0,
      error: r.error ?? '',
      at: r.at.toISOString(),
    })),
  };
}
