/** The marketing_items table. Every query names the workspace, so one never reaches another's items. */
import { dayHoldingOffset, dayRowsToRead } from '@adsmcp/runtime/day-pages';
import type { Queryable } from '@adsmcp/runtime/db';
import type { ItemData, Kind } from '../domain/item-data.ts';
import type { ListQuery, MarketingItem } from '../domain/marketing-item.ts';

interface ItemRow {
  workspace_id: string;
  item_id: string;
  kind: Kind;
  name: string;
  collection: string;
  tags: string[];
  data: ItemData;
  revision: number;
  archived_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS =
  'workspace_id, item_id, kind, name, collection, tags, data, revision, archived_at, created_at, updated_at';

const toItem = (r: ItemRow): MarketingItem => ({
  workspaceId: r.workspace_id,
  itemId: r.item_id,
  kind: r.kind,
  name: r.name,
  collection: r.collection,
  tags: r.tags,
  data: r.data,
  revision: r.revision,
  archivedAt: r.archived_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const first = (rows: ItemRow[]): MarketingItem | undefined => {
  const row = rows[0];
  return row === undefined ? undefined : toItem(row);
};

/** findItem returns the workspace's item `itemId`, archived or not, or undefined. */
export async function findItem(
  db: Queryable,
  workspaceId: string,
  itemId: string,
): Promise<MarketingItem | undefined> {
  // Named, so each connection plans the read once.
  const { rows } = await db.query<ItemRow>({
    name: 'marketing-find-item',
    text: `SELECT ${COLUMNS} FROM marketing_items WHERE workspace_id = $1 AND item_id = $2`,
    values: [workspaceId, itemId],
  });
  return first(rows);
}

/** lockItem is findItem that also locks the row until the transaction ends (run it in one). */
export async function lockItem(
  db: Queryable,
  workspaceId: string,
  itemId: string,
): Promise<MarketingItem | undefined> {
  const { rows } = await db.query<ItemRow>(
    `SELECT ${COLUMNS} FROM marketing_items WHERE workspace_id = $1 AND item_id = $2 FOR UPDATE`,
    [workspaceId, itemId],
  );
  return first(rows);
}

export interface NewItem {
  workspaceId: string;
  itemId: string;
  kind: Kind;
  name: string;
  collection: string;
  tags: string[];
  data: ItemData;
}

/**
 * insertItem stores a new item at revision 1; it returns undefined when the workspace already
 * has an item with that id.
 */
export async function insertItem(db: Queryable, item: NewItem): Promise<MarketingItem | undefined> {
  const { rows } = await db.query<ItemRow>(
    `INSERT INTO marketing_items (workspace_id, item_id, kind, name, collection, tags, data, revision)
     VALUES ($1, $2, $3, $4, $5, $6, $7, 1)
     ON CONFLICT (workspace_id, item_id) DO NOTHING
     RETURNING ${COLUMNS}`,
    [item.workspaceId, item.itemId, item.kind, item.name, item.collection, item.tags, item.data],
  );
  return first(rows);
}

/**
 * updateItem replaces a live item's name, collection, tags and data when it is still at
 * `revision`, and moves it to the next revision; it returns undefined when it was not.
 */
export async function updateItem(
  db: Queryable,
  item: Omit<NewItem, 'kind'> & { revision: number },
): Promise<MarketingItem | undefined> {
  const { rows } = await db.query<ItemRow>(
    `UPDATE marketing_items
        SET name = $3, collection = $4, tags = $5, data = $6, revision = revision + 1, updated_at = now()
      WHERE workspace_id = $1 AND item_id = $2 AND revision = $7 AND archived_at IS NULL
      RETURNING ${COLUMNS}`,
    [item.workspaceId, item.itemId, item.name, item.collection, item.tags, item.data, item.revision],
  );
  return first(rows);
}

/**
 * archiveItem archives a live item that is still at `revision`, moving it to the next revision;
 * it returns undefined when it was not.
 */
export async function archiveItem(
  db: Queryable,
  workspaceId: string,
  itemId: string,
  revision: number,
): Promise<MarketingItem | undefined> {
  const { rows } = await db.query<ItemRow>(
    `UPDATE marketing_items
        SET archived_at = now(), revision = revision + 1, updated_at = now()
      WHERE workspace_id = $1 AND item_id = $2 AND revision = $3 AND archived_at IS NULL
      RETURNING ${COLUMNS}`,
    [workspaceId, itemId, revision],
  );
  return first(rows);
}

/** The characters LIKE treats specially, escaped so a query matches them literally. */
function likeLiteral(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** What the list matches, in its statement's parameters (see countOf). */
const MATCHES = `workspace_id = $1
          AND archived_at IS NULL
          AND ($2::text IS NULL OR kind = $2)
          AND ($3::text IS NULL OR search_text ILIKE '%' || $3 || '%')
          AND ($4::text IS NULL OR collection = $4)
          AND ($5::text IS NULL OR tags @> ARRAY[$5::text])`;

/**
 * The total of a list's filters, in the statement's parameters ($1 workspace, $2 kind, $3 query,
 * $4 collection, $5 tag). Without free text it is the kept counts of migration 0012, a sum over a
 * few rows per (kind, collection) whatever the number of items; a query's matches are counted,
 * which its trigram index bounds to the items holding the text's trigrams.
 */
function countOf(q: ListQuery): string {
  if (q.query !== undefined) return `SELECT count(*) AS total FROM marketing_items WHERE ${MATCHES}`;
  const table = q.tag === undefined ? 'marketing_item_counts' : 'marketing_item_tag_counts';
  return `SELECT coalesce(sum(n), 0)::bigint AS total FROM ${table}
           WHERE workspace_id = $1${q.tag === undefined ? '' : ' AND tag = $5'}
             AND ($2::text IS NULL OR kind = $2) AND ($4::text IS NULL OR collection = $4)`;
}

/**
 * listItems returns one page of the workspace's live items that match every filter given, most
 * recently updated first, and how many match in all.
 */
export async function listItems(
  db: Queryable,
  workspaceId: string,
  q: ListQuery,
): Promise<{ items: MarketingItem[]; total: number }> {
  // One statement, one snapshot: the total and the page always agree. The total row is joined
  // with the page, so the total is there even when the page is past the end. The page's ids come
  // from the listing indexes when the filters are ones they hold (none, kind, collection), and
  // only the page's rows are read: a set of every match, as a CTE made it, read every matching
  // row on every call.
  //
  // Without free text, the day holding the offset's item is found from the counts kept per day
  // (migration 0013) and only that day's earlier matches are skipped, as the changes list does
  // (its store says why in one statement, and why the day rows read are bounded): `newer` is the
  // number of matches updated after the chosen day, so the page is the one at offset - newer among
  // the matches updated before that day ends. When the offset's day is not among the rows read,
  // the page is the plain offset's. A query's matches are not kept, and keep the plain offset.
  const days = q.query === undefined;
  const { rows } = await db.query<Partial<ItemRow> & { total: number }>(
    `${
      days
        ? `WITH ${dayHoldingOffset({
            counts: 'marketing_item_day_counts',
            where: 'k.workspace_id = $1 AND k.key = marketing_item_day_key($2::text, $4::text, $5::text)',
            limit: '$8',
            offset: '$7',
          })}
     `
        : ''
    }SELECT counted.total, page.*
       FROM (${countOf(q)}) AS counted
       LEFT JOIN LATERAL (
         SELECT ${COLUMNS}
           FROM (SELECT item_id AS page_id, updated_at AS page_at FROM marketing_items WHERE ${MATCHES}${
             days ? ` AND updated_at < coalesce((SELECT ends FROM day), 'infinity')` : ''
           }
                  ORDER BY updated_at DESC, item_id DESC
                  LIMIT $6 OFFSET $7::bigint${days ? ' - coalesce((SELECT newer FROM day), 0)' : ''}) AS ids
           JOIN marketing_items ON marketing_items.workspace_id = $1 AND marketing_items.item_id = ids.page_id
          ORDER BY ids.page_at DESC, ids.page_id DESC
       ) AS page ON true`,
    [
      workspaceId,
      q.kind ?? null,
      q.query === undefined ? null : likeLiteral(q.query),
      q.collection ?? null,
      q.tag ?? null,
      q.limit,
      q.offset,
      ...(days ? [dayRowsToRead(q.offset, dayRowsPerOffset(q))] : []),
    ],
  );
  const total = rows[0]?.total ?? 0;
  const items = rows.filter((r): r is ItemRow & { total: number } => r.item_id != null).map(toItem);
  return { items, total };
}

/**
 * listItems reads at most offset / this many day-count rows (dayRowsToRead), so
 * that a workspace with few items a day pays a bounded share more than the plain offset. Without a
 * tag the plain offset skips entries of a listing index, about a tenth of a day row each (as the
 * changes list's, bench/deep-offset.ts); with one it reads each skipped item's row to test its tags,
 * which no listing index holds, several times dearer.
 */
function dayRowsPerOffset(q: ListQuery): number {
  return q.tag === undefined ? 32 : 8;
}

/**
 * listContextItems returns one page of the workspace's live guidance (playbook) and brand items,
 * playbooks first, each kind most recently updated first, and how many there are in all.
 */
export async function listContextItems(
  db: Queryable,
  workspaceId: string,
  page: { offset: number; limit: number },
): Promise<{ items: MarketingItem[]; total: number }> {
  // As in listItems: one statement, so the count and the page come from one snapshot. The total
  // is the kept counts' (migration 0012); the page's ids are the first offset + limit of each
  // kind in its listing index, playbooks before brand items, and only the page's rows are read.
  // A set of every guidance item, as a CTE made it, read and counted all of them on every call.
  const { rows } = await db.query<Partial<ItemRow> & { total: number }>(
    `SELECT counted.total, page.*
       FROM (SELECT coalesce(sum(n), 0)::bigint AS total FROM marketing_item_counts
              WHERE workspace_id = $1 AND kind IN ('playbook', 'brand')) AS counted
       LEFT JOIN LATERAL (
         SELECT ${COLUMNS}
           FROM ((SELECT item_id AS page_id, updated_at AS page_at, 0 AS part FROM marketing_items
                   WHERE workspace_id = $1 AND archived_at IS NULL AND kind = 'playbook'
                   ORDER BY updated_at DESC, item_id DESC LIMIT $2::bigint + $3::bigint)
                 UNION ALL
                 (SELECT item_id, updated_at, 1 FROM marketing_items
                   WHERE workspace_id = $1 AND archived_at IS NULL AND kind = 'brand'
                   ORDER BY updated_at DESC, item_id DESC LIMIT $2::bigint + $3::bigint)) AS ids
           JOIN marketing_items ON marketing_items.workspace_id = $1 AND marketing_items.item_id = ids.page_id
          ORDER BY ids.part, ids.page_at DESC, ids.page_id DESC
          LIMIT $2 OFFSET $3
       ) AS page ON true`,
    [workspaceId, page.limit, page.offset],
  );
  const total = rows[0]?.total ?? 0;
  const items = rows.filter((r): r is ItemRow & { total: number } => r.item_id != null).map(toItem);
  return { items, total };
}

/** findItems returns those of the workspace's items, archived or not, whose ids are in `itemIds`. */
export async function findItems(
  db: Queryable,
  workspaceId: string,
  itemIds: readonly string[],
): Promise<MarketingItem[]> {
  if (itemIds.length === 0) return [];
  const { rows } = await db.query<ItemRow>(
    `SELECT ${COLUMNS} FROM marketing_items WHERE workspace_id = $1 AND item_id = ANY($2::uuid[])`,
    [workspaceId, itemIds],
  );
  return rows.map(toItem);
}
