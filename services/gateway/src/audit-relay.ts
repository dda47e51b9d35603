/**
 * Carries the gateway's audit rows (tokens, connections, roles, features, sign-ins, proposal
 * decisions: every `insertAudit`, from the dashboard, the MCP tools, the OAuth server and the
 * admin command alike) into the workspace's hash-chained log in the changes service.
 *
 * The gateway's own `audit_log` table is the outbox: each row is written in the transaction of the
 * record it describes, and this relay appends it to the chained log with the key `g:<row id, 20
 * digits>`, which the changes service keeps once. So an event is not lost while the changes
 * service is down (it is appended when it is back) nor appended twice (by a retry or by another
 * replica). Rows are read by id; since ids are taken before their transactions commit, rows of the
 * last minute are looked at again, so a row committed after a higher id was relayed is not skipped.
 */
import type { AuditService, ListAuditEventsResponse } from '@adsmcp/proto/changes/v1/audit_pb';
import type { Queryable } from '@adsmcp/runtime/db';
import { repeatEvery } from '@adsmcp/runtime/lifecycle';
import type { Logger } from '@adsmcp/runtime/log';
import type { Principal } from '@adsmcp/runtime/principal';
import { type Client, Code, ConnectError } from '@connectrpc/connect';
import { onBehalfOf } from './deps.ts';

/**
 * Actions the changes service records itself, with more detail, in the same transaction as the
 * record: a dashboard approval or rejection, and a spend guard set.
 */
export const RECORDED_BY_CHANGES: readonly string[] = [
  'change.approved',
  'change.rejected',
  'account.spend_guard_set',
];

/** How often each replica relays. */
export const RELAY_EVERY_MS = 500;
/** Rows read per query. */
const BATCH = 500;
/** Rows this recent are read again (see the module's comment), at most so many. */
const RECENT_SECONDS = 60;
const RECENT_LIMIT = 5000;
/**
 * Workspaces whose log position a relay remembers, the least recently relayed forgotten first: a
 * forgotten one's position is read again from its log (positionOf), so the bound costs a call,
 * never a row, and the map does not grow with the number of workspaces ever seen.
 */
export const REMEMBERED_WORKSPACES = 10_000;

interface GatewayAuditRow {
  id: string;
  workspace_id: string;
  at: Date;
  actor: string;
  action: string;
  target: string | null;
  detail: Record<string, unknown>;
}

/** The source key of a gateway row: its id, zero-padded so keys order as ids do. */
export const sourceKeyOf = (id: string | bigint) => `g:${String(id).padStart(20, '0')}`;

/** The gateway relays as an operator of the row's workspace: the changes service takes appends only so. */
function relayPrincipal(workspaceId: string): Principal {
  return {
    workspaceId,
    credentialId: 'audit-relay',
    userId: null,
    role: 'admin',
    scopes: ['read', 'write'],
    via: 'operator',
  };
}

export interface AuditRelayOptions {
  pool: Queryable;
  audit: Client<typeof AuditService>;
  logger: Pick<Logger, 'info' | 'warn'>;
}

/** What one relay remembers between its runs. */
interface RelayState extends AuditRelayOptions {
  /** Per workspace, the highest row id known to be in its log (read from the log at first sight). */
  relayed: Map<string, bigint>;
  /** Rows of the last minute relayed by this replica, so the second look sends none again. */
  recent: Set<string>;
  after: bigint;
}

/** One relay: `run` relays every row not yet relayed (call it again after a failure). */
export function createAuditRelay({ pool, audit, logger }: AuditRelayOptions) {
  const state: RelayState = { pool, audit, logger, relayed: new Map(), recent: new Set(), after: -1n };
  return {
    /** Relays what is new, then looks again at the last minute's rows. Throws when a call fails. */
    run: (): Promise<number> => runRelay(state),
  };
}

async function runRelay(s: RelayState): Promise<number> {
  const sent = (await relayNew(s)) + (await relayRecentAgain(s));
  if (sent > 0) s.logger.info({ rows: sent }, 'audit rows relayed to the audit log');
  return sent;
}

/** Rows past the last one read, in batches, skipping those a workspace's log already holds. */
async function relayNew(s: RelayState): Promise<number> {
  let sent = 0;
  for (;;) {
    const rows = await read(s.pool, 'id > $2', [s.after.toString()]);
    const fresh: GatewayAuditRow[] = [];
    for (const r of rows) if (BigInt(r.id) > (await positionOf(s, r.workspace_id))) fresh.push(r);
    sent += await relay(s, fresh);
    const last = rows.at(-1);
    if (last) s.after = BigInt(last.id);
    if (rows.length < BATCH) break;
  }
  return sent;
}

/** The second look at the last minute's rows (see the module's comment). */
async function relayRecentAgain(s: RelayState): Promise<number> {
  const again = await read(
    s.pool,
    `at > now() - make_interval(secs => ${RECENT_SECONDS}) AND id <= $2`,
    [s.after.toString()],
    RECENT_LIMIT,
  );
  const seen = new Set(again.map((r) => r.id));
  for (const id of s.recent) if (!seen.has(id)) s.recent.delete(id);
  return relay(
    s,
    again.filter((r) => !s.recent.has(r.id)),
  );
}

/** Remembers a workspace's position as its most recent, forgetting the least recent past the bound. */
export function remember(relayed: Map<string, bigint>, workspaceId: string, position: bigint): void {
  relayed.delete(workspaceId);
  relayed.set(workspaceId, position);
  if (relayed.size > REMEMBERED_WORKSPACES) {
    const oldest = relayed.keys().next().value;
    if (oldest !== undefined) relayed.delete(oldest);
  }
}

async function positionOf(s: RelayState, workspaceId: string): Promise<bigint> {
  const known = s.relayed.get(workspaceId);
  if (known !== undefined) return known;
  const res: ListAuditEventsResponse = await s.audit.listAuditEvents(
    { limit: 1, sourcePrefix: 'g:' },
    onBehalfOf(relayPrincipal(workspaceId)),
  );
  const key = res.events[0]?.sourceKey ?? '';
  const position = /^g:\d{1,20}$/.test(key) ? BigInt(key.slice(2)) : 0n;
  remember(s.relayed, workspaceId, position);
  return position;
}

function read(pool: Queryable, where: string, params: unknown[], limit = BATCH): Promise<GatewayAuditRow[]> {
  return pool
    .query<GatewayAuditRow>(
      `SELECT id::text AS id, workspace_id, at, actor, action, target, detail FROM audit_log
          WHERE ${where} AND action <> ALL ($1::text[]) ORDER BY audit_log.id LIMIT ${limit}`,
      [[...RECORDED_BY_CHANGES], ...params],
    )
    .then((r) => r.rows);
}

/** Appends rows in one call per workspace and batch, in id order within each. */
async function relay(s: RelayState, rows: readonly GatewayAuditRow[]): Promise<number> {
  const byWorkspace = new Map<string, GatewayAuditRow[]>();
  for (const r of rows) {
    const list = byWorkspace.get(r.workspace_id);
    if (list) list.push(r);
    else byWorkspace.set(r.workspace_id, [r]);
  }
  for (const [workspaceId, all] of byWorkspace)
    for (let i = 0; i < all.length; i += BATCH) {
      const group = all.slice(i, i + BATCH);
      await append(s, workspaceId, group);
      for (const r of group) {
        const id = BigInt(r.id);
        if (id > (s.relayed.get(workspaceId) ?? 0n)) remember(s.relayed, workspaceId, id);
        s.recent.add(r.id);
      }
    }
  return rows.length;
}

function eventOf(r: GatewayAuditRow) {
  return {
    actor: r.actor,
    kind: r.action,
    subject: r.target ?? '',
    detailsJson: JSON.stringify(r.detail ?? {}),
    at: r.at.toISOString(),
    sourceKey: sourceKeyOf(r.id),
  };
}

/**
 * Appends one workspace's rows in one call. A row the log refuses (a field past its rule) must
 * not hold back the others for ever: the rows are then sent one by one, and a refused one is
 * recorded in its place, under its key, as `audit.relay_refused` with the action and the reason.
 */
async function append(s: RelayState, workspaceId: string, group: readonly GatewayAuditRow[]): Promise<void> {
  const as = onBehalfOf(relayPrincipal(workspaceId));
  try {
    await s.audit.appendAuditEvents({ events: group.map(eventOf) }, as);
    return;
  } catch (err) {
    if (ConnectError.from(err).code !== Code.InvalidArgument) throw err;
  }
  for (const r of group) {
    try {
      await s.audit.appendAuditEvent(eventOf(r), as);
    } catch (err) {
      const refused = ConnectError.from(err);
      if (refused.code !== Code.InvalidArgument) throw err;
      s.logger.warn(
        { row: r.id, action: r.action, reason: refused.rawMessage },
        'the audit log refused a gateway row',
      );
      await s.audit.appendAuditEvent(refusedEvent(r, refused.rawMessage), as);
    }
  }
}

/** The event recorded under a refused row's key in its place. */
function refusedEvent(r: GatewayAuditRow, reason: string) {
  return {
    actor: 'gateway:audit-relay',
    kind: 'audit.relay_refused',
    subject: '',
    detailsJson: JSON.stringify({
      action: r.action.slice(0, 200),
      row: r.id,
      reason,
    }),
    at: r.at.toISOString(),
    sourceKey: sourceKeyOf(r.id),
  };
}

/**
 * startAuditRelay relays now and then every `everyMs` until the returned function is called. A
 * failure (the changes service unreachable) is logged and the next run starts where it stopped.
 */
export function startAuditRelay(o: AuditRelayOptions & { everyMs?: number }): () => Promise<void> {
  const relay = createAuditRelay(o);
  let failing = false;
  return repeatEvery(o.everyMs ?? RELAY_EVERY_MS, async () => {
    try {
      await relay.run();
      if (failing) o.logger.info({}, 'audit relay resumed');
      failing = false;
    } catch (err) {
      if (!failing) o.logger.warn({ err }, 'audit rows could not be relayed to the audit log; retrying');
      failing = true;
    }
  });
}
