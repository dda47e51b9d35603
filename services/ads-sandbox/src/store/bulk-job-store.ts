import type { Queryable } from '@adsmcp/runtime/db';
import type { BulkJob, ItemResult, Operation } from '../bulk-jobs.ts';

interface BulkJobRow {
  id: string;
  account_id: string;
  partial_failure: boolean;
  operations: Operation[];
  results: ItemResult[];
  created_at: Date;
}

const COLUMNS = 'id, account_id, partial_failure, operations, results, created_at';

const toJob = (r: BulkJobRow): BulkJob => ({
  id: r.id,
  accountId: r.account_id,
  partialFailure: r.partial_failure,
  operations: r.operations,
  results: r.results,
  createdAt: r.created_at,
});

/** insertBulkJob records an accepted job with its operations and their outcomes. */
export async function insertBulkJob(db: Queryable, job: BulkJob): Promise<void> {
  await db.query(
    `INSERT INTO bulk_mutation_jobs (${COLUMNS}) VALUES ($1, $2, $3, $4::jsonb, $5::jsonb, $6)`,
    [
      job.id,
      job.accountId,
      job.partialFailure,
      JSON.stringify(job.operations),
      JSON.stringify(job.results),
      job.createdAt,
    ],
  );
}

/** findBulkJob returns the job `id` of `accountId` (undefined when there is none, or it is another account's). */
export async function findBulkJob(
  db: Queryable,
  accountId: string,
  id: string,
): Promise<BulkJob | undefined> {
  const { rows } = await db.query<BulkJobRow>(
    `SELECT ${COLUMNS} FROM bulk_mutation_jobs WHERE account_id = $1 AND id = $2`,
    [accountId, id],
  );
  const row = rows[0];
  return row === undefined ? undefined : toJob(row);
}
