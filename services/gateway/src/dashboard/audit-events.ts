/**
 * The audit log's events, gathered from where each is recorded: prepare, approval, rejection and
 * apply from the changes service's changes; connections, roles, features, spend guards, proposal
 * decisions and sign-ins from the gateway's own audit table. Both become one list, newest first.
 * An event names the person and the connection by name, never a credential or its id.
 */
import { type Change, ChangeSchema, type ExpirySettings } from '@adsmcp/proto/changes/v1/changes_pb';
import { isUuid } from '@adsmcp/runtime/ids';
import { showHidden } from '@adsmcp/runtime/text';
import { create } from '@bufbuild/protobuf';
import type { AuditRow } from '../store/dashboard-store.ts';
import { actorText, type People, parseActor } from './change-actors.ts';
import { shownSummary } from './shown-values.ts';

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
  /**
   * The detail is already shown for a person (a change's summary, whose spaces the changes service
   * showed as `␣` and `⟨U+00A0⟩`): a page escapes it without spelling out those tokens again.
   */
  detailShown?: boolean;
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

/** A change's event as the changes service lists it (ListChangeEvents). */
export interface ChangeEventInput {
  kind: string;
  at: string;
  key: string;
  change?: Change;
  /** For expiry_settings_changed: the workspace's expiry settings as they were set. */
  settings?: ExpirySettings;
}

/** A change of the workspace's expiry settings (the changes service records it) in words. */
function settingsEventOf(e: ChangeEventInput, s: ExpirySettings, ctx: AuditContext): AuditEvent {
  return {
    at: e.at,
    what: 'change expiry set',
    who: s.setBy === '' ? 'someone not recorded' : actorText(s.setBy, ctx.people),
    personId: parseActor(s.setBy).userId,
    connection: connectionOf(s.setBy, ctx),
    object: 'workspace settings',
    detail: `a prepared change expires ${s.preparedValidHours} hours after it was prepared; an approval, ${s.approvalValidHours} hours after it was given unless an apply was requested`,
    link: '/dashboard/settings',
    key: e.key,
  };
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

/** A change event in words: who did it, what it is called and its detail. */
interface ChangeWords {
  actor: string;
  what: string;
  detail: string;
  detailShown?: boolean;
}

/** Who did each kind of change event, what it is called and its detail. */
const CHANGE_KINDS: Record<string, (c: Change) => ChangeWords> = {
  prepared: (c) => ({
    actor: c.preparedBy,
    what: 'change prepared',
    detail: aboutSummary(c),
    detailShown: true,
  }),
  approved: (c) => ({
    actor: c.approvedBy,
    what: 'change approved',
    detail: aboutSummary(c),
    detailShown: true,
  }),
  rejected: (c) => ({ actor: c.rejectedBy, what: 'change rejected', detail: `reason: ${c.rejectReason}` }),
  apply_requested: (c) => ({
    actor: c.applyRequestedBy,
    what: 'apply requested',
    detail: aboutSummary(c),
    detailShown: true,
  }),
  apply_retried: (c) => ({
    actor: c.applyRetriedBy,
    what: 'apply requested again',
    detail: aboutSummary(
      c,
      ` (sent again with the same idempotency key: the earlier apply's outcome was unknown)${
        c.resolution === 'send_again' && c.resolutionNote ? `; note: ${c.resolutionNote}` : ''
      }`,
    ),
    detailShown: true,
  }),
  outcome_settled: (c) => ({
    actor: c.resolvedBy,
    what: `outcome settled: ${c.resolution === 'applied' ? 'applied' : 'not applied'}`,
    detail: aboutSummary(c, c.resolutionNote ? `; note: ${c.resolutionNote}` : ''),
    detailShown: true,
  }),
  applied: (c) => ({ actor: 'worker:apply', what: 'change applied', detail: platformAnswer(c) }),
  failed: (c) => ({ actor: 'worker:apply', what: 'apply failed', detail: platformAnswer(c) }),
};

/** One change event in words (a kind this gateway does not know is named as it is). */
export function changeEventOf(e: ChangeEventInput, ctx: AuditContext): AuditEvent {
  if (e.kind === 'expiry_settings_changed' && e.settings !== undefined)
    return settingsEventOf(e, e.settings, ctx);
  const c = e.change ?? create(ChangeSchema, {});
  const words =
    CHANGE_KINDS[e.kind] ?? ((): ChangeWords => ({ actor: '', what: `change ${e.kind}`, detail: '' }));
  const { actor, what, detail, detailShown } = words(c);
  return {
    at: e.at,
    what,
    who: actor === '' ? 'someone not recorded' : actorText(actor, ctx.people),
    personId: parseActor(actor).userId,
    connection: connectionOf(actor, ctx),
    accountId: c.accountId,
    object: c.targetPath,
    detail,
    ...(detailShown && { detailShown }),
    link: `/dashboard/changes/${c.changeId}`,
    key: e.key,
  };
}

/**
 * The events of one change, as the changes service lists them: prepared, approved or rejected,
 * apply requested (and requested again after an unknown outcome), applied or failed (a failure at
 * its latest apply request: it has no time of its own), and a person's settling of an unknown
 * outcome.
 */
export function changeEvents(c: Change, ctx: AuditContext): AuditEvent[] {
  const times: [string, string][] = [
    ['prepared', c.preparedAt],
    ['approved', c.approvedAt],
    ['rejected', c.rejectedAt],
    ['apply_requested', c.applyRequestedAt],
    ['apply_retried', c.applyRetriedAt],
    ['applied', c.status === 'applied' ? c.appliedAt : ''],
    [
      'failed',
      c.status === 'failed' || c.resolution === 'applied'
        ? c.applyRetriedAt || c.applyRequestedAt || c.preparedAt
        : '',
    ],
    ['outcome_settled', c.resolution === 'applied' || c.resolution === 'not_applied' ? c.resolvedAt : ''],
  ];
  return times.flatMap(([kind, at]) =>
    at ? [changeEventOf({ kind, at, key: `c:${c.changeId}:${kind}`, change: c }, ctx)] : [],
  );
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
export const RECORDED_BY_CHANGES: readonly string[] = ['change.approved', 'change.rejected'];

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
      // The OAuth sweep says why it revoked a connection nobody revoked by hand.
      const why = text(d.reason) ? `revoked because ${text(d.reason)}` : '';
      return {
        object: `connection “${name || 'no longer listed'}”`,
        detail: [scopes, forWhom, why].filter(Boolean).join('; '),
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
    .filter((r) => !RECORDED_BY_CHANGES.includes(r.action))
    .map((r) => ({
      at: r.at_text,
      what: ACTIONS[r.action] ?? r.action,
      ...rowActor(r, ctx),
      ...rowObject(r, ctx),
      key: r.key,
    }));
}

/** An instant as text that orders as time: UTC, with six fractional digits. */
export function sortableAt(at: string): string {
  const m = /^(.*T\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?Z$/.exec(at);
  return m ? `${m[1]}.${(m[2] ?? '').padEnd(6, '0')}Z` : new Date(at).toISOString().replace('Z', '000Z');
}

/** Whether `a` comes before `b` in the log: newer first, then the greater key (byte order). */
export function newerFirst(a: Pick<AuditEvent, 'at' | 'key'>, b: Pick<AuditEvent, 'at' | 'key'>): number {
  const at = sortableAt(a.at);
  const bt = sortableAt(b.at);
  if (at !== bt) return at > bt ? -1 : 1;
  return a.key > b.key ? -1 : a.key < b.key ? 1 : 0;
}

/** Newest first; events at the same instant in a fixed order (the sources' keyset order). */
export function mergeByTime(...lists: AuditEvent[][]): AuditEvent[] {
  return lists.flat().sort(newerFirst);
}

/** Where a page of the log starts: after the event with this time and key. */
export interface AuditCursor {
  at: string;
  key: string;
}

/** One source of the log: its events before `cursor`, newest first, at most `limit`. */
export type AuditSource = (cursor: AuditCursor | undefined, limit: number) => Promise<AuditEvent[]>;

/**
 * A page of the log merged from every source by keyset: each source is read in batches after the
 * cursor, its events filtered by `keep`, and the newest head taken until the page is full. Returns
 * the page and the cursor of the next one (undefined at the end).
 */
export async function auditPage(
  sources: readonly AuditSource[],
  cursor: AuditCursor | undefined,
  size: number,
  keep: (e: AuditEvent) => boolean,
  batch = 200,
): Promise<{ events: AuditEvent[]; next?: AuditCursor }> {
  const state = sources.map((read) => ({ read, after: cursor, buffer: [] as AuditEvent[], done: false }));
  const fill = async (s: (typeof state)[number]) => {
    while (s.buffer.length === 0 && !s.done) {
      const got = await s.read(s.after, batch);
      if (got.length < batch) s.done = true;
      const last = got.at(-1);
      if (last) s.after = { at: sortableAt(last.at), key: last.key };
      s.buffer.push(...got.filter(keep));
    }
  };
  const events: AuditEvent[] = [];
  while (events.length <= size) {
    await Promise.all(state.map(fill));
    const heads = state.filter((s) => s.buffer.length > 0);
    if (heads.length === 0) break;
    const newest = heads.reduce((a, b) =>
      newerFirst(a.buffer[0] as AuditEvent, b.buffer[0] as AuditEvent) <= 0 ? a : b,
    );
    events.push(newest.buffer.shift() as AuditEvent);
  }
  const last = events[size - 1];
  return events.length > size && last
    ? { events: events.slice(0, size), next: { at: sortableAt(last.at), key: last.key } }
    : { events };
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
