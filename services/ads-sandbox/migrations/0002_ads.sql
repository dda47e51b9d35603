-- The account's ad structure: campaigns, their ad groups and the ads in those groups. Every
-- account is seeded with the same shape when it is created (see src/seed.ts).

CREATE TABLE campaigns (
  id text PRIMARY KEY CHECK (id ~ '^cmp_[0-9a-f]{16}$'),
  account_id text NOT NULL REFERENCES accounts (id),
  name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 1000),
  status text NOT NULL CHECK (status IN ('active', 'paused', 'archived')),
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (id, account_id)
);

CREATE INDEX campaigns_account_id ON campaigns (account_id);

CREATE TABLE ad_groups (
  id text PRIMARY KEY CHECK (id ~ '^adg_[0-9a-f]{16}$'),
  account_id text NOT NULL,
  campaign_id text NOT NULL,
  name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 1000),
  status text NOT NULL CHECK (status IN ('active', 'paused', 'archived')),
  created_at timestamptz NOT NULL DEFAULT now(),
  -- An ad group belongs to a campaign of the same account.
  FOREIGN KEY (campaign_id, account_id) REFERENCES campaigns (id, account_id),
  UNIQUE (id, campaign_id, account_id)
);

CREATE INDEX ad_groups_account_id ON ad_groups (account_id);

CREATE TABLE ads (
  -- The creation sequence: the order ads are listed in, and what list cursors point at.
  seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  id text PRIMARY KEY CHECK (id ~ '^ad_[0-9a-f]{16}$'),
  account_id text NOT NULL,
  campaign_id text NOT NULL,
  ad_group_id text NOT NULL,
  name text NOT NULL CHECK (char_length(name) BETWEEN 3 AND 1000),
  status text NOT NULL CHECK (status IN ('active', 'paused', 'archived')),
  creative jsonb NOT NULL CHECK (jsonb_typeof(creative) = 'object'),
  -- SQL NULL is the API's null (no configuration).
  landing_page_configuration jsonb CHECK (jsonb_typeof(landing_page_configuration) = 'object'),
  revision integer NOT NULL DEFAULT 1 CHECK (revision >= 1),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  -- An ad belongs to an ad group of its campaign and account.
  FOREIGN KEY (ad_group_id, campaign_id, account_id) REFERENCES ad_groups (id, campaign_id, account_id)
);

CREATE INDEX ads_account_seq ON ads (account_id, seq);
CREATE INDEX ads_ad_group_seq ON ads (ad_group_id, seq);
