/**
 * The audit log's events, gathered from where each is recorded: prepare, approval, rejection and
 * apply from the changes service's changes; connections, roles, features, spend guards, proposal
 * decisions and sign-ins from the gateway's own audit table. Both become one list, newest first.
 * An event names the person and the connection by name, never a credential or its id.
 */
import type { Change } from '@adsmcp/proto/changes/v1/changes_pb';
import { isUuid } from '@adsmcp/runtime/ids';
import type { AuditRow } from '../store/dashboard-store.ts';
import { actorText, type People, parseActor } from './change-actors.ts';

export interface AuditEvent {
  /** ISO instant. */
  at: string;
  /** What happened, in words (e.g. "change approved"). */
  what: string;
  /** Who did it, in words. */
  who: string;
  /** The person's user id, when a person did it. */
  personId?: string;
  /** The MCP connection it came through, by name. */
  connection?: string;
  accountId?: string;
  /** What it was done to, in words. */
  object: string;
  /** More, in words (a summary, a reason, the platform's answer). */
  detail: string;
  /** Where to read more on the dashboard. */
  link?: string;
  /** Breaks ties between events at the same instant, so pages are stable. */
  key: string;
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

/** The connection an actor recorded by the changes service came through (`... (<credential id>)`). */
function connectionOf(actor: string, ctx: AuditContext): string | undefined {
  const id = /\(([^()]*)\)\s*$/.exec(actor)?.[1]?.toLowerCase();
  return id && isUuid(id) ? ctx.connections.get(id)?.name : undefined;
}

function changeEvent(
  c: Change,
  ctx: AuditContext,
  at: string,
  actor: string,
  what: string,
  detail: string,
): AuditEvent {
  return {
    at,
    what,
    who: actor === '' ? 'someone not recorded' : actorText(actor, ctx.people),
    personId: parseActor(actor).userId,
    connection: connectionOf(actor, ctx),
    accountId: c.accountId,
    object: c.targetPath,
    detail,
    link: `/dashboard/changes/${c.changeId}`,
    key: `${c.changeId}:${what}`,
  };
}

/** The platform's answer to an applied or failed change, in a line. */
function platformAnswer(c: Change): string {
  const status = c.upstreamStatus
    ? `the platform answered HTTP ${c.upstreamStatus}`
    : 'no answer from the platform';
  return c.error ? `${status}: ${c.error}` : status;
}

/** The events of one change: prepared, approved or rejected, apply requested, applied or failed. */
export function changeEvents(c: Change, ctx: AuditContext): AuditEvent[] {
  const out = [changeEvent(c, ctx, c.preparedAt, c.preparedBy, 'change prepared', c.summary)];
  if (c.approvedAt) out.push(changeEvent(c, ctx, c.approvedAt, c.approvedBy, 'change approved', c.summary));
  if (c.rejectedAt)
    out.push(changeEvent(c, ctx, c.rejectedAt, c.rejectedBy, 'change rejected', `reason: ${c.rejectReason}`));
  if (c.applyRequestedAt)
    out.push(changeEvent(c, ctx, c.applyRequestedAt, c.applyRequestedBy, 'apply requested', c.summary));
  if (c.status === 'applied' && c.appliedAt)
    out.push(changeEvent(c, ctx, c.appliedAt, 'worker:apply', 'change applied', platformAnswer(c)));
  // A failure is not timed by the changes service: it is shown at the apply request it followed.
  if (c.status === 'failed')
    out.push(
      changeEvent(
        c,
        ctx,
        c.applyRequestedAt || c.preparedAt,
        'worker:apply',
        'apply failed',
        platformAnswer(c),
      ),
    );
  return out;
}

const ACTIONS: Record<string, string> = {
  'credential.created': 'token created',
  'credential.revoked': 'connection revoked',
  'workspace.feature_enabled': 'feature turned on',
  'workspace.feature_disabled': 'feature turned off',
  'workspace.created': 'workspace created',
  'member.role_changed': 'role changed',
  'account.spend_guard_set': 'spend guard set',
  'proposal.approved': 'proposal approved',
  'proposal.rejected': 'proposal rejected',
  'user.signed_in': 'signed in to the dashboard',
};

/**
 * The gateway's own decisions on changes are also in the changes service's record, with the
 * connection they came from; they are read from there only, so each shows once.
 */
const RECORDED_BY_CHANGES = new Set(['change.approved', 'change.rejected']);

const text = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? String(v) : '');

/** Who did a gateway audit row's action: a person, a connection (by its owner), or an operator. */
function rowActor(r: AuditRow, ctx: AuditContext): Pick<AuditEvent, 'who' | 'personId' | 'connection'> {
  const [kind, id = ''] = r.actor.split(/:(.*)/s, 2) as [string, string?];
  if (kind === 'user' && isUuid(id)) {
    const personId = id.toLowerCase();
    return {
      who: `${ctx.people.get(personId) ?? 'a former member of this workspace'}, in the dashboard`,
      personId,
    };
  }
  if (kind === 'credential' && isUuid(id)) {
    const c = ctx.connections.get(id.toLowerCase());
    const email = c ? ctx.people.get(c.userId.toLowerCase()) : undefined;
    return {
      who: `${email ?? 'a former member of this workspace'}, through an MCP client`,
      personId: c?.userId.toLowerCase(),
      connection: c?.name,
    };
  }
  return { who: kind === 'operator' ? 'An operator command' : 'someone not recorded' };
}

/** What a gateway audit row was done to, and its detail, in words. */
function rowObject(
  r: AuditRow,
  ctx: AuditContext,
): Pick<AuditEvent, 'object' | 'detail' | 'accountId' | 'link'> {
  const target = (r.target ?? '').toLowerCase();
  const d = r.detail ?? {};
  switch (r.action) {
    case 'credential.created':
    case 'credential.revoked': {
      const name = ctx.connections.get(target)?.name ?? text(d.name);
      const scopes = Array.isArray(d.scopes) ? `scopes ${d.scopes.map(text).join(', ')}` : '';
      const forWhom = text(d.user) ? `for ${text(d.user)}` : '';
      return {
        object: `connection “${name || 'no longer listed'}”`,
        detail: [scopes, forWhom].filter(Boolean).join('; '),
      };
    }
    case 'workspace.feature_enabled':
    case 'workspace.feature_disabled':
      return { object: `feature ${text(d.feature)}`, detail: '' };
    case 'member.role_changed':
      return {
        object: `member ${ctx.people.get(target) ?? 'a former member of this workspace'}`,
        detail: `${text(d.from)} → ${text(d.to)}`,
      };
    case 'account.spend_guard_set': {
      const cap = (v: unknown) => (text(v) ? `${text(v)} micros` : 'no cap');
      return {
        object: 'spend guard',
        accountId: target,
        detail: `daily budget cap ${cap(d.max_daily_budget_micros)}; bid cap ${cap(d.max_bid_micros)}`,
      };
    }
    case 'proposal.approved':
    case 'proposal.rejected':
      return { object: `proposal ${target}`, detail: text(d.reason), link: `/dashboard/proposals/${target}` };
    default:
      return { object: '', detail: '' };
  }
}

/** The events of the gateway's audit rows (less those the changes service records). */
export function gatewayEvents(rows: readonly AuditRow[], ctx: AuditContext): AuditEvent[] {
  return rows
    .filter((r) => !RECORDED_BY_CHANGES.has(r.action))
    .map((r) => ({
      at: r.at.toISOString(),
      what: ACTIONS[r.action] ?? r.action,
      ...rowActor(r, ctx),
      ...rowObject(r, ctx),
      key: `audit:${r.id}`,
    }));
}

/** Newest first; events at the same instant in a fixed order. */
export function mergeByTime(...lists: AuditEvent[][]): AuditEvent[] {
  return lists.flat().sort((a, b) => {
    const t = Date.parse(b.at) - Date.parse(a.at);
    return t !== 0 ? t : a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
  });
}

export interface AuditFilter {
  accountId: string;
  /** Part of the object's words, the change id or the connection's name; case-insensitive. */
  object: string;
  personId: string;
}

export function matches(e: AuditEvent, f: AuditFilter): boolean {
  if (f.accountId && e.accountId?.toLowerCase() !== f.accountId.toLowerCase()) return false;
  if (f.personId && e.personId !== f.personId.toLowerCase()) return false;
  if (f.object) {
    const needle = f.object.toLowerCase();
    const hay = [e.object, e.link ?? '', e.connection ?? '', e.detail].join('\n').toLowerCase();
    if (!hay.includes(needle)) return false;
  }
  return true;
}
