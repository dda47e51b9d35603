/** Product feeds: the catalogues an ad group's product set draws its products from. */

export const FEED_STATUSES = ['active', 'archived'] as const;
export type FeedStatus = (typeof FEED_STATUSES)[number];

export interface ProductFeed {
  /** Creation sequence: the list order, and what cursors point at. Not part of the JSON. */
  seq: number;
  id: string;
  accountId: string;
  name: string;
  status: FeedStatus;
  sourceUrl: string;
  productCount: number;
  revision: number;
  createdAt: Date;
  updatedAt: Date;
}

/** feedJson is a product feed as the API returns it. */
export function feedJson(f: ProductFeed) {
  return {
    id: f.id,
    account_id: f.accountId,
    name: f.name,
    status: f.status,
    source_url: f.sourceUrl,
    product_count: f.productCount,
    revision: f.revision,
    created_at: f.createdAt.toISOString(),
    updated_at: f.updatedAt.toISOString(),
  };
}

export type FeedJson = ReturnType<typeof feedJson>;
