/**
 * The workspace's audit log: one hash-chained list of events per workspace. Each row's hash is
 * SHA-256 over the canonical JSON (RFC 8785, the `canonicalize` package) of the row's fields and
 * the previous row's hash, so a row edited, removed or put in another order in the database no
 * longer verifies, and verification names the first row that does not.
 *
 * Appending is two steps, so that the state changes of one workspace do not wait for each other:
 *
 * 1. A state change writes its event, in its own transaction, to `audit_staged` (appendAuditEvent):
 *    an insert, no lock shared with any other writer. The event exists exactly when its change
 *    committed, crash or not: they are one transaction.
 * 2. A fold (chainStagedEvents) moves staged rows into `audit_log` in a short transaction that locks
 *    the workspace's head row (`audit_heads`) only for the move: it deletes up to FOLD_BATCH staged
 *    rows, gives them the next seqs in the order of their ids, hashes them onto the head, inserts
 *    them and moves the head. The delete and the insert commit together, so a row is chained once
 *    and never lost; two folds never both follow the same row (the head's lock).
 *
 * Ordering. Staged ids come from a sequence, and a smaller id can commit after a larger one; a fold
 * sees only committed rows. So the chain's order is the fold's order, not the ids': a fold takes
 * whatever committed rows are still staged, however old their ids, and never keeps a high-water
 * mark of ids (which would skip a smaller id committing late). Within one fold, rows go in id order,
 * so one transaction's events stay in the order it wrote them, and an event written after another
 * committed (the same change's approval, then its apply) gets a larger id and a later or the same
 * fold: causal order is kept. `seq` is the chain's order and every reader pages by it.
 *
 * Who folds: the writer's own process, right after its transaction commits (afterCommit, then
 * chainSoon: one fold at a time per workspace in a process, later commits sharing the next fold, and
 * `SKIP LOCKED` on the head so a fold busy elsewhere is not waited for), or GATHER_MS later for a
 * writer of many events that nobody reads at once (the apply worker's outcomes: ChainWhen); the changes service's sweep
 * (work/audit-chainer.ts), for folds skipped or lost to a crash; and every reader of the chain
 * (listAuditEvents, verifyAuditChain, checkAuditChain), which waits for the head and folds first, so
 * a read never misses an event whose change committed before it began.
 *
 * Another service's events (AppendAuditEvents, keyed by its `source_key`) and the backfill are
 * appended chained, under the head's lock for their transaction (appendChainedAuditEvents): the
 * caller gets the row's seq and hash, and a key already in the log returns the row there. Staged
 * rows carry no source key, so the log alone says whether a key is in it.
 */
import { createHash } from 'node:crypto';
import { afterCommit, inTransaction, type Pool, type Queryable } from '@adsmcp/runtime/db';
import canonicalize from 'canonicalize';
import type { ChangeRow } from './change-store.ts';
import type { StandardRow } from './standards-store.ts';

/** The previous hash of a workspace's first row. */
export const GENESIS_HASH = '0'.repeat(64);

export type AuditDetails = { [key: string]: unknown };

/** An event to append. */
export interface AuditEventInput {
  workspaceId: string;
  /** Who acted, as records name them (`actorName`, or the gateway's `user:<id>`, `credential:<id>`). */
  actor: string;
  /** What happened, `<area>.<verb>` (`change.approved`, `credential.revoked`). */
  kind: string;
  /** What it was done to (a change id, an account id, a credential id); empty when nothing in particular. */
  subject: string;
  details: AuditDetails;
  /** When it happened, if not now (an event another service recorded first). */
  at?: Date;
  /** Another service's key for the event: appending it again returns the row already there. */
  sourceKey?: string;
}

export interface AuditRow {
  workspace_id: string;
  seq: string;
  at: Date;
  actor: string;
  kind: string;
  subject: string;
  details: AuditDetails;
  source_key: string | null;
  prev_hash: string;
  hash: string;
}

/** A row's columns, seq as text (a bigint can pass 2^53). */
const COLUMNS =
  'workspace_id, seq::text AS seq, at, actor, kind, subject, details, source_key, prev_hash, hash';

/** The fields a row's hash covers, in the form they are hashed. */
function hashedFields(r: Omit<AuditRow, 'hash'>): Record<string, unknown> {
  return {
    workspace_id: r.workspace_id.toLowerCase(),
    seq: String(r.seq),
    at: r.at.toISOString(),
    actor: r.actor,
    kind: r.kind,
    subject: r.subject,
    details: r.details,
    source_key: r.source_key,
    prev_hash: r.prev_hash,
  };
}

export function rowHash(r: Omit<AuditRow, 'hash'>): string {
  const text = canonicalize(hashedFields(r));
  if (text === undefined) throw new Error('an audit row has no canonical JSON');
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * Runs `fn` in one transaction: `db` itself when it is a client (its caller's transaction), a new
 * one on the pool otherwise, so a store function that appends an event is atomic whoever calls it.
 */
export function atomically<T>(db: Queryable, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  return isPool(db) ? inTransaction(db, fn) : fn(db);
}

/** A state change's event: staged in its transaction, chained right after. */
export type StagedEventInput = Omit<AuditEventInput, 'sourceKey'>;

/** How many staged rows one fold chains (one transaction holding the head). */
export const FOLD_BATCH = 1000;

/** A pool (as opposed to a client): it counts its clients. (Not `instanceof`: two copies of pg would differ.) */
function isPool(db: Queryable): db is Pool {
  const pool = db as Partial<Pool>;
  return typeof pool.totalCount === 'number' && typeof pool.connect === 'function';
}

/**
 * When a staged event is chained after its commit: `commit`, right after it (and awaited, unless a
 * fold of the workspace is running already: chainAfterCommit); `gathered`, by a fold GATHER_MS
 * later that chains every event of the workspace committed meanwhile, not awaited. For a writer of
 * many events whose callers do not read the log next (the apply worker, one outcome per applied
 * change): a fold is a transaction of five statements holding the head, and ten workspaces
 * applying at 20 changes a second each folded once per change. Readers chain what is staged before
 * they read either way, so what they see does not change, only the staging table's lag.
 */
export type ChainWhen = 'commit' | 'gathered';

/** How long a gathered fold waits for more events of its workspace. */
export const GATHER_MS = 200;

/**
 * Records an event of a state change in `db`'s transaction (call it inside the transaction of the
 * change), without waiting for any other writer of the workspace: it is staged, and chained once
 * the transaction commits (see the header, and ChainWhen). With a pool, the insert commits on its
 * own and is chained at once.
 */
export async function appendAuditEvent(
  db: Queryable,
  e: StagedEventInput,
  chain: ChainWhen = 'commit',
): Promise<void> {
  await db.query({
    name: 'audit-stage',
    text: `INSERT INTO audit_staged (workspace_id, at, actor, kind, subject, details)
     VALUES ($1, coalesce($2::timestamptz, date_trunc('milliseconds', clock_timestamp())), $3, $4, $5, $6::jsonb)`,
    values: [
      e.workspaceId,
      e.at?.toISOString() ?? null,
      e.actor,
      e.kind,
      e.subject,
      JSON.stringify(e.details),
    ],
  });
  const registered = afterCommit(db, (pool) =>
    chain === 'gathered' ? chainGathered(pool, e.workspaceId) : chainAfterCommit(pool, e.workspaceId),
  );
  if (!registered && isPool(db)) await chainAfterCommit(db, e.workspaceId);
}

/**
 * The writer's fold after its commit: awaited when this process is not folding the workspace (so
 * a caller that reads the log next finds its event chained), but not when a fold is running: the
 * next one is queued and will see the commit, and a writer waiting for it would hold its apply slot
 * for two folds while other writers of the workspace commit.
 */
function chainAfterCommit(pool: Pool, workspaceId: string): Promise<void> {
  const busy = turns.get(workspaceId)?.running !== undefined;
  const fold = chainSoon(pool, workspaceId);
  return busy ? Promise.resolve() : fold;
}

/** The workspaces whose gathered fold is waiting to start, in this process. */
const gathering = new Set<string>();

/**
 * A gathered fold of the workspace, GATHER_MS from the first commit that asks for one: later
 * commits of the workspace meanwhile share it. Not awaited; a process that stops before it runs
 * leaves its events staged for the sweep (work/audit-chainer.ts) and the next reader.
 */
function chainGathered(pool: Pool, workspaceId: string): Promise<void> {
  if (gathering.has(workspaceId)) return Promise.resolve();
  gathering.add(workspaceId);
  setTimeout(() => {
    gathering.delete(workspaceId);
    void chainSoon(pool, workspaceId);
  }, GATHER_MS).unref();
  return Promise.resolve();
}

interface Head {
  seq: string;
  hash: string;
}

/**
 * Locks the workspace's head in `tx`, creating it at the first append. With `wait` false, a head
 * another transaction holds is not waited for: undefined.
 */
async function lockHead(tx: Queryable, workspaceId: string, wait: boolean): Promise<Head | undefined> {
  if (wait) {
    // ON CONFLICT DO UPDATE locks the row it finds, waiting for its holder.
    const { rows } = await tx.query<Head>(
      `INSERT INTO audit_heads (workspace_id, seq, hash) VALUES ($1, 0, $2)
       ON CONFLICT (workspace_id) DO UPDATE SET seq = audit_heads.seq
       RETURNING seq::text, hash`,
      [workspaceId, GENESIS_HASH],
    );
    return rows[0];
  }
  const { rows } = await tx.query<Head>(
    'SELECT seq::text, hash FROM audit_heads WHERE workspace_id = $1 FOR UPDATE SKIP LOCKED',
    [workspaceId],
  );
  if (rows[0]) return rows[0];
  // Held by another transaction (which may have updated it: an insert's DO NOTHING would wait).
  const { rows: held } = await tx.query('SELECT 1 FROM audit_heads WHERE workspace_id = $1', [workspaceId]);
  if (held.length > 0) return undefined;
  // Missing: DO NOTHING inserts the first head (holding it), or returns nothing when another
  // transaction just did (waiting for it only while it is creating the same head: a short one).
  const { rows: made } = await tx.query<Head>(
    `INSERT INTO audit_heads (workspace_id, seq, hash) VALUES ($1, 0, $2)
     ON CONFLICT (workspace_id) DO NOTHING RETURNING seq::text, hash`,
    [workspaceId, GENESIS_HASH],
  );
  return made[0];
}

/** An event ready to be chained: a staged row, or another service's event. */
type Unchained = Omit<AuditRow, 'workspace_id' | 'seq' | 'prev_hash' | 'hash'>;

/** Chains `events` after `head` in `tx` (which holds the head) and moves the head; returns the rows. */
async function writeChained(
  tx: Queryable,
  workspaceId: string,
  head: Head,
  events: readonly Unchained[],
): Promise<{ rows: AuditRow[]; head: Head }> {
  let seq = BigInt(head.seq);
  let prevHash = head.hash;
  const fresh = events.map((e) => {
    seq += 1n;
    const row: Omit<AuditRow, 'hash'> = {
      workspace_id: workspaceId.toLowerCase(),
      seq: seq.toString(),
      // Milliseconds, as a JavaScript Date holds it, so the time read back hashes the same.
      at: new Date(e.at.getTime()),
      actor: e.actor,
      kind: e.kind,
      subject: e.subject,
      // What is hashed is what jsonb gives back: the details as JSON text would read them.
      details: JSON.parse(JSON.stringify(e.details)) as AuditDetails,
      source_key: e.source_key,
      prev_hash: prevHash,
    };
    const chained = { ...row, hash: rowHash(row) };
    prevHash = chained.hash;
    return chained;
  });
  if (fresh.length === 0) return { rows: [], head };
  const column = <K extends keyof AuditRow>(k: K) => fresh.map((r) => r[k]);
  await tx.query(
    `WITH inserted AS (
       INSERT INTO audit_log (workspace_id, seq, at, actor, kind, subject, details, source_key, prev_hash, hash)
       SELECT $1, seq, at, actor, kind, subject, details::jsonb, source_key, prev_hash, hash
         FROM unnest($2::bigint[], $3::timestamptz[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
                     $9::text[], $10::text[]) AS r(seq, at, actor, kind, subject, details, source_key, prev_hash, hash))
     UPDATE audit_heads SET seq = $11, hash = $12 WHERE workspace_id = $1`,
    [
      workspaceId,
      column('seq'),
      fresh.map((r) => r.at.toISOString()),
      column('actor'),
      column('kind'),
      column('subject'),
      fresh.map((r) => JSON.stringify(r.details)),
      column('source_key'),
      column('prev_hash'),
      column('hash'),
      seq.toString(),
      prevHash,
    ],
  );
  return { rows: fresh, head: { seq: seq.toString(), hash: prevHash } };
}

/**
 * Chains up to FOLD_BATCH of the workspace's committed staged rows, oldest id first, in `tx` (which
 * holds the head). The rows are deleted from the staging table in the same statement that reads
 * them, so they are chained exactly once. Returns the new head and how many were chained.
 */
async function foldStaged(
  tx: Queryable,
  workspaceId: string,
  head: Head,
): Promise<{ head: Head; n: number }> {
  const { rows } = await tx.query<Unchained>(
    `WITH taken AS (
       DELETE FROM audit_staged
        WHERE id IN (SELECT id FROM audit_staged WHERE workspace_id = $1 ORDER BY id LIMIT $2)
       RETURNING id, at, actor, kind, subject, details)
     SELECT at, actor, kind, subject, details, NULL::text AS source_key FROM taken ORDER BY id`,
    [workspaceId, FOLD_BATCH],
  );
  const written = await writeChained(tx, workspaceId, head, rows);
  return { head: written.head, n: rows.length };
}

/**
 * Chains the workspace's committed staged events, FOLD_BATCH a transaction, until none is left.
 * With `wait` (a reader), a fold in progress is waited for, so every event committed before the
 * call is in the chain when it returns; without, a head held elsewhere is left to its holder and
 * to the sweep. Returns how many rows were chained.
 */
export async function chainStagedEvents(db: Queryable, workspaceId: string, wait: boolean): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await atomically(db, async (tx) => {
      const head = await lockHead(tx, workspaceId, wait);
      return head === undefined ? 0 : (await foldStaged(tx, workspaceId, head)).n;
    });
    total += n;
    if (n < FOLD_BATCH) return total;
  }
}

/** Each workspace's fold in this process: the one running, and the one that will run after it. */
const turns = new Map<string, { running?: Promise<void>; next?: Promise<void> }>();

/**
 * Folds the workspace's staged events now, or right after the fold this process is running for it;
 * calls that come while a fold waits to start share it (it will see all their commits). Never
 * throws: a fold that fails (the database unreachable) leaves its rows staged for the sweep.
 */
export function chainSoon(pool: Pool, workspaceId: string): Promise<void> {
  const turn = turns.get(workspaceId) ?? {};
  if (turn.next) return turn.next;
  const next: Promise<void> = (turn.running ?? Promise.resolve()).then(async () => {
    turn.next = undefined;
    turn.running = next;
    try {
      await chainStagedEvents(pool, workspaceId, false);
    } catch {
      // Staged rows stay staged: the sweep and the next reader chain them.
    } finally {
      if (turn.running === next) turn.running = undefined;
      if (turn.running === undefined && turn.next === undefined) turns.delete(workspaceId);
    }
  });
  turn.next = next;
  turns.set(workspaceId, turn);
  return next;
}

/** The workspaces with staged events (for the sweep). */
export async function workspacesWithStagedEvents(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ workspace_id: string }>('SELECT DISTINCT workspace_id FROM audit_staged');
  return rows.map((r) => r.workspace_id);
}

/**
 * Appends events to one workspace's chain in their order, in `db`'s transaction, holding the head
 * until it ends (another service's events, the backfill): the staged events committed so far are
 * chained first. Returns each event's row (for an event whose `sourceKey` is already in the log,
 * or earlier in `events`, that row).
 */
export async function appendChainedAuditEvents(
  db: Queryable,
  workspaceId: string,
  events: readonly Omit<AuditEventInput, 'workspaceId'>[],
): Promise<AuditRow[]> {
  let head = await lockHead(db, workspaceId, true);
  if (!head) throw new Error('the audit head of the workspace is missing');
  for (;;) {
    const folded = await foldStaged(db, workspaceId, head);
    head = folded.head;
    if (folded.n < FOLD_BATCH) break;
  }
  const keys = events.flatMap((e) => (e.sourceKey === undefined ? [] : [e.sourceKey]));
  const byKey = new Map<string, AuditRow>();
  if (keys.length > 0) {
    const { rows } = await db.query<AuditRow>(
      `SELECT ${COLUMNS} FROM audit_log WHERE workspace_id = $1 AND source_key = ANY ($2::text[])`,
      [workspaceId, keys],
    );
    for (const r of rows) if (r.source_key !== null) byKey.set(r.source_key, r);
  }
  const { rows: clock } = await db.query<{ now: Date }>(
    `SELECT date_trunc('milliseconds', clock_timestamp()) AS now`,
  );
  const now = clock[0]?.now ?? new Date();
  // The first of each key not in the log is appended; the others (and known keys) get its row.
  const fresh: Unchained[] = [];
  const firstOfKey = new Map<string, number>();
  const places = events.map((e) => {
    const key = e.sourceKey;
    if (key !== undefined && (byKey.has(key) || firstOfKey.has(key))) return key;
    if (key !== undefined) firstOfKey.set(key, fresh.length);
    fresh.push({
      at: e.at ?? now,
      actor: e.actor,
      kind: e.kind,
      subject: e.subject,
      details: e.details,
      source_key: key ?? null,
    });
    return fresh.length - 1;
  });
  const { rows } = await writeChained(db, workspaceId, head, fresh);
  return places.map((place) => {
    const row =
      typeof place === 'number' ? rows[place] : (byKey.get(place) ?? rows[firstOfKey.get(place) ?? -1]);
    if (!row) throw new Error('an audit event was not appended');
    return row;
  });
}

export interface AuditFilter {
  workspaceId: string;
  /** Newest first, rows before this seq (all when undefined). */
  beforeSeq?: bigint;
  /** Oldest first, rows after this seq (an export's order), instead of newest first. */
  afterSeq?: bigint;
  /** Only events about this ad account (`details.account_id`). */
  accountId?: string;
  /** Only events whose actor starts with one of these (a person's `user:<id>`, their connections). */
  actorPrefixes?: readonly string[];
  /**
   * Only events whose subject or details contain this text, case-insensitive. A receiver's `url`
   * is not searched: entries from before it was kept to its origin hold the whole URL, which a
   * member could otherwise recover by guessing one character at a time (shown-url.ts).
   */
  text?: string;
  /** With `text`: events whose subject is one of these match it too. */
  textSubjects?: readonly string[];
  /** Only events whose source key starts with this. */
  sourcePrefix?: string;
  limit: number;
}

/**
 * A page of the workspace's log by keyset on seq: newest first, or oldest first after `afterSeq`.
 * The events committed so far are chained first, so none is missing from the page.
 */
export async function listAuditEvents(db: Queryable, f: AuditFilter): Promise<AuditRow[]> {
  await chainStagedEvents(db, f.workspaceId, true);
  return readAuditPage(db, f);
}

/** A page of the chain as it stands. */
async function readAuditPage(db: Queryable, f: AuditFilter): Promise<AuditRow[]> {
  const ascending = f.afterSeq !== undefined;
  const { rows } = await db.query<AuditRow>(
    `SELECT ${COLUMNS} FROM audit_log
      WHERE workspace_id = $1
        AND ($2::bigint IS NULL OR seq < $2) AND ($3::bigint IS NULL OR seq > $3)
        AND ($4::text IS NULL OR lower(details->>'account_id') = lower($4))
        AND ($5::text[] IS NULL OR EXISTS (SELECT 1 FROM unnest($5::text[]) p WHERE starts_with(actor, p)))
        AND ($6::text IS NULL OR strpos(lower(subject || ' ' || (details - 'url')::text), lower($6)) > 0
             OR subject = ANY ($9::text[]))
        AND ($8::text IS NULL OR starts_with(source_key, $8))
      ORDER BY audit_log.seq ${ascending ? 'ASC' : 'DESC'} LIMIT $7`,
    [
      f.workspaceId,
      f.beforeSeq?.toString() ?? null,
      f.afterSeq?.toString() ?? null,
      f.accountId || null,
      f.actorPrefixes && f.actorPrefixes.length > 0 ? [...f.actorPrefixes] : null,
      f.text || null,
      f.limit,
      f.sourcePrefix || null,
      [...(f.textSubjects ?? [])],
    ],
  );
  return rows;
}

/** Where the chain first breaks, and why. */
export interface ChainBreak {
  seq: bigint;
  /** The broken row's time and kind, when the row exists. */
  at?: Date;
  kind?: string;
  reason: string;
}

export interface ChainReport {
  /** Rows checked (up to the break). */
  rows: number;
  broken?: ChainBreak;
  /** The hash of the last row that verified (GENESIS_HASH when none). */
  lastHash?: string;
}

/**
 * Checks the workspace's chain from its first row: seqs from 1 without a gap, each row's
 * prev_hash the previous row's hash, each hash its fields' hash, and the head naming the last row
 * (after chaining the events committed so far).
 */
export async function verifyAuditChain(
  db: Queryable,
  workspaceId: string,
  batch = 1000,
  from?: { seq: bigint; hash: string },
): Promise<ChainReport> {
  await chainStagedEvents(db, workspaceId, true);
  let prevHash = from?.hash ?? GENESIS_HASH;
  let expected = (from?.seq ?? 0n) + 1n;
  let checked = Number(from?.seq ?? 0n);
  for (;;) {
    const rows = await readAuditPage(db, { workspaceId, afterSeq: expected - 1n, limit: batch });
    for (const r of rows) {
      const at = { seq: BigInt(r.seq), at: r.at, kind: r.kind };
      if (at.seq !== expected)
        return { rows: checked, broken: { seq: expected, reason: 'the row is missing' } };
      if (r.prev_hash !== prevHash)
        return { rows: checked, broken: { ...at, reason: "its prev_hash is not the previous row's hash" } };
      const { hash, ...fields } = r;
      if (rowHash(fields) !== hash)
        return { rows: checked, broken: { ...at, reason: 'its hash does not match its contents' } };
      prevHash = hash;
      expected += 1n;
      checked += 1;
    }
    if (rows.length < batch) break;
  }
  const { rows: heads } = await db.query<{ seq: string; hash: string }>(
    'SELECT seq::text, hash FROM audit_heads WHERE workspace_id = $1',
    [workspaceId],
  );
  const head = heads[0];
  const last = expected - 1n;
  if (head && BigInt(head.seq) > last)
    return { rows: checked, broken: { seq: last + 1n, reason: 'the row is missing' } };
  if (head && BigInt(head.seq) < last)
    return {
      rows: checked,
      broken: { seq: BigInt(head.seq) + 1n, reason: "the row is past the chain's head" },
    };
  if (head && BigInt(head.seq) === last && head.hash !== prevHash)
    return { rows: checked, broken: { seq: last, reason: "the chain's head does not name this row's hash" } };
  return { rows: checked, lastHash: prevHash };
}

export interface CheckedChain extends ChainReport {
  /** When the whole chain was last verified from its first row, and how many rows it had. */
  wholeCheckedAt?: Date;
  wholeRows?: number;
}

interface CheckpointRow {
  seq: string;
  hash: string;
  whole_checked_at: Date | null;
  whole_rows: string | null;
  broken: { seq: string; at?: string; kind?: string; reason: string } | null;
}

/**
 * Verifies the chain from where the last check ended (the rows appended since), or from its first
 * row when `whole` (or when the row a check ended at is no longer what it was). Checking every row
 * on every audit page would cost more with each event; an edit to an older row is found by the
 * next whole check, which `npm run admin -- verify-audit` and the page's "verify the whole chain"
 * run, and which the page dates. A break once found is reported until a whole check passes.
 */
export async function checkAuditChain(
  db: Queryable,
  workspaceId: string,
  whole: boolean,
): Promise<CheckedChain> {
  const { rows: cps } = await db.query<CheckpointRow>(
    `SELECT seq::text, hash, whole_checked_at, whole_rows::text, broken FROM audit_checkpoints
     WHERE workspace_id = $1`,
    [workspaceId],
  );
  const cp = cps[0];
  const earlier = {
    ...(cp?.whole_checked_at && { wholeCheckedAt: cp.whole_checked_at }),
    ...(cp?.whole_rows != null && { wholeRows: Number(cp.whole_rows) }),
  };
  if (!whole && cp?.broken) {
    const b = cp.broken;
    return {
      rows: Number(BigInt(b.seq) - 1n),
      broken: {
        seq: BigInt(b.seq),
        ...(b.at && { at: new Date(b.at) }),
        ...(b.kind && { kind: b.kind }),
        reason: b.reason,
      },
      ...earlier,
    };
  }
  let from: { seq: bigint; hash: string } | undefined;
  if (!whole && cp) {
    const { rows } = await db.query<{ hash: string }>(
      'SELECT hash FROM audit_log WHERE workspace_id = $1 AND seq = $2',
      [workspaceId, cp.seq],
    );
    if (rows[0]?.hash === cp.hash) from = { seq: BigInt(cp.seq), hash: cp.hash };
  }
  const report = await verifyAuditChain(db, workspaceId, 1000, from);
  const wasWhole = from === undefined;
  const b = report.broken;
  const broken =
    b === undefined
      ? null
      : {
          seq: b.seq.toString(),
          ...(b.at && { at: b.at.toISOString() }),
          ...(b.kind && { kind: b.kind }),
          reason: b.reason,
        };
  const endSeq = b === undefined ? BigInt(report.rows) : BigInt(cp?.seq ?? 0);
  const endHash = b === undefined ? (report.lastHash ?? GENESIS_HASH) : (cp?.hash ?? GENESIS_HASH);
  const { rows: saved } = await db.query<{ whole_checked_at: Date | null; whole_rows: string | null }>(
    `INSERT INTO audit_checkpoints (workspace_id, seq, hash, checked_at, whole_checked_at, whole_rows, broken)
     VALUES ($1, $2, $3, now(), CASE WHEN $4 THEN now() END, CASE WHEN $4 THEN $5::bigint END, $6)
     ON CONFLICT (workspace_id) DO UPDATE SET
       seq = EXCLUDED.seq, hash = EXCLUDED.hash, checked_at = now(), broken = EXCLUDED.broken,
       whole_checked_at = CASE WHEN $4 THEN now() ELSE audit_checkpoints.whole_checked_at END,
       whole_rows = CASE WHEN $4 THEN $5::bigint ELSE audit_checkpoints.whole_rows END
     RETURNING whole_checked_at, whole_rows::text`,
    [workspaceId, endSeq.toString(), endHash, wasWhole, String(report.rows), broken],
  );
  const after = saved[0];
  return {
    ...report,
    ...(after?.whole_checked_at && { wholeCheckedAt: after.whole_checked_at }),
    ...(after?.whole_rows != null && { wholeRows: Number(after.whole_rows) }),
  };
}

/** What a change event records of the change, beside its kind and actor. */
function changeDetails(c: ChangeRow): AuditDetails {
  return {
    change_id: c.change_id,
    account_id: c.account_id,
    tool: c.tool,
    target_path: c.target_path,
    summary: c.summary,
    digest: c.digest,
    status: c.status,
    ...(c.reject_reason !== null && { reason: c.reject_reason }),
    ...(c.upstream_status !== null && { upstream_status: c.upstream_status }),
    ...(c.error !== null && { error: c.error }),
    ...(c.applied_differences.length > 0 && { applied_differences: c.applied_differences }),
    ...(c.resolution !== null && { resolution: c.resolution }),
    ...(c.resolution_note !== null && { note: c.resolution_note }),
  };
}

/**
 * Appends the event of a change's move (`change.<kind>`) when it moved (`c` is the row it returned)
 * and gives the row back: `return auditChange(tx, 'approved', rows[0], by)` in a store function.
 */
export async function auditChange<R extends ChangeRow | undefined>(
  db: Queryable,
  kind: string,
  c: R,
  actor: string,
  chain: ChainWhen = 'commit',
): Promise<R> {
  if (c)
    await appendAuditEvent(
      db,
      {
        workspaceId: c.workspace_id,
        actor,
        kind: `change.${kind}`,
        subject: c.change_id,
        details: changeDetails(c),
      },
      chain,
    );
  return c;
}

/** Appends a standard's save or archive (`standard.<kind>`) and gives the row back. */
export async function auditStandard(
  db: Queryable,
  kind: 'created' | 'updated' | 'archived',
  actor: string,
  s: StandardRow,
): Promise<StandardRow> {
  await appendAuditEvent(db, {
    workspaceId: s.workspace_id,
    actor,
    kind: `standard.${kind}`,
    subject: s.standard_id,
    details: {
      standard_id: s.standard_id,
      account_id: s.account_id,
      name: s.name,
      standard_kind: s.kind,
      revision: s.revision,
      data: s.data,
    },
  });
  return s;
}

/** The kind of the row that closes a workspace's backfill: it is done once. */
export const BACKFILLED = 'audit.backfilled';

/** The workspaces with records of this service and no backfill in their log yet. */
export async function workspacesToBackfill(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ workspace_id: string }>(
    `SELECT workspace_id FROM (SELECT workspace_id FROM changes UNION SELECT workspace_id FROM change_expiry_settings) w
      WHERE NOT EXISTS (SELECT 1 FROM audit_log l WHERE l.workspace_id = w.workspace_id AND l.kind = $1)`,
    [BACKFILLED],
  );
  return rows.map((r) => r.workspace_id);
}

/**
 * Appends, once, the events a workspace's records hold from before its log began: each change's
 * prepare, approval, rejection, apply request, outcome and settling, and each expiry setting, in
 * the order they happened, up to the first event this service appended itself (those after it are
 * in the log already). Each is keyed (`c:<change id>:<kind>`, `s:<time>`) and the details are the
 * change as it is now, marked `backfilled`; a closing `audit.backfilled` row says how many. Returns
 * how many events were appended (0 when there were none, or another replica did it first).
 */
export async function backfillWorkspace(db: Queryable, workspaceId: string): Promise<number> {
  // The head is locked (and the staged events chained) first, so the cut-off cannot move while
  // the events are read; an event staged meanwhile is seen below with its change, or neither is.
  await appendChainedAuditEvents(db, workspaceId, []);
  const { rows: done } = await db.query('SELECT 1 FROM audit_log WHERE workspace_id = $1 AND kind = $2', [
    workspaceId,
    BACKFILLED,
  ]);
  if (done.length > 0) return 0;
  const { rows: cut } = await db.query<{ before: Date }>(
    `SELECT coalesce(min(at), date_trunc('milliseconds', clock_timestamp())) AS before
       FROM (SELECT at FROM audit_log WHERE workspace_id = $1 AND source_key IS NULL
             UNION ALL SELECT at FROM audit_staged WHERE workspace_id = $1) own`,
    [workspaceId],
  );
  const before = cut[0]?.before ?? new Date();
  const { rows: changeEvents } = await db.query<ChangeRow & { kind: string; event_at: Date; actor: string }>(
    `SELECT c.*, e.kind, e.at AS event_at, e.actor
       FROM changes c
      CROSS JOIN LATERAL (VALUES
        ('prepared', c.prepared_at, c.prepared_by),
        ('approved', c.approved_at, c.approved_by),
        ('rejected', c.rejected_at, c.rejected_by),
        ('apply_requested', c.apply_requested_at, c.apply_requested_by),
        ('apply_retried', c.apply_retried_at, c.apply_retried_by),
        ('applied', CASE WHEN c.status = 'applied' THEN c.applied_at END, 'worker:apply'),
        ('failed', CASE WHEN c.status = 'failed' OR c.resolution = 'applied'
                        THEN coalesce(c.apply_retried_at, c.apply_requested_at, c.prepared_at) END, 'worker:apply'),
        ('outcome_settled', CASE WHEN c.resolution IN ('applied', 'not_applied') THEN c.resolved_at END, c.resolved_by)
      ) AS e(kind, at, actor)
      WHERE c.workspace_id = $1 AND e.at IS NOT NULL AND e.at < $2
        AND NOT EXISTS (SELECT 1 FROM audit_log l
                         WHERE l.workspace_id = $1 AND l.subject = c.change_id::text AND l.kind = 'change.' || e.kind)
        AND NOT EXISTS (SELECT 1 FROM audit_staged l
                         WHERE l.workspace_id = $1 AND l.subject = c.change_id::text AND l.kind = 'change.' || e.kind)`,
    [workspaceId, before],
  );
  const { rows: settings } = await db.query<{
    set_at: Date;
    set_by: string;
    prepared_valid_hours: number;
    approval_valid_hours: number;
  }>('SELECT * FROM change_expiry_settings WHERE workspace_id = $1 AND set_at < $2', [workspaceId, before]);
  const events: (Omit<AuditEventInput, 'workspaceId'> & { at: Date })[] = [
    ...changeEvents.map((c) => ({
      actor: c.actor ?? '',
      kind: `change.${c.kind}`,
      subject: c.change_id,
      details: { ...changeDetails(c), backfilled: true },
      at: c.event_at,
      sourceKey: `c:${c.change_id}:${c.kind}`,
    })),
    ...settings.map((s) => ({
      actor: s.set_by,
      kind: 'expiry.set',
      subject: '',
      details: {
        prepared_valid_hours: s.prepared_valid_hours,
        approval_valid_hours: s.approval_valid_hours,
        backfilled: true,
      },
      at: s.set_at,
      sourceKey: `s:${s.set_at.toISOString()}`,
    })),
  ].sort((a, b) => a.at.getTime() - b.at.getTime() || (a.sourceKey < b.sourceKey ? -1 : 1));
  // Nothing from before the log: no closing row either (the next start looks again, at little cost).
  if (events.length === 0) return 0;
  await appendChainedAuditEvents(db, workspaceId, [
    ...events,
    {
      actor: 'worker:audit',
      kind: BACKFILLED,
      subject: '',
      details: { events: events.length, before: before.toISOString() },
    },
  ]);
  return events.length;
}
