/**
 * The audit log's rows in words. Every event is a row of the workspace's hash-chained log in the
 * changes service (docs/audit.md): changes, approvals, standards, spend guards and expiry settings
 * appended by the changes service itself; tokens, connections, roles, features, sign-ins and
 * proposal decisions relayed from the gateway's own records. An event names the person and the
 * connection by name, never a credential or its id.
 */
import type { AuditEvent as LogRow } from '@adsmcp/proto/changes/v1/audit_pb';
import {
  type Change,
  ChangeResolution,
  ChangeResolutionSchema,
  ChangeSchema,
} from '@adsmcp/proto/changes/v1/changes_pb';
import { enumValue, enumWords } from '@adsmcp/runtime/enum-words';
import { isUuid } from '@adsmcp/runtime/ids';
import { isRecord } from '@adsmcp/runtime/json';
import { shownUrl } from '@adsmcp/runtime/shown-url';
import { showHidden } from '@adsmcp/runtime/text';
import { create } from '@bufbuild/protobuf';
import { resolutionWord } from '../catalogue/change-view.ts';
import { actorText, type People } from './change-actors.ts';
import { shownSummary } from './shown-values.ts';

export interface AuditEvent {
  /** Its place in the workspace's log. */
  seq: bigint;
  /** ISO instant. */
  at: string;
  /** What happened, in words (e.g. "change approved"). */
  what: string;
  /** Who did it, in words. */
  who: string;
  /** The MCP connection it came through, by name. */
  connection?: string;
  accountId?: string;
  /** What it was done to, in words. */
  object: string;
  /** More, in words (a summary, a reason, the platform's answer). */
  detail: string;
  /**
   * The detail is already shown for a person (a change's summary, whose spaces the changes service
   * showed as `␣` and `⟨U+00A0⟩`): a page escapes it without spelling out those tokens again.
   */
  detailShown?: boolean;
  /** Where to read more on the dashboard. */
  link?: string;
}

/** A workspace connection: its name and whose it is. */
export interface ConnectionInfo {
  name: string;
  userId: string;
}

export interface AuditContext {
  people: People;
  connections: ReadonlyMap<string, ConnectionInfo>;
}

const text = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? String(v) : '');
const FORMER = 'a former member of this workspace';

/**
 * Who acted, in words, from the actor as it was recorded: the changes service's
 * `user:<id> via <channel> (<credential>)` (or without the credential), or the gateway's
 * `user:<id>` (in the dashboard), `credential:<id>` (a connection), `operator`.
 */
function whoOf(actor: string, ctx: AuditContext): Pick<AuditEvent, 'who' | 'connection'> {
  const [kind, id = ''] = actor.split(/:(.*)/s, 2) as [string, string?];
  if (kind === 'user' && isUuid(id))
    return { who: `${ctx.people.get(id.toLowerCase()) ?? FORMER}, in the dashboard` };
  if (kind === 'credential' && isUuid(id)) {
    const c = ctx.connections.get(id.toLowerCase());
    const email = c ? ctx.people.get(c.userId.toLowerCase()) : undefined;
    return { who: `${email ?? FORMER}, through an MCP client`, connection: c?.name };
  }
  if (actor === 'operator') return { who: 'An operator command' };
  // The changes service's form; `user:<id> via <channel>` alone is read as if it named a credential.
  const full = /\(([^()]*)\)\s*$/.test(actor) ? actor : actor.replace(/^(user:\S+ via \w+)$/, '$1 ()');
  const credential = /\(([^()]*)\)\s*$/.exec(full)?.[1]?.toLowerCase();
  const connection = credential && isUuid(credential) ? ctx.connections.get(credential)?.name : undefined;
  const who = actorText(full, ctx.people);
  return { who: who === '' ? 'someone not recorded' : who, ...(connection && { connection }) };
}

/** The apply worker's refusals before sending anything (changes service: apply-worker.ts). */
const REFUSED_BEFORE_SENDING = 'refused before applying, nothing was sent to the ad account';
const STALE_PLAN = 'the object changed since this change was prepared';

/** The platform's answer to an applied or failed change, in a line. */
function platformAnswer(c: Change): string {
  if (!c.upstreamStatus && c.error) {
    // Refused by the worker before anything was sent: there was no question, so no answer.
    if (c.error.startsWith(REFUSED_BEFORE_SENDING)) return c.error;
    if (c.error.startsWith(STALE_PLAN)) return `${REFUSED_BEFORE_SENDING}: ${c.error}`;
  }
  const status = c.upstreamStatus
    ? `the platform answered HTTP ${c.upstreamStatus}`
    : 'no answer from the platform';
  const differs =
    c.appliedDifferences.length === 0
      ? ''
      : `; it differs from what was approved in ${c.appliedDifferences.join('; ')}`;
  return c.error ? `${status}: ${c.error}` : `${status}${differs}`;
}

/** A change's summary, then more words about it: shown for a person (AuditEvent.detailShown). */
const aboutSummary = (c: Change, more = '') => shownSummary(c.summary) + showHidden(more);

type Words = Pick<AuditEvent, 'what' | 'detail' | 'detailShown'>;

/** Each kind of change event: what it is called and its detail. */
const CHANGE_KINDS: Record<string, (c: Change) => Words> = {
  prepared: (c) => ({ what: 'change prepared', detail: aboutSummary(c), detailShown: true }),
  approved: (c) => ({ what: 'change approved', detail: aboutSummary(c), detailShown: true }),
  rejected: (c) => ({ what: 'change rejected', detail: `reason: ${c.rejectReason}` }),
  apply_requested: (c) => ({ what: 'apply requested', detail: aboutSummary(c), detailShown: true }),
  apply_retried: (c) => ({
    what: 'apply requested again',
    detail: aboutSummary(
      c,
      ' (sent again with the same idempotency key: the earlier apply’s outcome was unknown)',
    ),
    detailShown: true,
  }),
  outcome_settled: (c) => ({
    what:
      resolutionWord(c) === 'send_again'
        ? 'outcome settled: send again'
        : `outcome settled: ${resolutionWord(c) === 'applied' ? 'applied' : 'not applied'}`,
    detail: aboutSummary(c, c.resolutionNote ? `; note: ${c.resolutionNote}` : ''),
    detailShown: true,
  }),
  applied: (c) => ({ what: 'change applied', detail: platformAnswer(c) }),
  failed: (c) => ({ what: 'apply failed', detail: platformAnswer(c) }),
};

/** The change a change event's details describe. */
function changeOf(d: Record<string, unknown>): Change {
  return create(ChangeSchema, {
    changeId: text(d.change_id),
    accountId: text(d.account_id),
    targetPath: text(d.target_path),
    summary: text(d.summary),
    rejectReason: text(d.reason),
    upstreamStatus: typeof d.upstream_status === 'number' ? d.upstream_status : undefined,
    error: text(d.error),
    appliedDifferences: Array.isArray(d.applied_differences) ? d.applied_differences.map(text) : [],
    resolvedAs: enumWords(ChangeResolutionSchema).includes(text(d.resolution))
      ? enumValue(ChangeResolutionSchema, text(d.resolution))
      : ChangeResolution.UNSPECIFIED,
    resolutionNote: text(d.note),
  });
}

/** What the gateway's own kinds are called. */
const GATEWAY_KINDS: Record<string, string> = {
  'credential.created': 'token created',
  'credential.revoked': 'connection revoked',
  'workspace.feature_enabled': 'feature turned on',
  'workspace.feature_disabled': 'feature turned off',
  'workspace.created': 'workspace created',
  'member.role_changed': 'role changed',
  'proposal.approved': 'proposal approved',
  'proposal.rejected': 'proposal rejected',
  'user.signed_in': 'signed in to the dashboard',
};

const cap = (v: unknown) => (text(v) ? `${text(v)} micros` : 'no cap');

type Described = Pick<AuditEvent, 'what' | 'object' | 'detail' | 'detailShown' | 'accountId' | 'link'>;

/** What an event was done to, what it is called and its detail, by kind. */
function described(
  r: Pick<LogRow, 'kind' | 'subject'>,
  d: Record<string, unknown>,
  ctx: AuditContext,
): Described {
  const [area = '', verb = ''] = r.kind.split(/\.(.*)/s, 2);
  if (area === 'change') return changeEvent(verb, d);
  const known = namedKindEvent(r, d, ctx);
  if (known !== undefined) return known;
  if (area === 'account' || r.kind === 'workspace.frozen' || r.kind === 'workspace.unfrozen')
    return controlEvent(r, d);
  if (area === 'webhook') return webhookEvent(verb, d);
  if (r.kind.startsWith('standard.change_')) return standardChangeEvent(r, d);
  if (area === 'standard') return standardEvent(verb, r.subject.toLowerCase(), d);
  // A kind this gateway does not know yet is shown by its name, so no event is hidden.
  return { what: GATEWAY_KINDS[r.kind] ?? r.kind.replace(/[._]/g, ' '), object: r.subject, detail: '' };
}

function changeEvent(verb: string, d: Record<string, unknown>): Described {
  const c = changeOf(d);
  const words = CHANGE_KINDS[verb]?.(c) ?? { what: `change ${verb}`, detail: '' };
  return {
    ...words,
    accountId: c.accountId,
    object: c.targetPath,
    link: `/dashboard/changes/${c.changeId}`,
  };
}

/** The kinds described one by one: settings, the log's own, spend guards and the gateway's. */
function namedKindEvent(
  r: Pick<LogRow, 'kind' | 'subject'>,
  d: Record<string, unknown>,
  ctx: AuditContext,
): Described | undefined {
  const subject = r.subject.toLowerCase();
  switch (r.kind) {
    case 'expiry.set':
      return {
        what: 'change expiry set',
        object: 'workspace settings',
        detail: `a prepared change expires ${text(d.prepared_valid_hours)} hours after it was prepared; an approval, ${text(d.approval_valid_hours)} hours after it was given unless an apply was requested`,
        link: '/dashboard/settings',
      };
    case 'audit.backfilled':
      return {
        what: 'earlier records added to the log',
        object: 'audit log',
        detail: `${text(d.events)} events recorded before ${text(d.before)}, added from the changes and settings as they are now`,
      };
    case 'audit.relay_refused':
      return {
        what: 'a gateway record the log refused',
        object: text(d.action),
        detail: text(d.reason),
      };
    case 'spend_guard.set':
      return {
        what: 'spend guard set',
        object: 'spend guard',
        accountId: text(d.account_id),
        detail: `daily budget cap ${cap(d.max_daily_budget_micros)}; bid cap ${cap(d.max_bid_micros)}`,
      };
    case 'credential.created':
    case 'credential.revoked': {
      const name = ctx.connections.get(subject)?.name ?? text(d.name);
      const scopes = Array.isArray(d.scopes) ? `scopes ${d.scopes.map(text).join(', ')}` : '';
      const forWhom = text(d.user) ? `for ${text(d.user)}` : '';
      // The OAuth sweep says why it revoked a connection nobody revoked by hand.
      const why = text(d.reason) ? `revoked because ${text(d.reason)}` : '';
      return {
        what: GATEWAY_KINDS[r.kind] ?? r.kind,
        object: `connection “${name || 'no longer listed'}”`,
        detail: [scopes, forWhom, why].filter(Boolean).join('; '),
      };
    }
    case 'workspace.feature_enabled':
    case 'workspace.feature_disabled':
      return { what: GATEWAY_KINDS[r.kind] ?? r.kind, object: `feature ${text(d.feature)}`, detail: '' };
    case 'member.role_changed':
      return {
        what: 'role changed',
        object: `member ${ctx.people.get(subject) ?? FORMER}`,
        detail: `${text(d.from)} → ${text(d.to)}`,
      };
    case 'proposal.approved':
    case 'proposal.rejected':
      return {
        what: GATEWAY_KINDS[r.kind] ?? r.kind,
        object: `proposal ${subject}`,
        detail: text(d.reason),
        link: `/dashboard/proposals/${subject}`,
      };
  }
  return undefined;
}

function standardChangeEvent(r: Pick<LogRow, 'kind' | 'subject'>, d: Record<string, unknown>): Described {
  const loosenings = Array.isArray(d.loosenings) ? d.loosenings.map(text).filter(Boolean) : [];
  const step = r.kind.slice('standard.change_'.length);
  return {
    what: `loosening of a standard ${STANDARD_CHANGE_STEPS[step] ?? step.replace(/_/g, ' ')}`,
    object: `standard “${text(d.name) || r.subject}”`,
    accountId: text(d.account_id),
    detail: [
      text(d.action) ? `${text(d.action)} of revision ${text(d.base_revision)}` : '',
      loosenings.join('; '),
      text(d.requested_by) ? `asked by ${text(d.requested_by)}` : '',
    ]
      .filter(Boolean)
      .join(' — '),
    link: text(d.account_id)
      ? `/dashboard/accounts/${text(d.account_id)}#pending-standard-changes`
      : undefined,
  };
}

function standardEvent(verb: string, subject: string, d: Record<string, unknown>): Described {
  const name = text(d.name);
  return {
    what: `account standard ${verb.replace(/_/g, ' ')}`,
    object: `standard “${name || subject}”`,
    accountId: text(d.account_id),
    detail: text(d.revision) ? `revision ${text(d.revision)}` : '',
  };
}

/** What a pending standard change's steps are called. */
const STANDARD_CHANGE_STEPS: Record<string, string> = {
  pending: 'waits for a person',
  confirmed: 'confirmed',
  rejected: 'rejected',
};

const micros = (v: unknown) => (text(v) ? `${text(v)} micros` : 'none');

/** A spend envelope set, or a freeze and its lift (of an account, or of the whole workspace). */
function controlEvent(
  r: Pick<LogRow, 'kind' | 'subject'>,
  d: Record<string, unknown>,
): Pick<AuditEvent, 'what' | 'object' | 'detail' | 'accountId' | 'link'> {
  const accountId = text(d.account_id);
  const where = accountId
    ? { object: 'ad account controls', accountId, link: `/dashboard/accounts/${accountId}/controls` }
    : { object: 'the whole workspace', link: '/dashboard/settings' };
  if (r.kind === 'account.spend_envelope_set') {
    const closed = d.fail_closed === true ? '; no envelope, no write' : '';
    return {
      what: 'spend envelope set',
      ...where,
      detail: `most the daily budgets may rise in 24 hours: ${micros(d.envelope_micros)}${closed} (was ${micros(d.previous_envelope_micros)}${d.previous_fail_closed === true ? ', no envelope, no write' : ''})`,
    };
  }
  const frozen = r.kind.endsWith('.frozen');
  return {
    what: `${d.scope === 'workspace' ? 'workspace' : 'ad account'} ${frozen ? 'frozen' : 'unfrozen'}`,
    ...where,
    detail: [text(d.reason), frozen ? '' : `frozen since ${text(d.frozen_at)} by ${text(d.frozen_by)}`]
      .filter(Boolean)
      .join(' — '),
  };
}

/** A webhook registered or deleted, or one delivery's outcome. */
function webhookEvent(
  verb: string,
  d: Record<string, unknown>,
): Pick<AuditEvent, 'what' | 'object' | 'detail' | 'link'> {
  const object = `webhook ${text(d.webhook_id)}`;
  if (verb === 'registered' || verb === 'deleted') {
    const events = Array.isArray(d.events) ? d.events.map(text).join(', ') : '';
    return {
      what: `webhook ${verb}`,
      object,
      // Entries recorded before URLs were kept to their origin are cut here too (shown-url.ts).
      detail: [
        shownUrl(text(d.url)),
        events && `events ${events}`,
        text(d.format) && `format ${text(d.format)}`,
      ]
        .filter(Boolean)
        .join('; '),
      link: '/dashboard/webhooks',
    };
  }
  const outcome: Record<string, string> = {
    delivered: 'webhook delivered',
    failed: 'webhook delivery failed (to be retried)',
    gave_up: 'webhook delivery given up',
  };
  return {
    what: outcome[verb] ?? `webhook ${verb.replace(/_/g, ' ')}`,
    object,
    detail: [
      text(d.event),
      text(d.subject_id),
      `attempt ${text(d.attempt)}`,
      text(d.response_status) ? `answered ${text(d.response_status)}` : '',
      text(d.error),
    ]
      .filter(Boolean)
      .join('; '),
    link: '/dashboard/webhooks',
  };
}

/** One row of the log in words. */
export function auditEventOf(r: LogRow, ctx: AuditContext): AuditEvent {
  let details: unknown;
  try {
    details = JSON.parse(r.detailsJson);
  } catch {
    details = {};
  }
  const d = isRecord(details) ? details : {};
  return {
    seq: r.seq,
    at: r.at,
    ...whoOf(r.actor, ctx),
    ...described(r, d, ctx),
  };
}

/**
 * The actor prefixes of a person's events: themself in the dashboard (the gateway's `user:<id>`,
 * the changes service's `user:<id> via …`) and each of their connections.
 */
export function actorsOf(personId: string, connections: ReadonlyMap<string, ConnectionInfo>): string[] {
  const person = personId.toLowerCase();
  return [
    `user:${person}`,
    ...[...connections]
      .filter(([, c]) => c.userId.toLowerCase() === person)
      .map(([id]) => `credential:${id}`),
  ];
}

/** One row of the log as a line of the JSON Lines export: every field, so the chain can be checked. */
export function exportLine(r: LogRow): string {
  let details: unknown;
  try {
    details = JSON.parse(r.detailsJson);
  } catch {
    details = r.detailsJson;
  }
  return `${JSON.stringify({
    seq: r.seq.toString(),
    at: r.at,
    actor: r.actor,
    kind: r.kind,
    subject: r.subject,
    details,
    source_key: r.sourceKey || null,
    prev_hash: r.prevHash,
    hash: r.hash,
  })}\n`;
}
