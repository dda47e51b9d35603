/**
 * The review_runs and proposals tables. Every query names the workspace, except the workers' own
 * loads by id. The snapshot, variant and evidence are kept as JSON in the domain's shapes.
 */

import { randomUUID } from 'node:crypto';
import {
  type DayCountsFilter,
  dayHoldingOffset,
  dayRowsToRead,
  RECENT_SUBTRACTED,
} from '@adsmcp/runtime/day-pages';
import type { Queryable } from '@adsmcp/runtime/db';
import type { Optimizer } from '../domain/optimizer.ts';
import { PROPOSAL_STATUSES, type Proposal, type ProposalStatus } from '../domain/proposal.ts';
import {
  type AdPerformance,
  newRun,
  type Outcome,
  type Run,
  type RunStatus,
  type Snapshot,
  type Trigger,
  type Variant,
} from '../domain/review.ts';

interface RunRow {
  run_id: string;
  workspace_id: string;
  optimizer_id: string;
  account_id: string;
  status: RunStatus;
  trigger: Trigger;
  requested_by: string;
  claim_token: string | null;
  claimed_by: string | null;
  claimed_at: Date | null;
  claim_expires_at: Date | null;
  snapshot: Snapshot | null;
  outcome: Outcome | null;
  summary: string | null;
  completion_digest: string | null;
  completed_at: Date | null;
  cancel_reason: string | null;
  created_at: Date;
  updated_at: Date;
}

const RUN_COLUMNS =
  'run_id, workspace_id, optimizer_id, account_id, status, trigger, requested_by, claim_token, claimed_by, claimed_at, claim_expires_at, snapshot, outcome, summary, completion_digest, completed_at, cancel_reason, created_at, updated_at';

const toRun = (r: RunRow): Run => ({
  runId: r.run_id,
  workspaceId: r.workspace_id,
  optimizerId: r.optimizer_id,
  accountId: r.account_id,
  status: r.status,
  trigger: r.trigger,
  requestedBy: r.requested_by,
  claimToken: r.claim_token,
  claimedBy: r.claimed_by,
  claimedAt: r.claimed_at,
  claimExpiresAt: r.claim_expires_at,
  snapshot: r.snapshot,
  outcome: r.outcome,
  summary: r.summary,
  completionDigest: r.completion_digest,
  completedAt: r.completed_at,
  cancelReason: r.cancel_reason,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const runValues = (r: Run) => [
  r.runId,
  r.workspaceId,
  r.optimizerId,
  r.accountId,
  r.status,
  r.trigger,
  r.requestedBy,
  r.claimToken,
  r.claimedBy,
  r.claimedAt,
  r.claimExpiresAt,
  r.snapshot === null ? null : JSON.stringify(r.snapshot),
  r.outcome,
  r.summary,
  r.completionDigest,
  r.completedAt,
  r.cancelReason,
  r.createdAt,
  r.updatedAt,
];

/** insertRun stores a new run, unless the optimizer already has an open one (then undefined). */
export async function insertRun(db: Queryable, r: Run): Promise<Run | undefined> {
  const { rows } = await db.query<RunRow>(
    `INSERT INTO review_runs (${RUN_COLUMNS})
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
     ON CONFLICT (optimizer_id) WHERE status IN ('queued', 'claimed') DO NOTHING
     RETURNING ${RUN_COLUMNS}`,
    runValues(r),
  );
  const row = rows[0];
  return row === undefined ? undefined : toRun(row);
}

/** openRun returns the optimizer's queued or claimed run, if any. */
export async function openRun(
  db: Queryable,
  workspaceId: string,
  optimizerId: string,
): Promise<Run | undefined> {
  const { rows } = await db.query<RunRow>(
    `SELECT ${RUN_COLUMNS} FROM review_runs
      WHERE workspace_id = $1 AND optimizer_id = $2 AND status IN ('queued', 'claimed')`,
    [workspaceId, optimizerId],
  );
  const row = rows[0];
  return row === undefined ? undefined : toRun(row);
}

/** getRun returns one run of the workspace (locked until the transaction ends, with `lock`). */
export async function getRun(
  db: Queryable,
  workspaceId: string,
  runId: string,
  lock = false,
): Promise<Run | undefined> {
  const { rows } = await db.query<RunRow>(
    `SELECT ${RUN_COLUMNS} FROM review_runs WHERE workspace_id = $1 AND run_id = $2${lock ? ' FOR UPDATE' : ''}`,
    [workspaceId, runId],
  );
  const row = rows[0];
  return row === undefined ? undefined : toRun(row);
}

/** updateRun writes every changeable field of `r`. */
export async function updateRun(db: Queryable, r: Run): Promise<Run> {
  const { rows } = await db.query<RunRow>(
    `UPDATE review_runs
        SET status = $3, claim_token = $4, claimed_by = $5, claimed_at = $6, claim_expires_at = $7,
            snapshot = $8, outcome = $9, summary = $10, completion_digest = $11, completed_at = $12,
            cancel_reason = $13, updated_at = $14
      WHERE workspace_id = $1 AND run_id = $2
      RETURNING ${RUN_COLUMNS}`,
    [
      r.workspaceId,
      r.runId,
      r.status,
      r.claimToken,
      r.claimedBy,
      r.claimedAt,
      r.claimExpiresAt,
      r.snapshot === null ? null : JSON.stringify(r.snapshot),
      r.outcome,
      r.summary,
      r.completionDigest,
      r.completedAt,
      r.cancelReason,
      r.updatedAt,
    ],
  );
  const row = rows[0];
  if (row === undefined) throw new Error('a locked run disappeared');
  return toRun(row);
}

export interface RunFilter {
  workspaceId: string;
  optimizerId?: string | undefined;
  /** The status as shown: a claim that ran out (before `now`) counts as queued. */
  status?: RunStatus | undefined;
  now: Date;
  limit: number;
  offset: number;
}

const RUN_WHERE = `workspace_id = $1 AND ($2::uuid IS NULL OR optimizer_id = $2::uuid)
  AND ($3::text IS NULL OR
       (CASE WHEN status = 'claimed' AND claim_expires_at <= $4 THEN 'queued' ELSE status END) = $3)`;

/** listRuns returns one page of the workspace's runs, newest first. */
export async function listRuns(db: Queryable, f: RunFilter): Promise<Run[]> {
  const { rows } = await db.query<RunRow>(
    `SELECT ${RUN_COLUMNS} FROM review_runs WHERE ${RUN_WHERE}
      ORDER BY created_at DESC, run_id DESC LIMIT $5 OFFSET $6`,
    [f.workspaceId, f.optimizerId ?? null, f.status ?? null, f.now, f.limit, f.offset],
  );
  return rows.map(toRun);
}

/** countRuns counts the runs listRuns pages through. */
export async function countRuns(db: Queryable, f: Omit<RunFilter, 'limit' | 'offset'>): Promise<number> {
  const { rows } = await db.query<{ total: number }>(
    `SELECT count(*)::int AS total FROM review_runs WHERE ${RUN_WHERE}`,
    [f.workspaceId, f.optimizerId ?? null, f.status ?? null, f.now],
  );
  return rows[0]?.total ?? 0;
}

/** cancelOpenRuns cancels the optimizer's queued and claimed runs (it was paused). */
export async function cancelOpenRuns(
  db: Queryable,
  workspaceId: string,
  optimizerId: string,
  reason: string,
  now: Date,
): Promise<void> {
  await db.query(
    `UPDATE review_runs SET status = 'cancelled', cancel_reason = $3, updated_at = $4
      WHERE workspace_id = $1 AND optimizer_id = $2 AND status IN ('queued', 'claimed')`,
    [workspaceId, optimizerId, reason, now],
  );
}

interface ProposalRow {
  proposal_id: string;
  workspace_id: string;
  optimizer_id: string;
  account_id: string;
  run_id: string;
  position: number;
  status: ProposalStatus;
  revision: number;
  variant: Variant;
  evidence: AdPerformance | null;
  review_expires_at: Date | null;
  review_note: string | null;
  reviewed_by: string | null;
  approved_by: string | null;
  approved_user_id: string | null;
  approved_at: Date | null;
  publish_by: Date | null;
  change_id: string | null;
  change_status: string | null;
  change_error: string | null;
  published_at: Date | null;
  cancelled_at: Date | null;
  cancel_reason: string | null;
  created_at: Date;
  updated_at: Date;
}

const PROPOSAL_COLUMNS =
  'proposal_id, workspace_id, optimizer_id, account_id, run_id, position, status, revision, variant, evidence, review_expires_at, review_note, reviewed_by, approved_by, approved_user_id, approved_at, publish_by, change_id, change_status, change_error, published_at, cancelled_at, cancel_reason, created_at, updated_at';

const toProposal = (r: ProposalRow): Proposal => ({
  proposalId: r.proposal_id,
  workspaceId: r.workspace_id,
  optimizerId: r.optimizer_id,
  accountId: r.account_id,
  runId: r.run_id,
  position: r.position,
  status: r.status,
  revision: r.revision,
  variant: r.variant,
  evidence: r.evidence,
  reviewExpiresAt: r.review_expires_at,
  reviewNote: r.review_note,
  reviewedBy: r.reviewed_by,
  approvedBy: r.approved_by,
  approvedUserId: r.approved_user_id,
  approvedAt: r.approved_at,
  publishBy: r.publish_by,
  changeId: r.change_id,
  changeStatus: r.change_status,
  changeError: r.change_error,
  publishedAt: r.published_at,
  cancelledAt: r.cancelled_at,
  cancelReason: r.cancel_reason,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** insertProposal stores a new proposal. */
export async function insertProposal(db: Queryable, p: Proposal): Promise<Proposal> {
  const { rows } = await db.query<ProposalRow>(
    `INSERT INTO proposals (${PROPOSAL_COLUMNS})
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25)
     RETURNING ${PROPOSAL_COLUMNS}`,
    [
      p.proposalId,
      p.workspaceId,
      p.optimizerId,
      p.accountId,
      p.runId,
      p.position,
      p.status,
      p.revision,
      JSON.stringify(p.variant),
      p.evidence === null ? null : JSON.stringify(p.evidence),
      p.reviewExpiresAt,
      p.reviewNote,
      p.reviewedBy,
      p.approvedBy,
      p.approvedUserId,
      p.approvedAt,
      p.publishBy,
      p.changeId,
      p.changeStatus,
      p.changeError,
      p.publishedAt,
      p.cancelledAt,
      p.cancelReason,
      p.createdAt,
      p.updatedAt,
    ],
  );
  const row = rows[0];
  if (row === undefined) throw new Error('INSERT ... RETURNING returned no row');
  return toProposal(row);
}

/** getProposal returns one proposal of the workspace (locked until the transaction ends, with `lock`). */
export async function getProposal(
  db: Queryable,
  workspaceId: string,
  proposalId: string,
  lock = false,
): Promise<Proposal | undefined> {
  const { rows } = await db.query<ProposalRow>(
    `SELECT ${PROPOSAL_COLUMNS} FROM proposals WHERE workspace_id = $1 AND proposal_id = $2${lock ? ' FOR UPDATE' : ''}`,
    [workspaceId, proposalId],
  );
  const row = rows[0];
  return row === undefined ? undefined : toProposal(row);
}

/** runProposals returns a run's proposals in the order they were proposed. */
export async function runProposals(db: Queryable, workspaceId: string, runId: string): Promise<Proposal[]> {
  const { rows } = await db.query<ProposalRow>(
    `SELECT ${PROPOSAL_COLUMNS} FROM proposals WHERE workspace_id = $1 AND run_id = $2 ORDER BY position`,
    [workspaceId, runId],
  );
  return rows.map(toProposal);
}

/** The ids of runs' proposals, by run. */
export async function proposalIdsOf(
  db: Queryable,
  workspaceId: string,
  runIds: readonly string[],
): Promise<Map<string, string[]>> {
  const { rows } = await db.query<{ run_id: string; proposal_id: string }>(
    `SELECT run_id, proposal_id FROM proposals WHERE workspace_id = $1 AND run_id = ANY($2::uuid[]) ORDER BY position`,
    [workspaceId, runIds],
  );
  const byRun = new Map<string, string[]>();
  for (const r of rows) byRun.set(r.run_id, [...(byRun.get(r.run_id) ?? []), r.proposal_id]);
  return byRun;
}

/** updateProposal writes every changeable field of `p` over the row at revision `fromRevision`. */
export async function updateProposal(
  db: Queryable,
  p: Proposal,
  fromRevision: number,
): Promise<Proposal | undefined> {
  const { rows } = await db.query<ProposalRow>(
    `UPDATE proposals
        SET status = $4, revision = $5, variant = $6, review_expires_at = $7, review_note = $8,
            reviewed_by = $9, approved_by = $10, approved_user_id = $11, approved_at = $12, publish_by = $13,
            change_id = $14, change_status = $15, change_error = $16, published_at = $17,
            cancelled_at = $18, cancel_reason = $19, updated_at = $20
      WHERE workspace_id = $1 AND proposal_id = $2 AND revision = $3
      RETURNING ${PROPOSAL_COLUMNS}`,
    [
      p.workspaceId,
      p.proposalId,
      fromRevision,
      p.status,
      p.revision,
      JSON.stringify(p.variant),
      p.reviewExpiresAt,
      p.reviewNote,
      p.reviewedBy,
      p.approvedBy,
      p.approvedUserId,
      p.approvedAt,
      p.publishBy,
      p.changeId,
      p.changeStatus,
      p.changeError,
      p.publishedAt,
      p.cancelledAt,
      p.cancelReason,
      p.updatedAt,
    ],
  );
  const row = rows[0];
  return row === undefined ? undefined : toProposal(row);
}

export interface ProposalFilter {
  workspaceId: string;
  optimizerId?: string | undefined;
  status?: string | undefined;
  accountId?: string | undefined;
  runId?: string | undefined;
  createdAfter?: string | undefined;
  createdBefore?: string | undefined;
  now: Date;
  limit: number;
  offset: number;
}

const PROPOSAL_WHERE = `workspace_id = $1 AND ($2::uuid IS NULL OR optimizer_id = $2::uuid)
  AND ($3::text IS NULL OR
       (CASE WHEN status = 'pending_review' AND review_expires_at <= $4 THEN 'expired'
             WHEN status = 'approved' AND publish_by <= $4 THEN 'expired'
             ELSE status END) = $3)
  AND ($5::uuid IS NULL OR account_id = $5::uuid) AND ($6::uuid IS NULL OR run_id = $6::uuid)
  AND ($7::timestamptz IS NULL OR created_at >= $7::timestamptz)
  AND ($8::timestamptz IS NULL OR created_at < $8::timestamptz)`;

/** The parameters of PROPOSAL_WHERE, $1 to $8. */
function proposalWhereParams(f: Omit<ProposalFilter, 'limit' | 'offset'>): unknown[] {
  return [
    f.workspaceId,
    f.optimizerId ?? null,
    f.status ?? null,
    f.now,
    f.accountId ?? null,
    f.runId ?? null,
    f.createdAfter ?? null,
    f.createdBefore ?? null,
  ];
}

/** listProposals returns one page of the workspace's proposals, newest first. */
export async function listProposals(db: Queryable, f: ProposalFilter): Promise<Proposal[]> {
  // The page's ids first, from proposals_by_workspace (in the list's order), then only the page's
  // rows. Where the filter is one the day counts keep (migration 0005), the day holding the
  // offset's proposal is found from them and only that day's earlier matches are skipped (as the
  // changes list, whose store says why in one statement and why the day rows read are bounded);
  // otherwise the offset skips its index entries.
  const days = dayCountsWhere(f);
  const { rows } = await db.query<ProposalRow>(
    days === undefined
      ? `SELECT ${PROPOSAL_COLUMNS}
           FROM (SELECT proposal_id AS page_id, created_at AS page_at, position AS page_position FROM proposals
                  WHERE ${PROPOSAL_WHERE}
                  ORDER BY created_at DESC, position, proposal_id LIMIT $9 OFFSET $10) AS ids
           JOIN proposals ON proposals.proposal_id = ids.page_id
          ORDER BY ids.page_at DESC, ids.page_position, ids.page_id`
      : `WITH ${dayHoldingOffset({ counts: 'proposal_day_counts', ...days, limit: '$11', offset: '$10' })}
         SELECT ${PROPOSAL_COLUMNS}
           FROM (SELECT proposal_id AS page_id, created_at AS page_at, position AS page_position FROM proposals
                  WHERE ${PROPOSAL_WHERE} AND created_at < coalesce((SELECT ends FROM day), 'infinity')
                  ORDER BY created_at DESC, position, proposal_id
                  LIMIT $9 OFFSET $10::bigint - coalesce((SELECT newer FROM day), 0)) AS ids
           JOIN proposals ON proposals.proposal_id = ids.page_id
          ORDER BY ids.page_at DESC, ids.page_position, ids.page_id`,
    [
      ...proposalWhereParams(f),
      f.limit,
      f.offset,
      ...(days === undefined ? [] : [dayRowsToRead(f.offset, dayRowsPerOffset(f))]),
    ],
  );
  return rows.map(toProposal);
}

/**
 * listProposals reads at most offset / this many day-count rows (dayRowsToRead),
 * so that a workspace whose keys have few proposals a day pays a bounded share more than the plain
 * offset. Without a filter the plain offset skips index entries alone, about a tenth of a day row
 * each (bench/deep-offset.ts); with one it reads each skipped proposal's row to test the optimizer,
 * account or status, which proposals_by_workspace does not hold, several times dearer.
 */
function dayRowsPerOffset(f: ProposalFilter): number {
  return f.optimizerId === undefined && f.accountId === undefined && f.status === undefined ? 32 : 8;
}

/**
 * The condition on `proposal_day_counts` as `k` (migration 0005) that counts exactly the
 * proposals listProposals's filter matches, in its parameters ($1 the workspace, $2 the optimizer,
 * $3 the status, $4 now, $5 the account). Undefined for a run or a time range (not kept), and for
 * pending review and approved, whose matches are all before their deadline.
 *
 * Expired: a proposal is shown expired when it is stored expired, or pending review or approved
 * with its deadline (`review_expires_at`, `publish_by`) passed. Those deadlines are set from the
 * time of the review or the approval, not bounded by the creation time the list is ordered by, so
 * no creation day is old enough for the stored status alone to decide; instead a day's expired
 * matches are its kept counts of the three statuses less its pending and approved proposals whose
 * deadline has not passed (or is not set), counted live in the deadlines' partial indexes
 * (`recent`, the proposals countProposals counts live too; a deadline not set apart, so that each
 * is a range of its partial index).
 */
function dayCountsWhere(f: ProposalFilter): DayCountsFilter | undefined {
  if (f.runId !== undefined || f.createdAfter !== undefined || f.createdBefore !== undefined)
    return undefined;
  // Every proposal is counted under its optimizer and account and under the id standing for every
  // one, each with its status and with `*` for every status; a filter reads the rows of its
  // optimizer, else of its account, else of every one.
  const where = [
    'k.workspace_id = $1',
    f.optimizerId !== undefined
      ? 'k.optimizer_id = $2::uuid'
      : f.accountId !== undefined
        ? 'k.account_id = $5::uuid'
        : 'k.optimizer_id = proposal_day_every()',
  ];
  if (f.optimizerId !== undefined && f.accountId !== undefined) where.push('k.account_id = $5::uuid');
  if (f.status === undefined) where.push(`k.status = '*'`);
  else if (f.status === 'pending_review' || f.status === 'approved') return undefined;
  else if (f.status !== 'expired') where.push('k.status = $3::text');
  else {
    const among = `p.workspace_id = $1 AND ($2::uuid IS NULL OR p.optimizer_id = $2::uuid)
                   AND ($5::uuid IS NULL OR p.account_id = $5::uuid)`;
    return {
      // Each stored status a range of the counts' index in day order, merged (an `IN` read them
      // one after the other, and sorted them).
      where: ['expired', 'pending_review', 'approved'].map((s) =>
        [...where, `k.status = '${s}'`].join(' AND '),
      ),
      with: `recent AS (
        SELECT proposal_day(p.created_at) AS day, count(*) AS n FROM proposals p
         WHERE ${among} AND p.status = 'pending_review' AND p.review_expires_at > $4 GROUP BY 1
        UNION ALL
        SELECT proposal_day(p.created_at), count(*) FROM proposals p
         WHERE ${among} AND p.status = 'pending_review' AND p.review_expires_at IS NULL GROUP BY 1
        UNION ALL
        SELECT proposal_day(p.created_at), count(*) FROM proposals p
         WHERE ${among} AND p.status = 'approved' AND p.publish_by > $4 GROUP BY 1
        UNION ALL
        SELECT proposal_day(p.created_at), count(*) FROM proposals p
         WHERE ${among} AND p.status = 'approved' AND p.publish_by IS NULL GROUP BY 1
      ), `,
      live: RECENT_SUBTRACTED,
    };
  }
  return { where: where.join(' AND ') };
}

/**
 * The number of proposals listProposals matches. Without a run or a creation time in the filter it
 * comes from the counts the store keeps (`proposal_counts`, migration 0004) rather than a count of
 * every match, which grows with the history: pending and approved proposals still within their
 * deadline are counted in their deadline's partial index, and the expired ones are the kept count
 * less those. A run's proposals (a few) and a time range are counted in the indexes.
 */
export async function countProposals(
  db: Queryable,
  f: Omit<ProposalFilter, 'limit' | 'offset'>,
): Promise<number> {
  if (f.runId !== undefined || f.createdAfter !== undefined || f.createdBefore !== undefined) {
    const { rows } = await db.query<{ total: number }>(
      `SELECT count(*)::int AS total FROM proposals WHERE ${PROPOSAL_WHERE}`,
      proposalWhereParams(f),
    );
    return rows[0]?.total ?? 0;
  }
  // $1 the workspace, $2 the optimizer or null, $3 the account or null, $4 now. The statuses are
  // literals (checked against PROPOSAL_STATUSES) so that the planner can use the partial indexes.
  const kept = (statuses: readonly string[]) =>
    `(SELECT coalesce(sum(k.n), 0) FROM proposal_counts k
       WHERE k.workspace_id = $1 AND ($2::uuid IS NULL OR k.optimizer_id = $2::uuid)
         AND ($3::uuid IS NULL OR k.account_id = $3::uuid) AND k.status IN (${statuses.map((st) => `'${st}'`).join(', ')}))`;
  // A deadline not set never passes (shownProposalStatus): those are counted apart, so that each
  // count is an index-only range of the partial index rather than a bitmap of both.
  const live = (status: 'pending_review' | 'approved') => {
    const deadline = status === 'pending_review' ? 'review_expires_at' : 'publish_by';
    const among = `p.workspace_id = $1 AND p.status = '${status}' AND ($2::uuid IS NULL OR p.optimizer_id = $2::uuid)
                   AND ($3::uuid IS NULL OR p.account_id = $3::uuid)`;
    return `((SELECT count(*) FROM proposals p WHERE ${among} AND p.${deadline} > $4)
             + (SELECT count(*) FROM proposals p WHERE ${among} AND p.${deadline} IS NULL))`;
  };
  const status = f.status;
  const counted =
    status === undefined
      ? kept(PROPOSAL_STATUSES)
      : status === 'pending_review' || status === 'approved'
        ? live(status)
        : status === 'expired'
          ? `${kept(['expired', 'pending_review', 'approved'])} - ${live('pending_review')} - ${live('approved')}`
          : (PROPOSAL_STATUSES as readonly string[]).includes(status)
            ? kept([status])
            : '0';
  // One statement, so that the kept counts and the deadlines are read in one snapshot. The VALUES
  // only types the parameters a case does not read.
  const { rows } = await db.query<{ total: string }>(
    `SELECT (${counted})::bigint::text AS total
       FROM (VALUES ($1::uuid, $2::uuid, $3::uuid, $4::timestamptz)) p`,
    [f.workspaceId, f.optimizerId ?? null, f.accountId ?? null, f.now],
  );
  return Number(rows[0]?.total ?? 0);
}

/** cancelUndispatched cancels the optimizer's approved proposals not yet dispatched (it was paused). */
export async function cancelUndispatched(
  db: Queryable,
  workspaceId: string,
  optimizerId: string,
  reason: string,
  now: Date,
): Promise<void> {
  await db.query(
    `UPDATE proposals SET status = 'cancelled', revision = revision + 1, cancelled_at = $3, cancel_reason = $4, updated_at = $3
      WHERE workspace_id = $1 AND optimizer_id = $2 AND status = 'approved'`,
    [workspaceId, optimizerId, now, reason],
  );
}

/**
 * setFeatureSuspended records whether the workspace's optimizer feature has ended (`suspended`);
 * it returns false when that was already so.
 */
export async function setFeatureSuspended(
  db: Queryable,
  workspaceId: string,
  suspended: boolean,
  now: Date,
): Promise<boolean> {
  const { rowCount } = suspended
    ? await db.query(
        'INSERT INTO feature_suspensions (workspace_id, since) VALUES ($1, $2) ON CONFLICT (workspace_id) DO NOTHING',
        [workspaceId, now],
      )
    : await db.query('DELETE FROM feature_suspensions WHERE workspace_id = $1', [workspaceId]);
  return (rowCount ?? 0) > 0;
}

/** featureSuspended tells whether the workspace's optimizer feature has ended. */
export async function featureSuspended(db: Queryable, workspaceId: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM feature_suspensions WHERE workspace_id = $1', [
    workspaceId,
  ]);
  return (rowCount ?? 0) > 0;
}

/**
 * lockDueOptimizers locks up to `limit` enabled optimizers whose next review is due, leaving out
 * the workspaces whose optimizer feature has ended (their reviews wait until it is back).
 */
export async function lockDueOptimizers(
  db: Queryable,
  now: Date,
  limit: number,
): Promise<{ optimizer_id: string; workspace_id: string; next_review_at: Date; cadence_hours: number }[]> {
  const { rows } = await db.query<{
    optimizer_id: string;
    workspace_id: string;
    next_review_at: Date;
    cadence_hours: number;
  }>(
    `SELECT optimizer_id, workspace_id, next_review_at, (config->>'cadence_hours')::int AS cadence_hours
       FROM optimizers o WHERE enabled AND next_review_at <= $1
        AND NOT EXISTS (SELECT 1 FROM feature_suspensions s WHERE s.workspace_id = o.workspace_id)
      ORDER BY next_review_at LIMIT $2 FOR UPDATE OF o SKIP LOCKED`,
    [now, limit],
  );
  return rows;
}

/** setNextReview moves an optimizer's next review without touching its revision (the cadence is not an edit). */
export async function setNextReview(db: Queryable, optimizerId: string, next: Date): Promise<void> {
  await db.query('UPDATE optimizers SET next_review_at = $2 WHERE optimizer_id = $1 AND enabled', [
    optimizerId,
    next,
  ]);
}

/**
 * requestRun returns the optimizer's open run, or queues a new one: the one place a run is made,
 * for an agent's request and for the cadence alike.
 */
export async function requestRun(
  tx: Queryable,
  optimizer: Optimizer,
  trigger: Trigger,
  by: string,
  now: Date,
): Promise<{ run: Run; created: boolean }> {
  const open = await openRun(tx, optimizer.workspaceId, optimizer.optimizerId);
  if (open !== undefined) return { run: open, created: false };
  const made = newRun(
    {
      runId: randomUUID(),
      workspaceId: optimizer.workspaceId,
      optimizerId: optimizer.optimizerId,
      accountId: optimizer.accountId,
    },
    trigger,
    by,
    now,
  );
  const inserted = await insertRun(tx, made);
  if (inserted !== undefined) return { run: inserted, created: true };
  // Another request queued one meanwhile.
  const other = await openRun(tx, optimizer.workspaceId, optimizer.optimizerId);
  if (other === undefined) throw new Error('an open run was neither inserted nor found');
  return { run: other, created: false };
}
