/**
 * The performance_imports and performance_import_rows tables. Every query names the workspace,
 * so one never reaches another's imports. Metrics go to NUMERIC and BIGINT as text, and sums come
 * back as text: no value passes through a binary float.
 */
import { once } from 'node:events';
import { finished } from 'node:stream/promises';
import { dayHoldingOffset, dayRowsToRead } from '@adsmcp/runtime/day-pages';
import type { PoolClient, Queryable } from '@adsmcp/runtime/db';
import { from as copyFrom } from 'pg-copy-streams';
import type { ImportMeta, NormalRow, RowError } from '../domain/performance-import.ts';
import type { ImportedSum } from '../domain/performance-report.ts';

export type ImportStatus = 'queued' | 'running' | 'completed' | 'failed';

export interface ImportRecord {
  workspace_id: string;
  import_id: string;
  source: string;
  name: string;
  currency: string;
  timezone: string;
  attribution: string;
  since: string;
  until: string;
  format: 'rows' | 'csv';
  content_hash: string;
  status: ImportStatus;
  row_count: number;
  rows_saved: number;
  ad_count: number;
  error_count: number;
  errors: RowError[];
  totals: Totals | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

/** What the worker reads: the import's input. */
export interface ImportInputRecord {
  status: ImportStatus;
  format: 'rows' | 'csv';
  input_rows: unknown[][] | null;
  input_csv: string | null;
  column_mapping: Record<string, string>;
}

const COLUMNS = `workspace_id, import_id, source, name, currency, timezone, attribution,
  to_char(since, 'YYYY-MM-DD') AS since, to_char(until, 'YYYY-MM-DD') AS until, format, content_hash,
  status, row_count, rows_saved, ad_count, error_count, errors, totals, created_at, started_at, finished_at`;

export interface NewImport {
  workspaceId: string;
  importId: string;
  meta: ImportMeta;
  format: 'rows' | 'csv';
  contentHash: string;
  inputRows: unknown[][] | null;
  inputCsv: string | null;
  columnMapping: Record<string, string>;
  rowCount: number;
  createdBy: string;
}

/**
 * insertImport records a queued import; undefined when the workspace has one of the same content
 * that has not failed (a failed import does not stand for its content).
 */
export async function insertImport(db: Queryable, n: NewImport): Promise<ImportRecord | undefined> {
  const { rows } = await db.query<ImportRecord>(
    `INSERT INTO performance_imports (workspace_id, import_id, source, name, currency, timezone, attribution,
       since, until, format, content_hash, status, input_rows, input_csv, column_mapping, row_count, created_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'queued', $12::jsonb, $13, $14::jsonb, $15, $16)
     ON CONFLICT (workspace_id, content_hash) WHERE status <> 'failed' DO NOTHING
     RETURNING ${COLUMNS}`,
    [
      n.workspaceId,
      n.importId,
      n.meta.source,
      n.meta.name,
      n.meta.currency,
      n.meta.timezone,
      n.meta.attribution,
      n.meta.since,
      n.meta.until,
      n.format,
      n.contentHash,
      n.inputRows === null ? null : JSON.stringify(n.inputRows),
      n.inputCsv,
      JSON.stringify(n.columnMapping),
      n.rowCount,
      n.createdBy,
    ],
  );
  return rows[0];
}

/**
 * findImportByContent returns the workspace's import of this content hash that is queued,
 * running or completed: a failed one is never the answer to importing its content again.
 */
export async function findImportByContent(
  db: Queryable,
  workspaceId: string,
  contentHash: string,
): Promise<ImportRecord | undefined> {
  const { rows } = await db.query<ImportRecord>(
    `SELECT ${COLUMNS} FROM performance_imports
      WHERE workspace_id = $1 AND content_hash = $2 AND status <> 'failed'`,
    [workspaceId, contentHash],
  );
  return rows[0];
}

export async function findImport(
  db: Queryable,
  workspaceId: string,
  importId: string,
): Promise<ImportRecord | undefined> {
  const { rows } = await db.query<ImportRecord>(
    `SELECT ${COLUMNS} FROM performance_imports WHERE workspace_id = $1 AND import_id = $2`,
    [workspaceId, importId],
  );
  return rows[0];
}

/** listImports returns a page of the workspace's imports, newest first, and how many there are. */
export async function listImports(
  db: Queryable,
  workspaceId: string,
  offset: number,
  limit: number,
): Promise<{ imports: ImportRecord[]; total: number }> {
  // One statement, one snapshot: the total and the page agree. The total is the counts kept per
  // UTC week of creation (migration 0014), a row a week whatever the number of imports. The week
  // holding the offset's import is found from the same rows, newest first, and only that week's
  // newer imports are skipped in the newest-first index (as the marketing items list does by day,
  // packages/runtime/src/day-pages.ts); only the page's rows are read. When the offset's week is
  // not among the rows read (past the end), the page is the plain offset's.
  const { rows } = await db.query<Partial<ImportRecord> & { total: string }>(
    `WITH ${dayHoldingOffset({
      counts: '(SELECT workspace_id, week AS day, n FROM performance_import_week_counts)',
      where: 'k.workspace_id = $1',
      limit: '$4',
      offset: '$2',
      span: '168 hours',
    })}
     SELECT counted.total, page.*
       FROM (SELECT coalesce(sum(n), 0)::bigint AS total FROM performance_import_week_counts WHERE workspace_id = $1) AS counted
       LEFT JOIN LATERAL (
         SELECT ${COLUMNS}
           FROM (SELECT import_id AS page_id, created_at AS page_at FROM performance_imports
                  WHERE workspace_id = $1 AND created_at < coalesce((SELECT ends FROM day), 'infinity')
                  ORDER BY created_at DESC, import_id DESC
                  OFFSET $2::bigint - coalesce((SELECT newer FROM day), 0) LIMIT $3) AS ids
           JOIN performance_imports ON performance_imports.workspace_id = $1 AND performance_imports.import_id = ids.page_id
          ORDER BY ids.page_at DESC, ids.page_id DESC
       ) AS page ON true`,
    [workspaceId, offset, limit, dayRowsToRead(offset, WEEK_ROWS_PER_OFFSET)],
  );
  const imports = rows.filter((r): r is ImportRecord & { total: string } => r.import_id != null);
  return { imports, total: Number(rows[0]?.total ?? 0) };
}

/**
 * listImports reads at most offset / this many week rows (dayRowsToRead): a week row costs about
 * ten skipped entries of the newest-first index (as a day row of the changes list,
 * bench/deep-offset.ts), so a workspace importing fewer than this many a week pays at most about a
 * third more than the plain offset, and falls back to it when the offset's week is not reached.
 */
const WEEK_ROWS_PER_OFFSET = 32;

/** findInput returns an import's status and input (the worker reads it before its transaction). */
export async function findInput(
  db: Queryable,
  workspaceId: string,
  importId: string,
): Promise<ImportInputRecord | undefined> {
  const { rows } = await db.query<ImportInputRecord>(
    `SELECT status, format, input_rows, input_csv, column_mapping FROM performance_imports
      WHERE workspace_id = $1 AND import_id = $2`,
    [workspaceId, importId],
  );
  return rows[0];
}

/**
 * claimInput shows a queued or running import as running to readers (outside the worker's
 * transaction) and returns its input, in one statement; undefined when the import is finished or
 * not there.
 */
export async function claimInput(
  db: Queryable,
  workspaceId: string,
  importId: string,
): Promise<ImportInputRecord | undefined> {
  const { rows } = await db.query<ImportInputRecord>(
    `UPDATE performance_imports SET status = 'running', started_at = coalesce(started_at, now())
      WHERE workspace_id = $1 AND import_id = $2 AND status IN ('queued', 'running')
      RETURNING status, format, input_rows, input_csv, column_mapping`,
    [workspaceId, importId],
  );
  return rows[0];
}

/** importStatus returns an import's status, or undefined when there is no such import. */
export async function importStatus(
  db: Queryable,
  workspaceId: string,
  importId: string,
): Promise<ImportStatus | undefined> {
  const { rows } = await db.query<{ status: ImportStatus }>(
    'SELECT status FROM performance_imports WHERE workspace_id = $1 AND import_id = $2',
    [workspaceId, importId],
  );
  return rows[0]?.status;
}

/** lockStatus locks an import until the transaction ends and returns its status. */
export async function lockStatus(
  db: Queryable,
  workspaceId: string,
  importId: string,
): Promise<ImportStatus | undefined> {
  const { rows } = await db.query<{ status: ImportStatus }>(
    'SELECT status FROM performance_imports WHERE workspace_id = $1 AND import_id = $2 FOR UPDATE',
    [workspaceId, importId],
  );
  return rows[0]?.status;
}

/** markRunning shows the import as running to readers (outside the worker's transaction). */
export async function markRunning(db: Queryable, workspaceId: string, importId: string): Promise<void> {
  await db.query(
    `UPDATE performance_imports SET status = 'running', started_at = coalesce(started_at, now())
      WHERE workspace_id = $1 AND import_id = $2 AND status = 'queued'`,
    [workspaceId, importId],
  );
}

const COPY_SPECIAL = /[\\\t\n\r]/;

/** A value as COPY's text format writes it: NULL as \\N, the format's special characters escaped. */
function copyValue(value: string | null): string {
  if (value === null) return '\\N';
  return COPY_SPECIAL.test(value)
    ? value.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r')
    : value;
}

const ROW_COLUMNS = [
  'ad_id',
  'name',
  'headline',
  'body',
  'campaign',
  'audience',
  'hook',
  'offer',
  'impressions',
  'clicks',
  'spend',
  'conversions',
  'revenue',
] as const satisfies readonly (keyof NormalRow)[];

/** Rows being saved with one COPY, batch by batch, while the rest are still being read. */
export interface RowCopy {
  /** Sends `rows` (numbered on from the rows sent before, from 1); waits while PostgreSQL catches up. */
  write(rows: readonly NormalRow[]): Promise<void>;
  /** Ends the COPY: every row sent is in the table (for the caller's transaction). */
  end(): Promise<void>;
  /** Abandons the COPY (PostgreSQL is sent CopyFail, which fails the transaction). */
  abort(err: Error): Promise<void>;
}

/**
 * openRowCopy starts a COPY into performance_import_rows on `db`, in its transaction: PostgreSQL
 * reads the text values straight into BIGINT and NUMERIC, and a bad value fails the transaction.
 */
export function openRowCopy(db: PoolClient, workspaceId: string, importId: string): RowCopy {
  const copy = db.query(
    copyFrom(
      `COPY performance_import_rows (workspace_id, import_id, row_number, ${ROW_COLUMNS.join(', ')}) FROM STDIN`,
    ),
  );
  // Settles when the COPY ended or failed; observed by end and abort, and never left unhandled.
  const done = finished(copy);
  done.catch(() => undefined);
  // The ids are UUIDs (nothing to escape): every line starts alike.
  const lead = `${workspaceId}\t${importId}\t`;
  let rowNumber = 0;
  return {
    async write(rows) {
      if (rows.length === 0) return;
      // One string per batch, built by appending: a line's values taken through arrays, map and
      // join cost more than PostgreSQL took to read them.
      let text = '';
      for (const r of rows) {
        rowNumber++;
        text += lead + rowNumber;
        for (const c of ROW_COLUMNS) text += `\t${copyValue(r[c])}`;
        text += '\n';
      }
      if (!copy.write(text)) await once(copy, 'drain');
    },
    async end() {
      copy.end();
      await done;
    },
    async abort(err) {
      copy.destroy(err);
      await done.catch(() => undefined);
    },
  };
}

const METRIC_NAMES = ['impressions', 'clicks', 'spend', 'conversions', 'revenue'] as const;

/**
 * completeImport records the outcome of a run that saved every row — its totals and ad count,
 * summed from the saved rows in the same statement — and clears the input. finished_at is the
 * moment of this statement (clock_timestamp), not the start of the worker's transaction (now()),
 * which came before every row was read.
 */
export async function completeImport(
  db: Queryable,
  workspaceId: string,
  importId: string,
  rowCount: number,
): Promise<void> {
  // Per metric: the exact sum (NUMERIC as text, NULL when no row knows it) and how many rows do.
  const totals = METRIC_NAMES.map(
    (m) => `'${m}', jsonb_build_object('sum', sum(${m})::text, 'known', count(${m}))`,
  ).join(', ');
  await db.query(
    `WITH saved AS (
       SELECT count(DISTINCT ad_id)::int AS ad_count, jsonb_build_object(${totals}) AS totals
         FROM performance_import_rows WHERE workspace_id = $1 AND import_id = $2
     )
     UPDATE performance_imports
        SET status = 'completed', finished_at = clock_timestamp(), row_count = $3, rows_saved = $3, error_count = 0,
            errors = '[]', input_rows = NULL, input_csv = NULL, totals = saved.totals, ad_count = saved.ad_count
       FROM saved
      WHERE workspace_id = $1 AND import_id = $2`,
    [workspaceId, importId, rowCount],
  );
}

/** failImport records a run that saved nothing, with its (first) errors, and clears the input. */
export async function failImport(
  db: Queryable,
  workspaceId: string,
  importId: string,
  outcome: { rowCount: number; errorCount: number; errors: RowError[]; gaveUp?: boolean },
): Promise<void> {
  await db.query(
    `UPDATE performance_imports
        SET status = 'failed', finished_at = clock_timestamp(), row_count = $3, rows_saved = 0, ad_count = 0,
            error_count = $4, errors = $5::jsonb, input_rows = NULL, input_csv = NULL, gave_up = $6
      WHERE workspace_id = $1 AND import_id = $2`,
    [
      workspaceId,
      importId,
      outcome.rowCount,
      outcome.errorCount,
      JSON.stringify(outcome.errors),
      outcome.gaveUp === true,
    ],
  );
}

/** One metric's sum over the rows that know it (text, exact) and how many do. */
export interface MetricSum {
  sum: string | null;
  known: number;
}

export type Totals = Record<'impressions' | 'clicks' | 'spend' | 'conversions' | 'revenue', MetricSum>;

/** A day range, both days included (YYYY-MM-DD). */
export interface DayRange {
  since: string;
  until: string;
}

/**
 * importedSums reads, for each of `adIds` and each period, the rows of the workspace's completed
 * imports whose since..until overlaps the period, per currency. Rows of an import lying within
 * the period are summed exactly (NUMERIC, as text); a metric is NULL when no row was summed or any
 * summed row did not report it (unknown, never 0). An import that overlaps without lying within
 * the period is only named in partial_import_ids: its rows are not per day.
 */
export async function importedSums(
  db: Queryable,
  workspaceId: string,
  adIds: readonly string[],
  periods: { current: DayRange; previous: DayRange },
): Promise<ImportedSum[]> {
  if (adIds.length === 0) return [];
  const metrics = ['impressions', 'clicks', 'spend', 'conversions', 'revenue'] as const;
  const sums = metrics
    .map(
      (m) => `CASE WHEN count(*) FILTER (WHERE within) > 0
                    AND count(${m}) FILTER (WHERE within) = count(*) FILTER (WHERE within)
                   THEN (sum(${m}) FILTER (WHERE within))::text END AS ${m}`,
    )
    .join(',\n            ');
  const { rows } = await db.query<ImportedSum>(
    `WITH periods (period, since, until) AS (
       VALUES ('current', $3::date, $4::date), ('previous', $5::date, $6::date)
     ), matched AS (
       SELECT p.period, i.currency, r.ad_id, i.import_id::text AS import_id,
              (i.since >= p.since AND i.until <= p.until) AS within,
              r.impressions, r.clicks, r.spend, r.conversions, r.revenue
         FROM performance_imports i
         JOIN periods p ON i.since <= p.until AND i.until >= p.since
         JOIN performance_import_rows r ON r.workspace_id = i.workspace_id AND r.import_id = i.import_id
        WHERE i.workspace_id = $1 AND i.status = 'completed' AND r.ad_id = ANY($2::text[])
     )
     SELECT period, currency, ad_id,
            (count(*) FILTER (WHERE within))::int AS row_count,
            ${sums},
            coalesce(array_agg(DISTINCT import_id ORDER BY import_id) FILTER (WHERE within), '{}') AS import_ids,
            coalesce(array_agg(DISTINCT import_id ORDER BY import_id) FILTER (WHERE NOT within), '{}')
              AS partial_import_ids
       FROM matched
      GROUP BY period, currency, ad_id
      ORDER BY ad_id, period, currency`,
    [
      workspaceId,
      adIds,
      periods.current.since,
      periods.current.until,
      periods.previous.since,
      periods.previous.until,
    ],
  );
  return rows;
}
