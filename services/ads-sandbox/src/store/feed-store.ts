import type { Queryable } from '@adsmcp/runtime/db';
import type { FeedStatus, ProductFeed } from '../feeds.ts';
import type { PageOf, PageRequest } from '../paging.ts';
import { pageBySeq } from './seq-page.ts';

interface FeedRow {
  seq: number;
  id: string;
  account_id: string;
  name: string;
  status: FeedStatus;
  source_url: string;
  product_count: number;
  revision: number;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS =
  'seq, id, account_id, name, status, source_url, product_count, revision, created_at, updated_at';

const toFeed = (r: FeedRow): ProductFeed => ({
  seq: r.seq,
  id: r.id,
  accountId: r.account_id,
  name: r.name,
  status: r.status,
  sourceUrl: r.source_url,
  productCount: r.product_count,
  revision: r.revision,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** insertFeed creates a product feed of `accountId`. */
export async function insertFeed(
  db: Queryable,
  f: { id: string; accountId: string; name: string; sourceUrl: string; productCount: number },
): Promise<void> {
  await db.query(
    `INSERT INTO product_feeds (id, account_id, name, status, source_url, product_count)
     VALUES ($1, $2, $3, 'active', $4, $5)`,
    [f.id, f.accountId, f.name, f.sourceUrl, f.productCount],
  );
}

/**
 * findFeed returns the product feed `id` of `accountId` (undefined when there is none, or it is
 * another account's). `lock` holds it until the calling transaction ends: `update` to change
 * it, `share` to keep it from changing while an ad group starts to use it.
 */
export async function findFeed(
  db: Queryable,
  accountId: string,
  id: string,
  opts: { lock?: 'update' | 'share' } = {},
): Promise<ProductFeed | undefined> {
  const lock = opts.lock === undefined ? '' : opts.lock === 'update' ? ' FOR UPDATE' : ' FOR SHARE';
  const { rows } = await db.query<FeedRow>(
    `SELECT ${COLUMNS} FROM product_feeds WHERE account_id = $1 AND id = $2${lock}`,
    [accountId, id],
  );
  const row = rows[0];
  return row === undefined ? undefined : toFeed(row);
}

/** archiveFeed archives the feed, bumps its revision and returns it as stored. */
export async function archiveFeed(db: Queryable, accountId: string, id: string): Promise<ProductFeed> {
  const { rows } = await db.query<FeedRow>(
    `UPDATE product_feeds SET status = 'archived', revision = revision + 1, updated_at = clock_timestamp()
      WHERE account_id = $1 AND id = $2
      RETURNING ${COLUMNS}`,
    [accountId, id],
  );
  const row = rows[0];
  if (row === undefined) throw new Error(`product feed ${id} vanished while being archived`);
  return toFeed(row);
}

/** pageFeeds returns one page of an account's product feeds in creation order, optionally of one status. */
export async function pageFeeds(
  db: Queryable,
  f: { accountId: string; status: FeedStatus | undefined },
  q: PageRequest,
): Promise<PageOf<ProductFeed>> {
  const page = await pageBySeq<FeedRow>(
    db,
    {
      select: COLUMNS,
      from: 'product_feeds',
      where: 'account_id = $1 AND ($2::text IS NULL OR status = $2)',
      params: [f.accountId, f.status ?? null],
      seq: 'seq',
    },
    q,
  );
  return { ...page, items: page.items.map(toFeed) };
}
