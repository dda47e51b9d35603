/**
 * One page of a list ordered by creation sequence, for every listed resource: the page's rows
 * from the start, after a cursor's row or before it, and whether more rows lie on either side.
 */
import type { Queryable } from '@adsmcp/runtime/db';
import type { PageOf, PageRequest } from '../paging.ts';

export interface SeqListSql {
  /** The selected columns; the row must carry the sequence number as `seq`. */
  select: string;
  /** The FROM clause (a table and its joins). */
  from: string;
  /** The filter, with its parameters as $1 to $n. */
  where: string;
  params: unknown[];
  /** The sequence column (`g.seq`). */
  seq: string;
}

/** Whether a row matching the filter has a sequence number `op` `seq`. */
async function anyBeyond(db: Queryable, sql: SeqListSql, op: '<' | '>', seq: number): Promise<boolean> {
  const { rows } = await db.query<{ found: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM ${sql.from} WHERE ${sql.where} AND ${sql.seq} ${op} $${sql.params.length + 1}) AS found`,
    [...sql.params, seq],
  );
  return rows[0]?.found === true;
}

/** pageBySeq returns one page of the rows `sql` selects, in creation order (`asc`) or its reverse. */
export async function pageBySeq<Row extends { seq: number }>(
  db: Queryable,
  sql: SeqListSql,
  q: PageRequest,
): Promise<PageOf<Row>> {
  // "Forward" is the list's own order: ascending sequence numbers for asc, descending for desc.
  const forwardOp = q.order === 'asc' ? '>' : '<';
  const backwardOp = q.order === 'asc' ? '<' : '>';
  const forwardSort = q.order === 'asc' ? 'ASC' : 'DESC';
  const backwardSort = q.order === 'asc' ? 'DESC' : 'ASC';
  const backwards = q.beforeSeq !== undefined;
  const cursor = q.beforeSeq ?? q.afterSeq;
  const op = backwards ? backwardOp : forwardOp;
  const n = sql.params.length;
  const { rows } = await db.query<Row>(
    `SELECT ${sql.select} FROM ${sql.from}
      WHERE ${sql.where} AND ($${n + 1}::bigint IS NULL OR ${sql.seq} ${op} $${n + 1})
      ORDER BY ${sql.seq} ${backwards ? backwardSort : forwardSort}
      LIMIT $${n + 2}`,
    [...sql.params, cursor ?? null, q.limit + 1],
  );
  const more = rows.length > q.limit;
  const items = rows.slice(0, q.limit);
  if (backwards) items.reverse();
  const first = items[0];
  const last = items[items.length - 1];
  if (first === undefined || last === undefined) return { items, moreAfter: false, moreBefore: false };
  return {
    items,
    moreAfter: backwards ? await anyBeyond(db, sql, forwardOp, last.seq) : more,
    moreBefore: backwards ? more : cursor !== undefined && (await anyBeyond(db, sql, backwardOp, first.seq)),
  };
}
