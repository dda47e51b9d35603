/**
 * What a webhook is and what it is sent: the events, the checks of a registration, the bodies
 * (the adsmcp JSON, or a Slack-compatible message) and the signature. Pure: no I/O.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { InvalidArgumentError } from '@adsmcp/runtime/errors';

/** The events of a change a webhook may ask for, and the status of the change each one reports. */
export const CHANGE_EVENTS = {
  'change.awaiting_approval': 'prepared',
  'change.approved': 'approved',
  'change.rejected': 'rejected',
  'change.applied': 'applied',
  'change.failed': 'failed',
  'change.expired': 'expired',
} as const;

export type ChangeEvent = keyof typeof CHANGE_EVENTS;
/** Events other services record (RecordWebhookEvent): the optimizer's proposals. */
export const PROPOSAL_EVENTS = ['proposal.awaiting_approval'] as const;
export type ProposalEvent = (typeof PROPOSAL_EVENTS)[number];
/** The marketing service's: a performance import ended, completed or failed. */
export const IMPORT_EVENTS = ['import.finished'] as const;
export type ImportEvent = (typeof IMPORT_EVENTS)[number];
export const IMPORT_STATUSES = ['completed', 'failed'] as const;
export type ImportStatus = (typeof IMPORT_STATUSES)[number];
export type WebhookEvent = ChangeEvent | ProposalEvent | ImportEvent;
const ALL_EVENTS: readonly string[] = [...Object.keys(CHANGE_EVENTS), ...PROPOSAL_EVENTS, ...IMPORT_EVENTS];
export const WEBHOOK_FORMATS = ['json', 'slack'] as const;
export type WebhookFormat = (typeof WEBHOOK_FORMATS)[number];

/** The header names a receiver reads. */
export const SIGNATURE_HEADER = 'x-adsmcp-signature';
export const DELIVERY_HEADER = 'x-adsmcp-delivery';
export const EVENT_HEADER = 'x-adsmcp-event';

/** A workspace keeps at most this many webhooks. */
export const MAX_WEBHOOKS = 20;
const MAX_URL_LENGTH = 2048;

export function isChangeEvent(name: string): name is ChangeEvent {
  return Object.hasOwn(CHANGE_EVENTS, name);
}

export function isProposalEvent(name: string): name is ProposalEvent {
  return (PROPOSAL_EVENTS as readonly string[]).includes(name);
}

export function isImportEvent(name: string): name is ImportEvent {
  return (IMPORT_EVENTS as readonly string[]).includes(name);
}

/** The events of a registration, checked: at least one, each known, none twice. */
export function checkEvents(events: readonly string[]): WebhookEvent[] {
  if (events.length === 0) {
    throw new InvalidArgumentError(`events must name at least one of ${ALL_EVENTS.join(', ')}`);
  }
  const seen = new Set<string>();
  events.forEach((e, i) => {
    if (!ALL_EVENTS.includes(e)) {
      throw new InvalidArgumentError(
        `events[${i}] must be one of ${ALL_EVENTS.join(', ')} (got ${JSON.stringify(e.slice(0, 80))})`,
      );
    }
    if (seen.has(e)) throw new InvalidArgumentError(`events[${i}] names ${e} a second time`);
    seen.add(e);
  });
  return [...seen] as WebhookEvent[];
}

export function checkFormat(format: string): WebhookFormat {
  const f = format === '' ? 'json' : format;
  if (!(WEBHOOK_FORMATS as readonly string[]).includes(f)) {
    throw new InvalidArgumentError(
      `format must be json or slack (got ${JSON.stringify(format.slice(0, 40))})`,
    );
  }
  return f as WebhookFormat;
}

/** The URL's length bound; the request-forgery rules are the safe fetcher's (checkUrl). */
export function checkUrlLength(url: string): void {
  if (url.length === 0) throw new InvalidArgumentError('url is required');
  if (url.length > MAX_URL_LENGTH) {
    throw new InvalidArgumentError(`url must be at most ${MAX_URL_LENGTH} characters (got ${url.length})`);
  }
}

/** A new signing secret: 32 random bytes, prefixed so that a person can tell what it is. */
export function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

/** `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">` (docs/webhooks.md shows how to verify it). */
export function signature(secret: string, unixSeconds: number, body: string): string {
  const mac = createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex');
  return `t=${unixSeconds},v1=${mac}`;
}

/** What an event says about its change: no actor, credential or token, only what a reviewer needs. */
export interface ChangeFacts {
  change_id: string;
  account_id: string;
  tool: string;
  summary: string;
  error: string | null;
  reject_reason: string | null;
}

export interface EventFacts {
  deliveryId: string;
  event: ChangeEvent;
  occurredAt: Date;
  workspaceId: string;
  change: ChangeFacts;
  reviewUrl: string;
}

/** The adsmcp JSON body of an event. */
export function jsonBody(e: EventFacts): string {
  return JSON.stringify({
    id: e.deliveryId,
    event: e.event,
    occurred_at: e.occurredAt.toISOString(),
    workspace_id: e.workspaceId,
    change: {
      id: e.change.change_id,
      status: CHANGE_EVENTS[e.event],
      summary: e.change.summary,
      account_id: e.change.account_id,
      tool: e.change.tool,
      review_url: e.reviewUrl,
      ...(e.event === 'change.failed' && e.change.error ? { error: e.change.error } : {}),
      ...(e.event === 'change.rejected' && e.change.reject_reason
        ? { reject_reason: e.change.reject_reason }
        : {}),
    },
  });
}

const HEADLINES: Record<ChangeEvent, string> = {
  'change.awaiting_approval': 'A change awaits approval',
  'change.approved': 'A change was approved',
  'change.rejected': 'A change was rejected',
  'change.applied': 'A change was applied',
  'change.failed': 'A change failed',
  'change.expired': 'A change expired',
};

/** Slack's mrkdwn gives &, < and > meaning; these three are escaped as Slack documents. */
function slackText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** A Slack-compatible incoming-webhook body: one text with the summary and a link to the review page. */
export function slackBody(e: EventFacts): string {
  const text = `*${HEADLINES[e.event]}*: ${slackText(e.change.summary)}\n<${e.reviewUrl}|Review it in the dashboard>`;
  return JSON.stringify({ text });
}

export function bodyFor(format: WebhookFormat, e: EventFacts): string {
  return format === 'slack' ? slackBody(e) : jsonBody(e);
}

/** The dashboard's review page of a change, under the base URL the webhook was registered with. */
export function reviewUrl(baseUrl: string, changeId: string): string {
  return new URL(`/dashboard/changes/${encodeURIComponent(changeId)}`, baseUrl).toString();
}

/** What a proposal event says: the proposal, its account, what a person reads, its review page. */
export interface ProposalFacts {
  deliveryId: string;
  event: ProposalEvent;
  occurredAt: Date;
  workspaceId: string;
  proposalId: string;
  accountId: string;
  summary: string;
  reviewUrl: string;
}

export function proposalBodyFor(format: WebhookFormat, e: ProposalFacts): string {
  if (format === 'slack') {
    return JSON.stringify({
      text: `*A proposal awaits approval*: ${slackText(e.summary)}\n<${e.reviewUrl}|Review it in the dashboard>`,
    });
  }
  return JSON.stringify({
    id: e.deliveryId,
    event: e.event,
    occurred_at: e.occurredAt.toISOString(),
    workspace_id: e.workspaceId,
    proposal: {
      id: e.proposalId,
      status: 'pending_review',
      summary: e.summary,
      account_id: e.accountId,
      review_url: e.reviewUrl,
    },
  });
}

/** What an import event says: the import, how it ended and what a person reads. No review page: the dashboard has none. */
export interface ImportFacts {
  deliveryId: string;
  event: ImportEvent;
  occurredAt: Date;
  workspaceId: string;
  importId: string;
  status: ImportStatus;
  summary: string;
}

export function importBodyFor(format: WebhookFormat, e: ImportFacts): string {
  if (format === 'slack') {
    const headline =
      e.status === 'completed' ? 'A performance import finished' : 'A performance import failed';
    return JSON.stringify({ text: `*${headline}*: ${slackText(e.summary)}` });
  }
  return JSON.stringify({
    id: e.deliveryId,
    event: e.event,
    occurred_at: e.occurredAt.toISOString(),
    workspace_id: e.workspaceId,
    import: { id: e.importId, status: e.status, summary: e.summary },
  });
}
