/** The request_budgets table: one token bucket per connection, shared by every replica. */
import type { Queryable } from '@adsmcp/runtime/db';

export interface BucketRule {
  /** Tokens added per second. */
  ratePerSecond: number;
  /** The most tokens the bucket holds. */
  burst: number;
}

export interface Take {
  granted: boolean;
  /** When not granted, the seconds until the bucket holds a token again. */
  waitSeconds: number;
  /** The whole tokens left in the bucket after this take (for the budget metric). */
  remaining: number;
}

/** The bucket's tokens now: what it held plus the refill since, capped at the burst. */
const REFILLED =
  'least($3::float8, b.tokens + $2::float8 * greatest(0, extract(epoch FROM clock_timestamp() - b.updated_at)))';

/**
 * takeToken takes one token from the account's bucket, creating it full the first time. The
 * refill and the take are one statement on one locked row, so concurrent callers on any replica
 * never take the same token twice. When the bucket is empty nothing changes and the answer says
 * how long until it holds a token.
 */
export async function takeToken(db: Queryable, accountId: string, rule: BucketRule): Promise<Take> {
  const { rows } = await db.query<{ granted: boolean; wait_seconds: number; remaining: number }>(
    `WITH taken AS (
       INSERT INTO request_budgets AS b (account_id, tokens, updated_at)
       VALUES ($1, $3::float8 - 1, clock_timestamp())
       ON CONFLICT (account_id) DO UPDATE
         SET tokens = ${REFILLED} - 1, updated_at = clock_timestamp()
         WHERE ${REFILLED} >= 1
       RETURNING b.tokens
     )
     SELECT true AS granted, 0::float8 AS wait_seconds, tokens AS remaining FROM taken
     UNION ALL
     SELECT false, (1 - ${REFILLED}) / $2::float8, ${REFILLED}
       FROM request_budgets b
      WHERE b.account_id = $1 AND NOT EXISTS (SELECT 1 FROM taken)`,
    [accountId, rule.ratePerSecond, rule.burst],
  );
  const row = rows[0];
  // No row: another replica created the bucket after this statement's snapshot and emptied it.
  if (row === undefined) return { granted: false, waitSeconds: 1 / rule.ratePerSecond, remaining: 0 };
  return {
    granted: row.granted,
    waitSeconds: Math.max(0, row.wait_seconds),
    remaining: Math.max(0, Math.floor(row.remaining)),
  };
}
