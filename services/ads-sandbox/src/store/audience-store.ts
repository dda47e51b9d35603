import type { Queryable } from '@adsmcp/runtime/db';
import { type Audience, OPERATION_COMPLETED_MS, type Operation, type OperationType } from '../audiences.ts';
import type { PageOf, PageRequest } from '../paging.ts';
import { pageBySeq } from './seq-page.ts';

interface AudienceRow {
  seq: number;
  id: string;
  account_id: string;
  name: string;
  status: 'active' | 'archived';
  revision: number;
  policy_revision: string;
  matched_count: number | null;
  created_at: Date;
  updated_at: Date;
}

const toAudience = (r: AudienceRow): Audience => ({
  seq: r.seq,
  id: r.id,
  accountId: r.account_id,
  name: r.name,
  status: r.status,
  revision: r.revision,
  policyRevision: r.policy_revision,
  matchedCount: r.matched_count,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const AUDIENCE_COLUMNS =
  'seq, id, account_id, name, status, revision, policy_revision, matched_count, created_at, updated_at';

/**
 * The account's audiences ($1) with their matched count as of the instant $2: that of the latest
 * operation completed by then, else the count the audience started with.
 */
const AUDIENCES_AT = `(
  SELECT a.*, COALESCE(
    (SELECT o.matched_count FROM custom_audience_operations o
      WHERE o.custom_audience_id = a.id AND o.created_at <= $2::timestamptz - make_interval(secs => $3::double precision)
      ORDER BY o.seq DESC LIMIT 1),
    a.initial_matched_count) AS matched_count
  FROM custom_audiences a WHERE a.account_id = $1) AS audiences_at`;

const viewParams = (accountId: string, now: number): unknown[] => [
  accountId,
  new Date(now),
  OPERATION_COMPLETED_MS / 1000,
];

/** insertAudience creates an audience (revision 0) at `createdAt`, or the transaction's time when null. */
export async function insertAudience(
  db: Queryable,
  a: {
    id: string;
    accountId: string;
    name: string;
    status: 'active' | 'archived';
    policyRevision: string;
    initialMatchedCount: number | null;
    createdAt: Date | null;
  },
): Promise<void> {
  await db.query(
    `INSERT INTO custom_audiences (id, account_id, name, status, policy_revision, initial_matched_count, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, COALESCE($7, now()), COALESCE($7, now()))`,
    [a.id, a.accountId, a.name, a.status, a.policyRevision, a.initialMatchedCount, a.createdAt],
  );
}

/** findAudience returns the audience `id` of `accountId` as of instant `now`. */
export async function findAudience(
  db: Queryable,
  accountId: string,
  id: string,
  now: number,
): Promise<Audience | undefined> {
  const { rows } = await db.query<AudienceRow>(
    `SELECT ${AUDIENCE_COLUMNS} FROM ${AUDIENCES_AT} WHERE id = $4`,
    [...viewParams(accountId, now), id],
  );
  const row = rows[0];
  return row === undefined ? undefined : toAudience(row);
}

/** findAudiences returns those of `ids` that are audiences of `accountId`, as of instant `now`. */
export async function findAudiences(
  db: Queryable,
  accountId: string,
  ids: string[],
  now: number,
): Promise<Audience[]> {
  const { rows } = await db.query<AudienceRow>(
    `SELECT ${AUDIENCE_COLUMNS} FROM ${AUDIENCES_AT} WHERE id = ANY($4::text[])`,
    [...viewParams(accountId, now), ids],
  );
  return rows.map(toAudience);
}

/** existingAudienceIds returns those of `ids` that are custom audiences of `accountId`, archived or not. */
export async function existingAudienceIds(
  db: Queryable,
  accountId: string,
  ids: string[],
): Promise<Set<string>> {
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM custom_audiences WHERE account_id = $1 AND id = ANY($2::text[])',
    [accountId, ids],
  );
  return new Set(rows.map((r) => r.id));
}

/** lockAudience holds the audience until the calling transaction ends, so mutations take turns. */
export async function lockAudience(db: Queryable, accountId: string, id: string): Promise<boolean> {
  const { rows } = await db.query(
    'SELECT 1 FROM custom_audiences WHERE account_id = $1 AND id = $2 FOR UPDATE',
    [accountId, id],
  );
  return rows.length > 0;
}

/** bumpAudience increments the audience's revision (archiving it, when asked) at `at`. */
export async function bumpAudience(
  db: Queryable,
  accountId: string,
  id: string,
  change: { archive: boolean; at: Date },
): Promise<void> {
  await db.query(
    `UPDATE custom_audiences
        SET revision = revision + 1, updated_at = $3,
            status = CASE WHEN $4 THEN 'archived' ELSE status END
      WHERE account_id = $1 AND id = $2`,
    [accountId, id, change.at, change.archive],
  );
}

export interface AudienceFilter {
  ids: string[] | undefined;
  policyRevision: string | undefined;
  /** Only active audiences with at least this many matched members. */
  minMatched: number | undefined;
}

/** pageAudiences returns one page of the account's audiences as of instant `now`. */
export async function pageAudiences(
  db: Queryable,
  accountId: string,
  filter: AudienceFilter,
  now: number,
  q: PageRequest,
): Promise<PageOf<Audience>> {
  const page = await pageBySeq<AudienceRow>(
    db,
    {
      select: AUDIENCE_COLUMNS,
      from: AUDIENCES_AT,
      where: `($4::text[] IS NULL OR id = ANY($4::text[]))
        AND ($5::text IS NULL OR policy_revision = $5)
        AND ($6::integer IS NULL OR (status = 'active' AND matched_count >= $6))`,
      params: [
        ...viewParams(accountId, now),
        filter.ids ?? null,
        filter.policyRevision ?? null,
        filter.minMatched ?? null,
      ],
      seq: 'seq',
    },
    q,
  );
  return { ...page, items: page.items.map(toAudience) };
}

interface OperationRow {
  id: string;
  account_id: string;
  custom_audience_id: string;
  type: OperationType;
  revision: number;
  matched_count: number;
  created_at: Date;
}

const OPERATION_COLUMNS = 'id, account_id, custom_audience_id, type, revision, matched_count, created_at';

const toOperation = (r: OperationRow): Operation => ({
  id: r.id,
  accountId: r.account_id,
  audienceId: r.custom_audience_id,
  type: r.type,
  revision: r.revision,
  matchedCount: r.matched_count,
  createdAt: r.created_at,
});

/** insertOperation records an audience operation created at `op.createdAt`. */
export async function insertOperation(db: Queryable, op: Operation): Promise<Operation> {
  const { rows } = await db.query<OperationRow>(
    `INSERT INTO custom_audience_operations (id, account_id, custom_audience_id, type, revision, matched_count, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     RETURNING ${OPERATION_COLUMNS}`,
    [op.id, op.accountId, op.audienceId, op.type, op.revision, op.matchedCount, op.createdAt],
  );
  return toOperation(rows[0] as OperationRow);
}

/** findOperation returns the operation `id` of the audience `audienceId` of `accountId`. */
export async function findOperation(
  db: Queryable,
  accountId: string,
  audienceId: string,
  id: string,
): Promise<Operation | undefined> {
  const { rows } = await db.query<OperationRow>(
    `SELECT ${OPERATION_COLUMNS} FROM custom_audience_operations
      WHERE account_id = $1 AND custom_audience_id = $2 AND id = $3`,
    [accountId, audienceId, id],
  );
  const row = rows[0];
  return row === undefined ? undefined : toOperation(row);
}

/** latestOperations returns the newest operation of each of `audienceIds` that has one. */
export async function latestOperations(
  db: Queryable,
  audienceIds: string[],
): Promise<Map<string, Operation>> {
  const { rows } = await db.query<OperationRow>(
    `SELECT DISTINCT ON (custom_audience_id) ${OPERATION_COLUMNS} FROM custom_audience_operations
      WHERE custom_audience_id = ANY($1::text[])
      ORDER BY custom_audience_id, seq DESC`,
    [audienceIds],
  );
  return new Map(rows.map((r) => [r.custom_audience_id, toOperation(r)]));
}
