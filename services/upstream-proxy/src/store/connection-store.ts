/** The connections table. Every query names the workspace, so one workspace never reaches another's rows. */
import type { Queryable } from '@adsmcp/runtime/db';
import type { Connection } from '../domain/connection.ts';

interface ConnectionRow {
  account_id: string;
  workspace_id: string;
  name: string;
  currency: string;
  time_zone: string;
  can_write: boolean;
  upstream_account_id: string;
  created_at: Date;
  credential_expires_at: Date | null;
}

/** The columns a connection is read with: never the credential. */
const COLUMNS =
  'account_id, workspace_id, name, currency, time_zone, can_write, upstream_account_id, created_at, credential_expires_at';

const toConnection = (r: ConnectionRow): Connection => ({
  accountId: r.account_id,
  workspaceId: r.workspace_id,
  name: r.name,
  currency: r.currency,
  timeZone: r.time_zone,
  canWrite: r.can_write,
  upstreamAccountId: r.upstream_account_id,
  createdAt: r.created_at,
  credentialExpiresAt: r.credential_expires_at,
});

/**
 * insertConnection stores a connection with its sealed credential; it returns undefined when the
 * workspace already has a connection to that upstream account.
 */
export async function insertConnection(
  db: Queryable,
  c: Omit<Connection, 'createdAt' | 'credentialExpiresAt'> & {
    credentialCiphertext: Buffer;
    credentialExpiresAt?: Date | null;
  },
): Promise<Connection | undefined> {
  const { rows } = await db.query<ConnectionRow>(
    `INSERT INTO connections
       (account_id, workspace_id, name, currency, time_zone, can_write, upstream_account_id, credential_ciphertext,
        credential_expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     ON CONFLICT (workspace_id, upstream_account_id) DO NOTHING
     RETURNING ${COLUMNS}`,
    [
      c.accountId,
      c.workspaceId,
      c.name,
      c.currency,
      c.timeZone,
      c.canWrite,
      c.upstreamAccountId,
      c.credentialCiphertext,
      c.credentialExpiresAt ?? null,
    ],
  );
  const row = rows[0];
  return row === undefined ? undefined : toConnection(row);
}

/** listConnections returns the workspace's connections ordered by name, ignoring case. */
export async function listConnections(db: Queryable, workspaceId: string): Promise<Connection[]> {
  const { rows } = await db.query<ConnectionRow>(
    `SELECT ${COLUMNS} FROM connections WHERE workspace_id = $1 ORDER BY lower(name), name, account_id`,
    [workspaceId],
  );
  return rows.map(toConnection);
}

/** getConnection returns the workspace's connection `accountId`, or undefined when it has none by that id. */
export async function getConnection(
  db: Queryable,
  workspaceId: string,
  accountId: string,
): Promise<Connection | undefined> {
  const { rows } = await db.query<ConnectionRow>(
    `SELECT ${COLUMNS} FROM connections WHERE workspace_id = $1 AND account_id = $2`,
    [workspaceId, accountId],
  );
  const row = rows[0];
  return row === undefined ? undefined : toConnection(row);
}

/**
 * getConnectionWithCredential returns the connection and its sealed credential, for the one
 * place that opens it: a call to the platform.
 */
export async function getConnectionWithCredential(
  db: Queryable,
  workspaceId: string,
  accountId: string,
): Promise<{ connection: Connection; credentialCiphertext: Buffer } | undefined> {
  // Named, so each connection plans it once: every Call runs it.
  const { rows } = await db.query<ConnectionRow & { credential_ciphertext: Buffer }>({
    name: 'upstream-connection-with-credential',
    text: `SELECT ${COLUMNS}, credential_ciphertext FROM connections WHERE workspace_id = $1 AND account_id = $2`,
    values: [workspaceId, accountId],
  });
  const row = rows[0];
  return row === undefined
    ? undefined
    : { connection: toConnection(row), credentialCiphertext: row.credential_ciphertext };
}
