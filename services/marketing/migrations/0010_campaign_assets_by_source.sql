-- Finding an account's live assets saved from given source URLs (SaveSourceImages,
-- FindSourceImages), the newest first. Uploads (no source_url) and archived assets are never
-- looked up this way. The URL is indexed by its md5, not as itself: a source_url may be 2048
-- characters of up to 4 bytes each, more than a btree entry holds (2704 bytes), and an entry too
-- large would refuse the insert of the asset itself. Lookups compare the hash through the index
-- and the URL itself after it, so a collision never matches another URL.
CREATE INDEX campaign_assets_live_by_source
  ON campaign_assets (workspace_id, account_id, md5(source_url), created_at DESC)
  WHERE archived_at IS NULL AND source_url IS NOT NULL;
