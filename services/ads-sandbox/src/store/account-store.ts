import type { Queryable } from '@adsmcp/runtime/db';

export interface Account {
  id: string;
  name: string;
  currency: string;
  timeZone: string;
  /** Whether the account may submit bulk mutation jobs. */
  bulkAccess: boolean;
  createdAt: Date;
}

interface AccountRow {
  id: string;
  name: string;
  currency: string;
  time_zone: string;
  bulk_access: boolean;
  created_at: Date;
}

const toAccount = (r: AccountRow): Account => ({
  id: r.id,
  name: r.name,
  currency: r.currency,
  timeZone: r.time_zone,
  bulkAccess: r.bulk_access,
  createdAt: r.created_at,
});

/** insertAccount creates a sandbox ad account. */
export async function insertAccount(
  db: Queryable,
  account: { id: string; name: string; currency: string; timeZone: string; bulkAccess?: boolean },
): Promise<Account> {
  const { rows } = await db.query<AccountRow>(
    `INSERT INTO accounts (id, name, currency, time_zone, bulk_access) VALUES ($1, $2, $3, $4, $5)
     RETURNING id, name, currency, time_zone, bulk_access, created_at`,
    [account.id, account.name, account.currency, account.timeZone, account.bulkAccess ?? true],
  );
  return toAccount(rows[0] as AccountRow);
}

/** insertCredential records the SHA-256 of an API credential issued for `accountId`. */
export async function insertCredential(db: Queryable, accountId: string, tokenSha256: Buffer): Promise<void> {
  await db.query('INSERT INTO credentials (token_sha256, account_id) VALUES ($1, $2)', [
    tokenSha256,
    accountId,
  ]);
}

/** findAccountByCredential returns the account whose credential hashes to `tokenSha256`. */
export async function findAccountByCredential(
  db: Queryable,
  tokenSha256: Buffer,
): Promise<Account | undefined> {
  // Named, so each connection plans it once: every request to the platform runs it.
  const { rows } = await db.query<AccountRow>({
    name: 'sandbox-account-by-credential',
    text: `SELECT a.id, a.name, a.currency, a.time_zone, a.bulk_access, a.created_at
             FROM credentials c JOIN accounts a ON a.id = c.account_id
            WHERE c.token_sha256 = $1`,
    values: [tokenSha256],
  });
  const row = rows[0];
  return row === undefined ? undefined : toAccount(row);
}

/** accountExists tells whether the sandbox has an account `id`. */
export async function accountExists(db: Queryable, id: string): Promise<boolean> {
  const { rows } = await db.query('SELECT 1 FROM accounts WHERE id = $1', [id]);
  return rows.length > 0;
}
