import type { Queryable } from '@adsmcp/runtime/db';
import type { SeqPage, SeqPageQuery } from '../paging.ts';

/**
 * The rows of one list: `table` (a constant of the calling store, never input), the columns to
 * select, and a filter whose parameters are $1..$n. The table needs a `seq` column.
 */
export interface SeqList {
  table: string;
  columns: string;
  where: string;
  params: unknown[];
}

async function anyBeyond(db: Queryable, list: SeqList, op: '<' | '>', seq: number): Promise<boolean> {
  const { rows } = await db.query<{ found: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM ${list.table} WHERE ${list.where} AND seq ${op} $${list.params.length + 1}) AS found`,
    [...list.params, seq],
  );
  return rows[0]?.found === true;
}

/**
 * pageBySeq returns one page of a list in creation order (`asc`) or its reverse, from the start,
 * after a cursor's row or before it, and whether more rows lie on either side.
 */
export async function pageBySeq<R extends { seq: number }>(
  db: Queryable,
  list: SeqList,
  q: SeqPageQuery,
): Promise<SeqPage<R>> {
  // "Forward" is the list's own order: ascending sequence numbers for asc, descending for desc.
  const forwardOp = q.order === 'asc' ? '>' : '<';
  const backwardOp = q.order === 'asc' ? '<' : '>';
  const backwards = q.beforeSeq !== undefined;
  const cursor = q.beforeSeq ?? q.afterSeq;
  const op = backwards ? backwardOp : forwardOp;
  const ascending = (q.order === 'asc') !== backwards;
  const n = list.params.length;
  const { rows } = await db.query<R>(
    `SELECT ${list.columns} FROM ${list.table}
      WHERE ${list.where} AND ($${n + 1}::bigint IS NULL OR seq ${op} $${n + 1})
      ORDER BY seq ${ascending ? 'ASC' : 'DESC'}
      LIMIT $${n + 2}`,
    [...list.params, cursor ?? null, q.limit + 1],
  );
  const more = rows.length > q.limit;
  const page = rows.slice(0, q.limit);
  if (backwards) page.reverse();
  const first = page[0];
  const last = page[page.length - 1];
  if (first === undefined || last === undefined) return { rows: page, moreAfter: false, moreBefore: false };
  return {
    rows: page,
    moreAfter: backwards ? await anyBeyond(db, list, forwardOp, last.seq) : more,
    moreBefore: backwards ? more : cursor !== undefined && (await anyBeyond(db, list, backwardOp, first.seq)),
  };
}
