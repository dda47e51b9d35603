/** Queries on prepared changes. Every query names the workspace, except the worker's own load. */
import {
  type DayCountsFilter,
  dayHoldingOffset,
  dayRowsToRead,
  RECENT_SUBTRACTED,
} from '@adsmcp/runtime/day-pages';
import { byName, type Queryable } from '@adsmcp/runtime/db';
import {
  type ChangeStatus,
  type ExpiryHours,
  RESEND_WITHIN_HOURS,
  type Resolution,
} from '../domain/change.ts';
import type { CheckedStandard } from '../domain/standards-rules.ts';
import type { Upload } from '../domain/uploads.ts';
import { atomically, auditChange } from './audit-store.ts';
import { settleUse } from './controls-store.ts';

/**
 * Every column of `changes`, in the table's order (a test holds it to the table): what the named
 * statements of the apply path return instead of `*`. A prepared statement's result may not change
 * its columns, so `*` in one would fail on every connection that prepared it once a migration adds
 * a column, until the connection closes (old replicas during a rolling upgrade).
 */
export const CHANGE_COLUMNS = [
  'change_id',
  'workspace_id',
  'account_id',
  'tool',
  'status',
  'summary',
  'method',
  'path',
  'body_json',
  'digest',
  'target_path',
  'target_before_json',
  'prepared_by',
  'prepared_at',
  'approved_by',
  'approved_at',
  'rejected_by',
  'rejected_at',
  'reject_reason',
  'apply_requested_by',
  'apply_requested_at',
  'applied_at',
  'upstream_status',
  'upstream_response_json',
  'error',
  'approver_user_id',
  'sent_at',
  'standards_checked',
  'reviewed_result_json',
  'applied_differences',
  'uploads',
  'apply_retried_by',
  'apply_retried_at',
  'resolution',
  'resolved_by',
  'resolved_at',
  'resolution_note',
  'reverts_change_id',
  'reverted_by',
] as const;

/** CHANGE_COLUMNS as a select list, each column of the table aliased `alias`. */
export const changeColumnsOf = (alias: string) => CHANGE_COLUMNS.map((c) => `${alias}.${c}`).join(', ');

/** The SQL of domain/change.ts outcomeUnknown, on the changes table as `c`. */
const OUTCOME_UNKNOWN = `(c.status = 'failed' AND c.sent_at IS NOT NULL AND c.upstream_status IS NULL
  AND c.resolution IS DISTINCT FROM 'not_applied')`;

export interface ChangeRow {
  change_id: string;
  workspace_id: string;
  account_id: string;
  tool: string;
  status: ChangeStatus;
  summary: string;
  method: string;
  path: string;
  body_json: string;
  digest: string;
  target_path: string;
  target_before_json: string;
  prepared_by: string;
  prepared_at: Date;
  approved_by: string | null;
  approved_at: Date | null;
  rejected_by: string | null;
  rejected_at: Date | null;
  reject_reason: string | null;
  apply_requested_by: string | null;
  apply_requested_at: Date | null;
  applied_at: Date | null;
  upstream_status: number | null;
  upstream_response_json: string | null;
  error: string | null;
  approver_user_id: string | null;
  sent_at: Date | null;
  /** Who last asked to send again a change whose outcome was unknown, and when. */
  apply_retried_by: string | null;
  apply_retried_at: Date | null;
  /** How a person last settled an unknown outcome (domain/change.ts Resolution), who, when, and their note. */
  resolution: Resolution | null;
  resolved_by: string | null;
  resolved_at: Date | null;
  resolution_note: string | null;
  /** The account standards the change was checked against when prepared. */
  standards_checked: CheckedStandard[];
  /** What was reviewed, as the fields the applied object should have (plan.ts reviewedResult). */
  reviewed_result_json: string;
  /** Once applied: where the platform's answer differed from what was reviewed, a line per field. */
  applied_differences: string[];
  /** The campaign assets the change uploads when applied, pinned at prepare (domain/uploads.ts). */
  uploads: Upload[];
}

export async function insertChange(
  db: Queryable,
  c: Pick<
    ChangeRow,
    | 'change_id'
    | 'workspace_id'
    | 'account_id'
    | 'tool'
    | 'summary'
    | 'method'
    | 'path'
    | 'body_json'
    | 'digest'
    | 'target_path'
    | 'target_before_json'
    | 'prepared_by'
    | 'reviewed_result_json'
  > & { standards_checked?: CheckedStandard[]; uploads?: Upload[] },
): Promise<ChangeRow> {
  return atomically(db, async (tx) => {
    const { rows } = await tx.query<ChangeRow>(
      `INSERT INTO changes (change_id, workspace_id, account_id, tool, status, summary, method, path, body_json, digest,
                            target_path, target_before_json, prepared_by, standards_checked, reviewed_result_json, uploads)
       VALUES ($1, $2, $3, $4, 'prepared', $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING *`,
      [
        c.change_id,
        c.workspace_id,
        c.account_id,
        c.tool,
        c.summary,
        c.method,
        c.path,
        c.body_json,
        c.digest,
        c.target_path,
        c.target_before_json,
        c.prepared_by,
        JSON.stringify(c.standards_checked ?? []),
        c.reviewed_result_json,
        JSON.stringify(c.uploads ?? []),
      ],
    );
    return auditChange(tx, 'prepared', rows[0] as ChangeRow, c.prepared_by);
  });
}

export async function findChange(
  db: Queryable,
  workspaceId: string,
  changeId: string,
): Promise<ChangeRow | undefined> {
  const { rows } = await db.query<ChangeRow>(
    'SELECT * FROM changes WHERE workspace_id = $1 AND change_id = $2',
    [workspaceId, changeId],
  );
  return rows[0];
}

/**
 * The filter of a status as a reader sees it (domain/change.ts shownStatus), on the changes table
 * as `c`: $2 the status, $4 and $5 the workspace's hours after prepare and after approval, $6 now.
 * A prepared or approved change past its expiry is `expired`, and only that.
 */
const SHOWN_STATUS = `(
  ($2::text IS NULL)
  OR ($2 = 'prepared' AND c.status = 'prepared' AND c.prepared_at > $6::timestamptz - make_interval(hours => $4::int))
  OR ($2 = 'approved' AND c.status = 'approved' AND c.approved_at > $6::timestamptz - make_interval(hours => $5::int))
  OR ($2 = 'expired' AND ((c.status = 'prepared' AND c.prepared_at <= $6::timestamptz - make_interval(hours => $4::int))
                       OR (c.status = 'approved' AND c.approved_at <= $6::timestamptz - make_interval(hours => $5::int))))
  OR ($2 NOT IN ('prepared', 'approved', 'expired') AND c.status = $2))`;

export async function listChanges(
  db: Queryable,
  f: {
    workspaceId: string;
    /** A status as readers see it: prepared and approved leave out the expired, expired lists them. */
    status?: string;
    accountId?: string;
    /** Only the changes whose outcome is unknown (status is then not looked at). */
    outcomeUnknown?: boolean;
    /** The workspace's expiry settings, and the time they are evaluated at. */
    expiry: ExpiryHours;
    now: Date;
    limit: number;
    offset: number;
    /**
     * From which offset an expired page is found from the day counts (EXPIRED_DAYS_FROM); a test
     * of that way with a handful of changes sets 0.
     */
    expiredDaysFrom?: number;
    /**
     * Where an expired page found from the day counts is read: connections that plan a
     * statement once (createPool's `genericPlans`), sent by name. Its statement reads the
     * changes table six times over, and planning it took longer than running it (about 0.5 ms
     * against 0.4 at 1,000,000 changes; docs/performance.md); its plan does not depend on the
     * values, as each read's ORDER BY fixes its index. Unset, it is read on `db`, planned each
     * time.
     */
    genericPlans?: Queryable;
  },
): Promise<{ rows: ChangeRow[]; total: number }> {
  const where = f.outcomeUnknown
    ? `c.workspace_id = $1 AND ${OUTCOME_UNKNOWN} AND ($3::uuid IS NULL OR c.account_id = $3::uuid)
       AND $2::text IS NULL AND $4::int IS NOT NULL AND $5::int IS NOT NULL AND $6::timestamptz IS NOT NULL`
    : `c.workspace_id = $1 AND ${SHOWN_STATUS} AND ($3::uuid IS NULL OR c.account_id = $3::uuid)`;
  const params = [
    f.workspaceId,
    f.outcomeUnknown ? null : (f.status ?? null),
    f.accountId ?? null,
    f.expiry.preparedValidHours,
    f.expiry.approvalValidHours,
    f.now,
  ];
  // The page's ids are found first, in the list indexes alone (migration 0015), and only the
  // page's rows are read. Where the filter is one the day counts keep (migration 0019), the day
  // holding the offset's change is found from them and only that day's earlier matches are
  // skipped; otherwise the offset skips its index entries.
  const days =
    f.status === 'expired' && f.offset < (f.expiredDaysFrom ?? EXPIRED_DAYS_FROM)
      ? undefined
      : dayCountsWhere(f);
  // Approved changes are read from their window's index, the ones approved within the window
  // (a set bounded by the window, not the history), then ordered: in the list index's order the
  // approved changes past their window (stored approved, shown expired) sit among the others, and
  // a page with fewer matches than its limit, or past them, read every one of them. (OFFSET 0
  // keeps the planner from folding the window's read into the ordered one.) Prepared changes need
  // no such read: their window is a range of the list index's own order.
  const among =
    !f.outcomeUnknown && f.status === 'approved'
      ? `(SELECT c.change_id, c.workspace_id, c.account_id, c.status, c.prepared_at, c.approved_at FROM changes c
           WHERE c.workspace_id = $1 AND c.status = 'approved'
             AND c.approved_at > $6::timestamptz - make_interval(hours => $5::int) OFFSET 0) c`
      : 'changes c';
  // Each expired range's own filter: the shown status's is its range's condition ($2 is typed
  // only: it is 'expired' here), which spares the planner the other statuses' conditions.
  const expired = `c.workspace_id = $1 AND $2::text = 'expired' AND ($3::uuid IS NULL OR c.account_id = $3::uuid)`;
  // The ids of the page at `offset` among the matches prepared before `before`.
  const pageIds = (before: string, offset: string) =>
    f.outcomeUnknown || f.status !== 'expired'
      ? `SELECT c.change_id, c.prepared_at FROM ${among}
          WHERE ${where} AND c.prepared_at < ${before}
          ORDER BY c.prepared_at DESC, c.change_id LIMIT $7 OFFSET ${offset}`
      : // Expired changes lie in two ranges of the status index (changes_list_status): the
        // prepared ones prepared before the prepare window, and the approved ones whose approval
        // is past its window. Each range is read in the list's order up to the page's end, and the
        // two are merged, so an offset (or a day's earlier matches) skips only expired changes'
        // entries, not every change's among them (a sixth of them in a year's mix).
        `SELECT c.change_id, c.prepared_at FROM (${EXPIRED_RANGES.map(
          (r) => `
           (SELECT c.change_id, c.prepared_at FROM changes c
             WHERE ${expired} AND c.status = '${r.status}' AND c.prepared_at < ${before} AND ${r.passed}
             ORDER BY c.prepared_at DESC, c.change_id LIMIT $7 + ${offset})`,
        ).join(' UNION ALL')}
         ) c ORDER BY c.prepared_at DESC, c.change_id LIMIT $7 OFFSET ${offset}`;
  const [{ rows }, total] = await Promise.all([
    days === undefined
      ? db.query<ChangeRow>(
          `SELECT c.* FROM (${pageIds(`'infinity'`, '$8::bigint')}) page JOIN changes c ON c.change_id = page.change_id
           ORDER BY page.prepared_at DESC, page.change_id`,
          [...params, f.limit, f.offset],
        )
      : // One statement, so that the day counts and the changes are read in one snapshot: the
        // page is the one a plain OFFSET gives. `newer` is the number of matches prepared after
        // the chosen day (`through` adds that day's), so the page is the one at offset - newer
        // among the matches prepared before that day ends. Any day with newer <= offset gives
        // the same page; the first whose `through` passes the offset skips the fewest entries.
        // 24 hours, not a day: a day added to a time follows the session's time zone across DST.
        //
        // A day-count row costs about 10 skipped index entries (bench/deep-offset.ts: 186 rows
        // and 1,818 entries in 0.6 ms, 100,000 entries in 6 to 7 ms), and where each key has
        // few changes a day (many accounts, a quiet workspace) there are nearly as many rows as
        // changes. So at most offset / 32 rows are read (a day cut short still counts every
        // newer day whole), and when the offset's day is not among them the page is the plain
        // offset's, at about a third more than its cost at worst.
        daysPage(
          f.status === 'expired' ? f.genericPlans : undefined,
          db,
          `WITH ${dayHoldingOffset({ counts: 'change_day_counts', ...days, limit: '$9', offset: '$8' })}
           SELECT c.* FROM (
             ${pageIds(`coalesce((SELECT ends FROM day), 'infinity')`, `($8::bigint - coalesce((SELECT newer FROM day), 0))`)}
           ) page JOIN changes c ON c.change_id = page.change_id
           ORDER BY page.prepared_at DESC, page.change_id`,
          [...params, f.limit, f.offset, dayRowsToRead(f.offset, DAY_ROWS_PER_OFFSET)],
        ),
    countChanges(db, f),
  ]);
  return { rows, total };
}

/** A page from the day counts: on `generic` by name when given (listChanges's genericPlans), else on `db`. */
function daysPage(generic: Queryable | undefined, db: Queryable, text: string, values: unknown[]) {
  return generic === undefined
    ? db.query<ChangeRow>(text, values)
    : generic.query<ChangeRow>(byName(text, values));
}

/** When the prepare window starts ($6 now, $4 the hours after prepare), as listChanges's SQL has it. */
const PREPARE_WINDOW_STARTS = '$6::timestamptz - make_interval(hours => $4::int)';

/**
 * The stored statuses a change is shown expired in, each with the condition on `c` that its
 * window has passed ($4 and $5 the hours after prepare and after approval, $6 now), as
 * SHOWN_STATUS has them: each a range of the status index (changes_list_status, which includes
 * the approval time) and of the day counts' index.
 */
const EXPIRED_RANGES = [
  { status: 'prepared', passed: `c.prepared_at <= ${PREPARE_WINDOW_STARTS}` },
  { status: 'approved', passed: 'c.approved_at <= $6::timestamptz - make_interval(hours => $5::int)' },
] as const;

/**
 * Expired changes' pages before this offset skip their offset plainly: the day counts' way also
 * counts the changes still in their windows, which costs about as much as skipping a thousand
 * expired changes' index entries (bench/deep-offset.ts: the plain offset skips about 4 µs an
 * entry, the live window part took 5 to 7 ms with a week's changes 20 s apart), so a first page
 * read that way took 23 ms where the plain offset took 7 (bench/scale.ts).
 */
const EXPIRED_DAYS_FROM = 1000;

/** listChanges reads at most offset / DAY_ROWS_PER_OFFSET day-count rows (dayRowsToRead). */
const DAY_ROWS_PER_OFFSET = 32;

/**
 * The condition on `change_day_counts` as `k` (migration 0019) that counts exactly the changes
 * listChanges's filter matches, in the same parameters ($1 the workspace, $2 the status, $3 the
 * account, $4 and $5 the hours after prepare and after approval, $6 now). Undefined for prepared
 * and approved, whose matches are all within their expiry window, so that the plain offset skips
 * at most the window's changes.
 *
 * Expired: a change is shown expired when it is stored prepared or approved and is no longer in
 * the window of its status (prepared within $4 hours, approved within $5 hours after approval).
 * - Prepared: every day that ends before the prepare window starts holds only expired ones, so
 *   its kept count is read; the day the window starts in adds its prepared changes up to the
 *   window's start, counted live (`recent`, negated as the subtraction is: at most a day's
 *   prepared changes, in the window's partial index); the days after it hold none, and their
 *   rows are not read (docs/performance.md, "The expired changes' deep page").
 * - Approved: a day's kept count less its changes whose approval is still in its window, counted
 *   live in the window's partial index, grouped by the day they were prepared on (an approved
 *   change may have been prepared long before).
 * Both are exact whatever the settings were when the changes were approved, and the live parts
 * are bounded by the windows, not the history. (A bound on the prepare time before which every
 * stored prepared or approved change is expired does not hold: a change approved late under a longer prepare window than today's
 * is still shown approved.) An approved change always has its approval time (approveChange sets
 * both in one update); one without would be counted expired by the day counts, as by
 * countChanges, but listed as neither, and counting those apart read every approved change's
 * index entry, as the planner takes a missing approval time for common.
 */
function dayCountsWhere(f: {
  status?: string;
  accountId?: string;
  outcomeUnknown?: boolean;
}): DayCountsFilter | undefined {
  // Every change is counted under its account and under the one standing for every account, each
  // with its status and with `*`, standing for every status.
  const account = f.accountId === undefined ? 'change_day_every_account()' : '$3::uuid';
  const where = `k.workspace_id = $1 AND k.account_id = ${account}`;
  if (f.outcomeUnknown) return { where: `${where} AND k.status = 'failed' AND k.outcome_unknown` };
  if (f.status === undefined) return { where: `${where} AND k.status = '*'` };
  if (['rejected', 'applying', 'applied', 'failed'].includes(f.status))
    return { where: `${where} AND k.status = $2::text` };
  if (f.status !== 'expired') return undefined;
  const among = `c.workspace_id = $1 AND ($3::uuid IS NULL OR c.account_id = $3::uuid)`;
  return {
    where: [
      `${where} AND k.status = 'prepared' AND k.day < change_day(${PREPARE_WINDOW_STARTS})`,
      `${where} AND k.status = 'approved'`,
    ],
    with: `recent AS (
      SELECT change_day(${PREPARE_WINDOW_STARTS}) AS day, -count(*) AS n FROM changes c
       WHERE ${among} AND c.status = 'prepared'
         AND c.prepared_at >= change_day(${PREPARE_WINDOW_STARTS}) AND c.prepared_at <= ${PREPARE_WINDOW_STARTS}
      UNION ALL
      SELECT change_day(c.prepared_at), count(*) FROM changes c
       WHERE ${among} AND c.status = 'approved' AND c.approved_at > $6::timestamptz - make_interval(hours => $5::int)
       GROUP BY 1
    ), `,
    live: RECENT_SUBTRACTED,
  };
}

/**
 * The exact number of changes listChanges matches, from the counts the store keeps
 * (`change_counts`, migration 0017) rather than a count of every match, which grows with the
 * history. Prepared and approved changes still within their expiry window are counted in the
 * window's partial index (bounded by how many were made in the window); the expired ones are the
 * kept count of those two statuses less the ones in their window.
 */
export async function countChanges(
  db: Queryable,
  f: {
    workspaceId: string;
    status?: string;
    accountId?: string;
    outcomeUnknown?: boolean;
    expiry: ExpiryHours;
    now: Date;
  },
): Promise<number> {
  // $1 the workspace, $2 the account or null, $3 now, $4 and $5 the hours after prepare and after
  // approval. The statuses are literals so that the planner can use the partial window indexes.
  const kept = (statuses: string, outcomeUnknown = false) =>
    `(SELECT coalesce(sum(k.n), 0) FROM change_counts k
       WHERE k.workspace_id = $1 AND ($2::uuid IS NULL OR k.account_id = $2::uuid)
         AND k.status IN (${statuses})${outcomeUnknown ? ' AND k.outcome_unknown' : ''})`;
  const live = {
    prepared: `(SELECT count(*) FROM changes c
                 WHERE c.workspace_id = $1 AND c.status = 'prepared' AND ($2::uuid IS NULL OR c.account_id = $2::uuid)
                   AND c.prepared_at > $3::timestamptz - make_interval(hours => $4::int))`,
    approved: `(SELECT count(*) FROM changes c
                 WHERE c.workspace_id = $1 AND c.status = 'approved' AND ($2::uuid IS NULL OR c.account_id = $2::uuid)
                   AND c.approved_at > $3::timestamptz - make_interval(hours => $5::int))`,
  };
  const status = f.outcomeUnknown ? undefined : f.status;
  const stored = ['prepared', 'approved', 'rejected', 'applying', 'applied', 'failed'];
  const counted = f.outcomeUnknown
    ? kept(`'failed'`, true)
    : status === undefined
      ? kept(stored.map((s) => `'${s}'`).join(', '))
      : status === 'prepared' || status === 'approved'
        ? live[status]
        : status === 'expired'
          ? `${kept(`'prepared', 'approved'`)} - ${live.prepared} - ${live.approved}`
          : stored.includes(status)
            ? kept(`'${status}'`)
            : '0';
  // One statement, so that the kept counts and the windows are read in one snapshot. The VALUES
  // only types the parameters a case does not read.
  const { rows } = await db.query<{ n: string }>(
    `SELECT (${counted})::bigint::text AS n FROM (VALUES ($1::uuid, $2::uuid, $3::timestamptz, $4::int, $5::int)) p`,
    [f.workspaceId, f.accountId ?? null, f.now, f.expiry.preparedValidHours, f.expiry.approvalValidHours],
  );
  return Number(rows[0]?.n ?? 0);
}

export interface ChangeEventRow extends ChangeRow {
  kind: string;
  /** RFC 3339 in UTC with microseconds. */
  event_at: string;
  event_key: string;
}

/**
 * The workspace's change events, newest first, before the cursor (at, key): each change gives its
 * prepare, approval, rejection, apply request, its latest request to send it again after an
 * unknown outcome, its outcome (a failure at its latest apply request, as it has no time of its
 * own; also for a change a person later found applied), and a person's settling of an unknown
 * outcome (found applied or not applied; sending it again is its request to send it again). Keys compare byte-wise (COLLATE "C"), as the gateway merges them.
 */
export async function listChangeEvents(
  db: Queryable,
  f: {
    workspaceId: string;
    accountId?: string;
    userId?: string;
    beforeAt?: string;
    beforeKey?: string;
    limit: number;
  },
): Promise<ChangeEventRow[]> {
  const { rows } = await db.query<ChangeEventRow>(
    `SELECT * FROM (
       SELECT c.*, e.kind, e.at AS event_time,
              to_char(e.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS event_at,
              ('c:' || c.change_id::text || ':' || e.kind) COLLATE "C" AS event_key
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
          ('outcome_settled', CASE WHEN c.resolution IN ('applied', 'not_applied') THEN c.resolved_at END,
                              c.resolved_by)
        ) AS e(kind, at, actor)
        WHERE c.workspace_id = $1 AND e.at IS NOT NULL
          AND ($2::uuid IS NULL OR c.account_id = $2::uuid)
          AND ($3::text IS NULL OR e.actor LIKE 'user:' || $3 || ' via %')
     ) ev
     WHERE $4::timestamptz IS NULL OR (event_time, event_key) < ($4::timestamptz, $5::text COLLATE "C")
     ORDER BY event_time DESC, event_key DESC
     LIMIT $6`,
    [f.workspaceId, f.accountId ?? null, f.userId ?? null, f.beforeAt ?? null, f.beforeKey ?? '', f.limit],
  );
  return rows;
}

/** Approves a prepared change whose digest is still `digest`; undefined when it was not in that state. */
export async function approveChange(
  db: Queryable,
  a: {
    workspaceId: string;
    changeId: string;
    digest: string;
    by: string;
    userId: string | null;
    /** The first instant it is expired at (domain/change.ts expiresAt): from then on it is not approved. */
    expiresAt?: Date;
  },
): Promise<ChangeRow | undefined> {
  return atomically(db, async (tx) => {
    const { rows } = await tx.query<ChangeRow>(
      `UPDATE changes SET status = 'approved', approved_by = $4, approved_at = now(), approver_user_id = $5
        WHERE workspace_id = $1 AND change_id = $2 AND digest = $3 AND status = 'prepared'
          AND ($6::timestamptz IS NULL OR now() < $6::timestamptz)
        RETURNING *`,
      [a.workspaceId, a.changeId, a.digest, a.by, a.userId, a.expiresAt ?? null],
    );
    return auditChange(tx, 'approved', rows[0], a.by);
  });
}

/**
 * Rejects a prepared change, or an approved one not yet asked to apply; undefined when it was in
 * neither state (an apply request that moved it to applying first wins).
 */
export async function rejectChange(
  db: Queryable,
  r: { workspaceId: string; changeId: string; by: string; reason: string },
): Promise<ChangeRow | undefined> {
  return atomically(db, async (tx) => {
    const { rows } = await tx.query<ChangeRow>(
      `UPDATE changes SET status = 'rejected', rejected_by = $3, rejected_at = now(), reject_reason = $4
        WHERE workspace_id = $1 AND change_id = $2 AND status IN ('prepared', 'approved') RETURNING *`,
      [r.workspaceId, r.changeId, r.by, r.reason],
    );
    return auditChange(tx, 'rejected', rows[0], r.by);
  });
}

/**
 * Moves an approved change to applying; undefined when it was not approved, or its approval had
 * expired (`approvalValidHours` after it was given, when set).
 */
export async function markApplying(
  db: Queryable,
  m: { workspaceId: string; changeId: string; by: string; approvalValidHours?: number },
): Promise<ChangeRow | undefined> {
  return atomically(db, async (tx) => {
    const { rows } = await tx.query<ChangeRow>(
      `UPDATE changes SET status = 'applying', apply_requested_by = $3, apply_requested_at = now(), error = NULL
        WHERE workspace_id = $1 AND change_id = $2 AND status = 'approved'
          AND ($4::int IS NULL OR approved_at > now() - make_interval(hours => $4::int)) RETURNING *`,
      [m.workspaceId, m.changeId, m.by, m.approvalValidHours ?? null],
    );
    return auditChange(tx, 'apply_requested', rows[0], m.by);
  });
}

/**
 * Moves a change whose apply failed with its outcome unknown (it was sent, and no answer of the
 * platform was recorded) back to applying, to be sent again with the same idempotency key;
 * undefined when it is not such a change, or was first sent more than RESEND_WITHIN_HOURS ago.
 */
export async function markRetrying(
  db: Queryable,
  m: { workspaceId: string; changeId: string; by: string },
): Promise<ChangeRow | undefined> {
  return atomically(db, async (tx) => {
    const { rows } = await tx.query<ChangeRow>(
      `UPDATE changes SET status = 'applying', apply_retried_by = $3, apply_retried_at = now(), error = NULL
        WHERE workspace_id = $1 AND change_id = $2 AND status = 'failed'
          AND sent_at > now() - make_interval(hours => $4) AND upstream_status IS NULL
          AND resolution IS DISTINCT FROM 'not_applied' RETURNING *`,
      [m.workspaceId, m.changeId, m.by, RESEND_WITHIN_HOURS],
    );
    return auditChange(tx, 'apply_retried', rows[0], m.by);
  });
}

/**
 * Records how a person settled a change whose outcome is unknown: found applied (it becomes
 * applied; the platform's time of it is not known, so applied_at stays empty) or not applied (it
 * stays failed with `error`, and is no longer sent again). Undefined when the change's outcome was
 * no longer unknown (settled, or sent again, meanwhile).
 */
export async function settleOutcome(
  db: Queryable,
  s: {
    workspaceId: string;
    changeId: string;
    resolution: 'applied' | 'not_applied';
    by: string;
    note: string | null;
    error: string | null;
  },
): Promise<ChangeRow | undefined> {
  return atomically(db, async (tx) => {
    const { rows } = await tx.query<ChangeRow>(
      `UPDATE changes c SET status = CASE WHEN $3 = 'applied' THEN 'applied' ELSE 'failed' END,
              resolution = $3, resolved_by = $4, resolved_at = now(), resolution_note = $5, error = $6
        WHERE c.workspace_id = $1 AND c.change_id = $2 AND ${OUTCOME_UNKNOWN} RETURNING *`,
      [s.workspaceId, s.changeId, s.resolution, s.by, s.note, s.error],
    );
    // Its use of the spend envelope, kept while the outcome was unknown, follows the finding:
    // applied, it counts for its window; not applied, it is given back.
    if (rows[0] !== undefined)
      await settleUse(tx, {
        workspaceId: s.workspaceId,
        changeId: s.changeId,
        state: s.resolution === 'applied' ? 'applied' : 'released',
      });
    return auditChange(tx, 'outcome_settled', rows[0], s.by);
  });
}

/** Records that a person asked to send a change again (markRetrying moved it), with their note. */
export async function recordSendAgain(
  db: Queryable,
  s: { workspaceId: string; changeId: string; by: string; note: string | null },
): Promise<ChangeRow | undefined> {
  return atomically(db, async (tx) => {
    const { rows } = await tx.query<ChangeRow>(
      `UPDATE changes SET resolution = 'send_again', resolved_by = $3, resolved_at = now(), resolution_note = $4
        WHERE workspace_id = $1 AND change_id = $2 RETURNING *`,
      [s.workspaceId, s.changeId, s.by, s.note],
    );
    return auditChange(tx, 'outcome_settled', rows[0], s.by);
  });
}

/** Records the outcome of an apply; only a change still applying moves. */
export async function finishApply(
  db: Queryable,
  f: {
    workspaceId: string;
    changeId: string;
    status: 'applied' | 'failed';
    upstreamStatus: number | null;
    upstreamResponseJson: string | null;
    error: string | null;
    /** Where the platform's answer differs from what was reviewed (empty when it matched). */
    appliedDifferences?: string[];
    /**
     * A failed first send that the upstream-proxy refused before it reached the platform: marked
     * sent before it went, the change is recorded as never sent, so its outcome is known.
     */
    unsent?: boolean;
  },
): Promise<ChangeRow | undefined> {
  return atomically(db, async (tx) => {
    // Named (prepared once per connection), as the apply path's other statements: one per applied change.
    const { rows } = await tx.query<ChangeRow>({
      name: 'changes-finish-apply',
      text: `UPDATE changes SET status = $3, upstream_status = $4, upstream_response_json = $5, error = $6,
              applied_at = CASE WHEN $3 = 'applied' THEN now() ELSE applied_at END,
              applied_differences = $7, sent_at = CASE WHEN $8 THEN NULL ELSE sent_at END
        WHERE workspace_id = $1 AND change_id = $2 AND status = 'applying' RETURNING ${changeColumnsOf('changes')}`,
      values: [
        f.workspaceId,
        f.changeId,
        f.status,
        f.upstreamStatus,
        f.upstreamResponseJson,
        f.error,
        JSON.stringify(f.appliedDifferences ?? []),
        f.unsent === true,
      ],
    });
    // The worker's outcomes are chained by gathered folds: nothing reads the log right after one.
    return auditChange(tx, f.status, rows[0], 'worker:apply', 'gathered');
  });
}

/**
 * Records why a change still applying waits (an attempt met an outage; it is tried again), so
 * whoever reads the change sees it; the outcome, when it comes, replaces it.
 */
export async function noteApplyDelay(
  db: Queryable,
  n: { workspaceId: string; changeId: string; error: string },
): Promise<void> {
  await db.query(
    `UPDATE changes SET error = $3 WHERE workspace_id = $1 AND change_id = $2 AND status = 'applying'`,
    [n.workspaceId, n.changeId, n.error],
  );
}

/**
 * The changes `applying` since before `olderThanMs` ago (by when it was asked for, or last asked
 * again), oldest first: the candidates of the sweep for changes whose apply message was lost.
 */
export async function changesApplyingSince(
  db: Queryable,
  olderThanMs: number,
  limit: number,
): Promise<ChangeRow[]> {
  const { rows } = await db.query<ChangeRow>(
    `SELECT * FROM changes
      WHERE status = 'applying'
        AND greatest(apply_requested_at, apply_retried_at) < now() - $1 * interval '1 millisecond'
      ORDER BY greatest(apply_requested_at, apply_retried_at) LIMIT $2`,
    [olderThanMs, limit],
  );
  return rows;
}

/** Locks a change's row until the transaction ends; the row as it is then. */
export async function lockChange(
  db: Queryable,
  workspaceId: string,
  changeId: string,
): Promise<ChangeRow | undefined> {
  const { rows } = await db.query<ChangeRow>(
    'SELECT * FROM changes WHERE workspace_id = $1 AND change_id = $2 FOR UPDATE',
    [workspaceId, changeId],
  );
  return rows[0];
}

/** Records that the operation is about to be sent (committed before it is). */
export async function markSent(db: Queryable, workspaceId: string, changeId: string): Promise<void> {
  await db.query({
    name: 'changes-mark-sent',
    text: 'UPDATE changes SET sent_at = coalesce(sent_at, now()) WHERE workspace_id = $1 AND change_id = $2',
    values: [workspaceId, changeId],
  });
}

/**
 * The id of another change to the same object (`account_id`, `target_path`) that was sent to the
 * platform and whose outcome is not known yet (it is still applying), or undefined. With
 * `onlyUnread`, only one that is not being sent again by a person's request (its next attempts go
 * without a re-read of the object; one sent again re-reads it first).
 */
export async function unsettledChangeTo(
  db: Queryable,
  change: { change_id: string; account_id: string; target_path: string },
  onlyUnread = false,
): Promise<string | undefined> {
  const { rows } = await db.query<{ change_id: string }>(
    `SELECT change_id FROM changes
      WHERE account_id = $1 AND target_path = $2 AND status = 'applying' AND sent_at IS NOT NULL
        AND change_id <> $3 AND (NOT $4 OR apply_retried_at IS NULL)
      ORDER BY sent_at LIMIT 1`,
    [change.account_id, change.target_path, change.change_id, onlyUnread],
  );
  return rows[0]?.change_id;
}

/**
 * Records the platform's file id of an asset the change uploaded, so a later attempt of the same
 * apply sends the same file without uploading it again.
 */
export async function recordUploadedFile(
  db: Queryable,
  f: { workspaceId: string; changeId: string; assetId: string; fileId: string },
): Promise<void> {
  await db.query(
    `UPDATE changes
        SET uploads = (SELECT coalesce(jsonb_agg(CASE WHEN u->>'asset_id' = $3
                                                      THEN jsonb_set(u, '{file_id}', to_jsonb($4::text))
                                                      ELSE u END ORDER BY n), '[]'::jsonb)
                         FROM jsonb_array_elements(uploads) WITH ORDINALITY AS e(u, n))
      WHERE workspace_id = $1 AND change_id = $2`,
    [f.workspaceId, f.changeId, f.assetId, f.fileId],
  );
}
