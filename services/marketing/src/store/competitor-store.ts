/**
 * The competitor watch tables: sources, their observations, and the per-host politeness slots.
 * Every query on sources and observations names the workspace, except the scheduler's, which
 * works across workspaces and carries each source's workspace into the message it enqueues.
 */
import type { Queryable } from '@adsmcp/runtime/db';
import type { Evidence, Observation, Trigger } from '../domain/competitor-observation.ts';
import type { CompetitorSource, LastCheck, Outcome } from '../domain/competitor-source.ts';
import type { Baseline, BaselineLiteral } from '../domain/page-comparison.ts';

interface SourceRow {
  source_id: string;
  workspace_id: string;
  account_id: string;
  name: string;
  url: string;
  host: string;
  literals: string[];
  interval_hours: number;
  enabled: boolean;
  paused_at: Date | null;
  next_check_at: Date | null;
  created_by: string;
  revision: number;
  created_at: Date;
  updated_at: Date;
  baseline_at: Date | null;
  baseline_title: string | null;
  baseline_text: string | null;
  baseline_literals: BaselineLiteral[] | null;
  last_observation_id: string | null;
  last_checked_at: Date | null;
  last_outcome: Outcome | null;
  last_http_status: number | null;
  last_summary: string | null;
}

const COLUMNS = `source_id, workspace_id, account_id, name, url, host, literals, interval_hours, enabled, paused_at,
  next_check_at, created_by, revision, created_at, updated_at, baseline_at, baseline_title, baseline_text,
  baseline_literals, last_observation_id, last_checked_at, last_outcome, last_http_status, last_summary`;

const NEWEST_FIRST = 'ORDER BY created_at DESC, source_id DESC';

function lastCheckOf(r: SourceRow): LastCheck | null {
  if (r.last_observation_id === null || r.last_checked_at === null || r.last_outcome === null) return null;
  return {
    observationId: r.last_observation_id,
    checkedAt: r.last_checked_at,
    outcome: r.last_outcome,
    httpStatus: r.last_http_status,
    summary: r.last_summary ?? '',
  };
}

function baselineOfRow(r: SourceRow): Baseline | null {
  if (r.baseline_at === null) return null;
  return { title: r.baseline_title ?? '', text: r.baseline_text ?? '', literals: r.baseline_literals };
}

const toSource = (r: SourceRow): CompetitorSource => ({
  sourceId: r.source_id,
  workspaceId: r.workspace_id,
  accountId: r.account_id,
  name: r.name,
  url: r.url,
  host: r.host,
  literals: r.literals,
  intervalHours: r.interval_hours,
  enabled: r.enabled,
  pausedAt: r.paused_at,
  nextCheckAt: r.next_check_at,
  createdBy: r.created_by,
  revision: r.revision,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  baselineAt: r.baseline_at,
  baseline: baselineOfRow(r),
  lastCheck: lastCheckOf(r),
});

function one<T>(rows: T[]): T {
  const row = rows[0];
  if (row === undefined) throw new Error('the statement returned no row');
  return row;
}

/** insertSource stores a new source. */
export async function insertSource(db: Queryable, s: CompetitorSource): Promise<CompetitorSource> {
  const { rows } = await db.query<SourceRow>(
    `INSERT INTO competitor_sources (source_id, workspace_id, account_id, name, url, host, literals, interval_hours,
       enabled, paused_at, next_check_at, created_by, revision, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $10, $11, $12, $13, $14, $15)
     RETURNING ${COLUMNS}`,
    [
      s.sourceId,
      s.workspaceId,
      s.accountId,
      s.name,
      s.url,
      s.host,
      JSON.stringify(s.literals),
      s.intervalHours,
      s.enabled,
      s.pausedAt,
      s.nextCheckAt,
      s.createdBy,
      s.revision,
      s.createdAt,
      s.updatedAt,
    ],
  );
  return toSource(one(rows));
}

/** getSource returns one source of the workspace, or undefined. */
export async function getSource(
  db: Queryable,
  workspaceId: string,
  sourceId: string,
): Promise<CompetitorSource | undefined> {
  const { rows } = await db.query<SourceRow>(
    `SELECT ${COLUMNS} FROM competitor_sources WHERE workspace_id = $1 AND source_id = $2`,
    [workspaceId, sourceId],
  );
  const row = rows[0];
  return row === undefined ? undefined : toSource(row);
}

/** lockSource is getSource, locking the row until the transaction `db` runs in ends. */
export async function lockSource(
  db: Queryable,
  workspaceId: string,
  sourceId: string,
): Promise<CompetitorSource | undefined> {
  const { rows } = await db.query<SourceRow>(
    `SELECT ${COLUMNS} FROM competitor_sources WHERE workspace_id = $1 AND source_id = $2 FOR UPDATE`,
    [workspaceId, sourceId],
  );
  const row = rows[0];
  return row === undefined ? undefined : toSource(row);
}

/**
 * updateSource writes the saved fields, the schedule and the baseline (cleared when `s` has none)
 * of `s` over the row whose revision is `fromRevision`; undefined when there is no such row.
 */
export async function updateSource(
  db: Queryable,
  s: CompetitorSource,
  fromRevision: number,
): Promise<CompetitorSource | undefined> {
  const { rows } = await db.query<SourceRow>(
    `UPDATE competitor_sources
        SET name = $4, url = $5, host = $6, literals = $7::jsonb, interval_hours = $8, enabled = $9, paused_at = $10,
            next_check_at = $11, revision = $12, updated_at = $13,
            baseline_at = CASE WHEN $14::boolean THEN baseline_at END,
            baseline_title = CASE WHEN $14::boolean THEN baseline_title END,
            baseline_text = CASE WHEN $14::boolean THEN baseline_text END,
            baseline_literals = CASE WHEN $14::boolean THEN baseline_literals END
      WHERE workspace_id = $1 AND source_id = $2 AND revision = $3
      RETURNING ${COLUMNS}`,
    [
      s.workspaceId,
      s.sourceId,
      fromRevision,
      s.name,
      s.url,
      s.host,
      JSON.stringify(s.literals),
      s.intervalHours,
      s.enabled,
      s.pausedAt,
      s.nextCheckAt,
      s.revision,
      s.updatedAt,
      s.baseline !== null,
    ],
  );
  const row = rows[0];
  return row === undefined ? undefined : toSource(row);
}

export interface ListFilter {
  workspaceId: string;
  accountId?: string | undefined;
  limit: number;
  offset: number;
}

/** listSources returns one page of the workspace's sources (of one account, if given), newest first. */
export async function listSources(db: Queryable, f: ListFilter): Promise<CompetitorSource[]> {
  const { rows } = await db.query<SourceRow>(
    `SELECT ${COLUMNS} FROM competitor_sources
      WHERE workspace_id = $1 AND ($2::uuid IS NULL OR account_id = $2::uuid)
      ${NEWEST_FIRST}
      LIMIT $3 OFFSET $4`,
    [f.workspaceId, f.accountId ?? null, f.limit, f.offset],
  );
  return rows.map(toSource);
}

/** countSources counts the workspace's sources (of one account, if given). */
export async function countSources(
  db: Queryable,
  workspaceId: string,
  accountId: string | undefined,
): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM competitor_sources
      WHERE workspace_id = $1 AND ($2::uuid IS NULL OR account_id = $2::uuid)`,
    [workspaceId, accountId ?? null],
  );
  return one(rows).n;
}

/** A source the scheduler found due. */
export interface DueSource {
  sourceId: string;
  workspaceId: string;
  intervalHours: number;
  nextCheckAt: Date;
}

/**
 * lockDueSources returns up to `limit` enabled sources whose check is due at `now`, earliest
 * first, locked; rows another scheduler holds are skipped, so two never enqueue the same check.
 */
export async function lockDueSources(db: Queryable, now: Date, limit: number): Promise<DueSource[]> {
  const { rows } = await db.query<{
    source_id: string;
    workspace_id: string;
    interval_hours: number;
    next_check_at: Date;
  }>(
    `SELECT source_id, workspace_id, interval_hours, next_check_at FROM competitor_sources
      WHERE enabled AND next_check_at <= $1
      ORDER BY next_check_at
      LIMIT $2
      FOR UPDATE SKIP LOCKED`,
    [now, limit],
  );
  return rows.map((r) => ({
    sourceId: r.source_id,
    workspaceId: r.workspace_id,
    intervalHours: r.interval_hours,
    nextCheckAt: r.next_check_at,
  }));
}

/** setNextCheck moves an enabled source's next check to `at`. */
export async function setNextCheck(db: Queryable, sourceId: string, at: Date): Promise<void> {
  await db.query('UPDATE competitor_sources SET next_check_at = $2 WHERE source_id = $1 AND enabled', [
    sourceId,
    at,
  ]);
}

/** recordLastCheck keeps the latest check on the source, and the baseline when the check took one. */
export async function recordLastCheck(
  db: Queryable,
  o: Observation,
  baseline: Baseline | undefined,
): Promise<void> {
  await db.query(
    `UPDATE competitor_sources
        SET last_observation_id = $3, last_checked_at = $4, last_outcome = $5, last_http_status = $6, last_summary = $7,
            baseline_at = CASE WHEN $8::boolean THEN $4 ELSE baseline_at END,
            baseline_title = CASE WHEN $8::boolean THEN $9 ELSE baseline_title END,
            baseline_text = CASE WHEN $8::boolean THEN $10 ELSE baseline_text END,
            baseline_literals = CASE WHEN $8::boolean THEN $11::jsonb ELSE baseline_literals END
      WHERE workspace_id = $1 AND source_id = $2`,
    [
      o.workspaceId,
      o.sourceId,
      o.observationId,
      o.checkedAt,
      o.outcome,
      o.httpStatus,
      o.summary,
      baseline !== undefined,
      baseline?.title ?? null,
      baseline?.text ?? null,
      baseline?.literals === undefined || baseline.literals === null
        ? null
        : JSON.stringify(baseline.literals),
    ],
  );
}

interface ObservationRow {
  observation_id: string;
  source_id: string;
  workspace_id: string;
  checked_at: Date;
  trigger: Trigger;
  requested_by: string | null;
  outcome: Outcome;
  summary: string;
  url: string;
  final_url: string | null;
  http_status: number | null;
  reason: string | null;
  reason_message: string | null;
  title: string | null;
  evidence: Evidence;
}

const OBSERVATION_COLUMNS = `observation_id, source_id, workspace_id, checked_at, trigger, requested_by, outcome, summary, url,
  final_url, http_status, reason, reason_message, title, evidence`;

const toObservation = (r: ObservationRow): Observation => ({
  observationId: r.observation_id,
  sourceId: r.source_id,
  workspaceId: r.workspace_id,
  checkedAt: r.checked_at,
  trigger: r.trigger,
  requestedBy: r.requested_by,
  outcome: r.outcome,
  summary: r.summary,
  url: r.url,
  finalUrl: r.final_url,
  httpStatus: r.http_status,
  reason: r.reason,
  reasonMessage: r.reason_message,
  title: r.title,
  evidence: r.evidence,
});

/** insertObservation stores one check's observation. */
export async function insertObservation(db: Queryable, o: Observation): Promise<Observation> {
  const { rows } = await db.query<ObservationRow>(
    `INSERT INTO competitor_observations (${OBSERVATION_COLUMNS})
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15::jsonb)
     RETURNING ${OBSERVATION_COLUMNS}`,
    [
      o.observationId,
      o.sourceId,
      o.workspaceId,
      o.checkedAt,
      o.trigger,
      o.requestedBy,
      o.outcome,
      o.summary,
      o.url,
      o.finalUrl,
      o.httpStatus,
      o.reason,
      o.reasonMessage,
      o.title,
      JSON.stringify(o.evidence),
    ],
  );
  return toObservation(one(rows));
}

/** listObservations returns one page of a source's observations, newest first. */
export async function listObservations(
  db: Queryable,
  f: { workspaceId: string; sourceId: string; limit: number; offset: number },
): Promise<Observation[]> {
  const { rows } = await db.query<ObservationRow>(
    `SELECT ${OBSERVATION_COLUMNS} FROM competitor_observations
      WHERE workspace_id = $1 AND source_id = $2
      ORDER BY checked_at DESC, observation_id DESC
      LIMIT $3 OFFSET $4`,
    [f.workspaceId, f.sourceId, f.limit, f.offset],
  );
  return rows.map(toObservation);
}

/** countObservations counts a source's observations. */
export async function countObservations(
  db: Queryable,
  workspaceId: string,
  sourceId: string,
): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM competitor_observations WHERE workspace_id = $1 AND source_id = $2',
    [workspaceId, sourceId],
  );
  return one(rows).n;
}

/** pruneObservations deletes a source's observations beyond the `keep` newest. */
export async function pruneObservations(
  db: Queryable,
  workspaceId: string,
  sourceId: string,
  keep: number,
): Promise<void> {
  await db.query(
    `DELETE FROM competitor_observations
      WHERE workspace_id = $1 AND source_id = $2 AND observation_id IN (
        SELECT observation_id FROM competitor_observations
         WHERE workspace_id = $1 AND source_id = $2
         ORDER BY checked_at DESC, observation_id DESC
         OFFSET $3)`,
    [workspaceId, sourceId, keep],
  );
}

/**
 * claimHostSlot takes the host's slot for a fetch starting at `now` when the host is free, and
 * returns undefined; when a fetch of the host was less than `spacingMs` ago it takes nothing and
 * returns when the host is free again.
 */
export async function claimHostSlot(
  db: Queryable,
  host: string,
  now: Date,
  spacingMs: number,
): Promise<Date | undefined> {
  const next = new Date(now.getTime() + spacingMs);
  const { rows } = await db.query<{ next_at: Date }>(
    `INSERT INTO competitor_host_slots (host, next_at) VALUES ($1, $3)
     ON CONFLICT (host) DO UPDATE SET next_at = EXCLUDED.next_at WHERE competitor_host_slots.next_at <= $2
     RETURNING next_at`,
    [host, now, next],
  );
  if (rows.length > 0) return undefined;
  const busy = await db.query<{ next_at: Date }>(
    'SELECT next_at FROM competitor_host_slots WHERE host = $1',
    [host],
  );
  return busy.rows[0]?.next_at ?? now;
}

/**
 * reserveHostSlot reserves the host's next free slot, at `now` or after the fetches already
 * reserved, and returns when it starts: the caller waits until then before fetching.
 */
export async function reserveHostSlot(
  db: Queryable,
  host: string,
  now: Date,
  spacingMs: number,
): Promise<Date> {
  const { rows } = await db.query<{ start_at: Date }>(
    `INSERT INTO competitor_host_slots AS s (host, next_at) VALUES ($1, $2::timestamptz + $3 * interval '1 millisecond')
     ON CONFLICT (host) DO UPDATE
       SET next_at = greatest(s.next_at, $2::timestamptz) + $3 * interval '1 millisecond'
     RETURNING next_at - $3 * interval '1 millisecond' AS start_at`,
    [host, now, spacingMs],
  );
  return one(rows).start_at;
}
