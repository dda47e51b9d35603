/** The request_budgets table: one token bucket per connection, shared by every replica. */
import type { Queryable } from '@adsmcp/runtime/db';

export interface BucketRule {
  /** Tokens added per second. */
  ratePerSecond: number;
  /** The most tokens the bucket holds. */
  burst: number;
}

export interface Lease {
  /** The tokens taken (0 when the bucket held less than one). */
  granted: number;
  /** The whole tokens left in the bucket after this take (for the budget metric). */
  remaining: number;
  /**
   * The seconds until the bucket holds the tokens wanted again, counting only this take: a replica
   * that was granted none waits that long, and one that spends what it was granted need not ask
   * before then (another's take may make it later).
   */
  refillSeconds: number;
}

/**
 * leaseTokens refills the account's bucket by the time elapsed (on the database's clock, so the
 * replicas' clocks do not matter), adds back `returned` tokens a replica leased earlier and did
 * not spend, and takes up to `wanted` whole tokens, in one statement on the locked row: concurrent
 * callers on any replica never take the same token twice. The bucket is created full the first
 * time. When it holds less than one token nothing is taken and the answer says how long to wait.
 */
export async function leaseTokens(
  db: Queryable,
  accountId: string,
  rule: BucketRule,
  wanted: number,
  returned = 0,
): Promise<Lease> {
  for (;;) {
    const { rows } = await db.query<{ granted: number; level: number }>({
      name: 'upstream-lease-tokens',
      text: `WITH cur AS (
               SELECT least($3::float8, tokens + $5::float8
                        + $2::float8 * greatest(0, extract(epoch FROM clock_timestamp() - updated_at))) AS level,
                      clock_timestamp() AS at
                 FROM request_budgets
                WHERE account_id = $1
                  FOR UPDATE
             )
             UPDATE request_budgets b
                SET tokens = cur.level - least($4::int, floor(cur.level))::int, updated_at = cur.at
               FROM cur
              WHERE b.account_id = $1
          RETURNING greatest(0, least($4::int, floor(cur.level)))::int AS granted, cur.level AS level`,
      values: [accountId, rule.ratePerSecond, rule.burst, wanted, returned],
    });
    const row = rows[0];
    if (row !== undefined) {
      const granted = row.granted;
      const left = row.level - granted;
      // Until the bucket holds the tokens wanted, not one: a lease taken as each token comes back
      // grants it alone, so at the limit every token cost one or two statements on the account's
      // row; waiting for a slice's worth (LEASE_SECONDS of the rate) costs a caller that much more
      // wait at most, and the tokens are not lost meanwhile (the bucket keeps them).
      const refillSeconds = Math.max(0, (Math.min(wanted, rule.burst) - left) / rule.ratePerSecond);
      return {
        granted,
        remaining: Math.max(0, Math.floor(left)),
        refillSeconds,
      };
    }
    // The account's first take: create its bucket full, then take from it (a replica that
    // created it at the same moment is no harm: the row exists either way).
    await db.query(
      `INSERT INTO request_budgets (account_id, tokens, updated_at)
       VALUES ($1, $2::float8, clock_timestamp())
       ON CONFLICT (account_id) DO NOTHING`,
      [accountId, rule.burst],
    );
  }
}
