import type { Queryable } from '@adsmcp/runtime/db';

/** One mutation the platform applied (or refused), as recorded. */
export interface LedgerEntry {
  id: number;
  accountId: string;
  method: string;
  path: string;
  idempotencyKey: string | null;
  requestBody: unknown;
  responseStatus: number;
  responseBody: unknown;
  createdAt: Date;
}

interface LedgerRow {
  id: number;
  account_id: string;
  method: string;
  path: string;
  idempotency_key: string | null;
  request_body: unknown;
  response_status: number;
  response_body: unknown;
  created_at: Date;
}

const COLUMNS =
  'id, account_id, method, path, idempotency_key, request_body, response_status, response_body, created_at';

const toEntry = (r: LedgerRow): LedgerEntry => ({
  id: r.id,
  accountId: r.account_id,
  method: r.method,
  path: r.path,
  idempotencyKey: r.idempotency_key,
  requestBody: r.request_body,
  responseStatus: r.response_status,
  responseBody: r.response_body,
  createdAt: r.created_at,
});

/** A JSON value as a jsonb parameter: pg would turn a bare JS array into a Postgres array. */
const jsonb = (value: unknown): string | null => (value === undefined ? null : JSON.stringify(value));

/**
 * lockIdempotencyKey waits until no other transaction holds `key` of `accountId`, and holds it
 * until the calling transaction ends, so two requests with one key run one after the other.
 */
export async function lockIdempotencyKey(db: Queryable, accountId: string, key: string): Promise<void> {
  await db.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
    `idempotency:${accountId}:${key}`,
  ]);
}

/**
 * findLedgerEntryByKey returns the mutation recorded under `key` for `accountId`, and whether its
 * request body equals `requestBody` as JSON (key order and whitespace do not matter).
 */
export async function findLedgerEntryByKey(
  db: Queryable,
  accountId: string,
  key: string,
  requestBody: unknown,
): Promise<{ entry: LedgerEntry; sameBody: boolean } | undefined> {
  const { rows } = await db.query<LedgerRow & { same_body: boolean }>(
    `SELECT ${COLUMNS}, request_body IS NOT DISTINCT FROM $3::jsonb AS same_body
       FROM ledger WHERE account_id = $1 AND idempotency_key = $2`,
    [accountId, key, jsonb(requestBody)],
  );
  const row = rows[0];
  return row === undefined ? undefined : { entry: toEntry(row), sameBody: row.same_body };
}

/** insertLedgerEntry records a mutation and the response it produced. */
export async function insertLedgerEntry(
  db: Queryable,
  entry: {
    accountId: string;
    method: string;
    path: string;
    idempotencyKey: string | undefined;
    requestBody: unknown;
    responseStatus: number;
    responseBody: unknown;
  },
): Promise<LedgerEntry> {
  const { rows } = await db.query<LedgerRow>(
    `INSERT INTO ledger (account_id, method, path, idempotency_key, request_body, response_status, response_body)
     VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7::jsonb)
     RETURNING ${COLUMNS}`,
    [
      entry.accountId,
      entry.method,
      entry.path,
      entry.idempotencyKey ?? null,
      jsonb(entry.requestBody),
      entry.responseStatus,
      jsonb(entry.responseBody),
    ],
  );
  return toEntry(rows[0] as LedgerRow);
}

/**
 * listLedgerEntries returns the mutations recorded for `accountId`, oldest first; only those on
 * `path` (exactly) when it is given.
 */
export async function listLedgerEntries(
  db: Queryable,
  accountId: string,
  path?: string,
): Promise<LedgerEntry[]> {
  const { rows } = await db.query<LedgerRow>(
    `SELECT ${COLUMNS} FROM ledger WHERE account_id = $1 AND ($2::text IS NULL OR path = $2) ORDER BY id`,
    [accountId, path ?? null],
  );
  return rows.map(toEntry);
}
