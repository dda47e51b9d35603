/**
 * Test set-up for account standards. Archiving a standard over MCP waits for a workspace admin's
 * confirmation in the dashboard, so tests that start each case with no standard archive them here,
 * in the changes service's database, leaving what confirming each archive would leave.
 */
import pg from 'pg';

/** Archives every active standard and template of the account, and drops its pending standard changes. */
export async function archiveAccountStandards(databaseUrl: string, accountId: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(
      `UPDATE changes.pending_standard_changes SET status = 'rejected', decided_by = 'test set-up', decided_at = now()
        WHERE account_id = $1 AND status = 'pending'`,
      [accountId],
    );
    await client.query(
      `UPDATE changes.account_standards SET archived_at = now(), revision = revision + 1, updated_at = now()
        WHERE account_id = $1 AND archived_at IS NULL`,
      [accountId],
    );
  } finally {
    await client.end();
  }
}
