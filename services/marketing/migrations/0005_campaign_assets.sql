-- A workspace's campaign image assets: the checked, re-encoded image (metadata stripped) and
-- what was measured of it. An asset id is unique within its workspace; every query names the
-- workspace, so one workspace never reaches another's assets.

CREATE TABLE campaign_assets (
  workspace_id uuid NOT NULL,
  asset_id uuid NOT NULL,
  account_id text NOT NULL CHECK (char_length(account_id) BETWEEN 1 AND 255),
  name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
  mime_type text NOT NULL CHECK (mime_type IN ('image/png', 'image/jpeg')),
  width integer NOT NULL CHECK (width BETWEEN 80 AND 4096),
  height integer NOT NULL CHECK (height BETWEEN 80 AND 4096),
  -- The re-encoded bytes: a re-encoding may come out larger than the 1 MiB input, up to 4 MiB.
  content bytea NOT NULL CHECK (octet_length(content) BETWEEN 1 AND 4194304),
  sha256 text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
  -- Where the image was fetched from; NULL for an upload.
  source_url text CHECK (char_length(source_url) <= 2048),
  revision integer NOT NULL CHECK (revision >= 1),
  archived_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, asset_id)
);

-- Listing: a workspace's live assets of one account, newest first.
CREATE INDEX campaign_assets_live_by_account
  ON campaign_assets (workspace_id, account_id, created_at DESC, asset_id DESC)
  WHERE archived_at IS NULL;
