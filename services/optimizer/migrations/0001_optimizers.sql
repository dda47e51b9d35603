-- A workspace's optimizers. The configuration is kept as JSON with the spec's field names; the
-- service checks it before every write. An optimizer is either enabled (reviews are scheduled)
-- or paused (paused_at says since when, and no review is due).

CREATE TABLE optimizers (
  optimizer_id uuid PRIMARY KEY,
  workspace_id uuid NOT NULL,
  account_id uuid NOT NULL,
  name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
  config jsonb NOT NULL CHECK (jsonb_typeof(config) = 'object'),
  enabled boolean NOT NULL,
  paused_at timestamptz,
  next_review_at timestamptz,
  revision integer NOT NULL CHECK (revision >= 1),
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  CHECK (enabled = (paused_at IS NULL)),
  CHECK (enabled OR next_review_at IS NULL)
);

-- Lists, newest first: the whole workspace, or one account of it.
CREATE INDEX optimizers_by_workspace ON optimizers (workspace_id, created_at DESC, optimizer_id DESC);
CREATE INDEX optimizers_by_account ON optimizers (workspace_id, account_id, created_at DESC, optimizer_id DESC);
-- The cadence worker's question: which enabled optimizers are due.
CREATE INDEX optimizers_due ON optimizers (next_review_at) WHERE enabled;
