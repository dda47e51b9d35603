-- The rest of the account's ad structure: campaign budgets and schedules, ad group bidding,
-- product sets and revisions, the account's product feeds, and bulk mutation jobs.

-- A creation sequence on every listed resource: the list order, and what list cursors point at.
ALTER TABLE campaigns
  ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  ADD COLUMN objective text NOT NULL DEFAULT 'clicks'
    CHECK (objective IN ('clicks', 'impressions', 'conversions')),
  ADD COLUMN budget_micros bigint NOT NULL DEFAULT 50000000 CHECK (budget_micros >= 1),
  ADD COLUMN budget_type text NOT NULL DEFAULT 'daily' CHECK (budget_type IN ('daily', 'lifetime')),
  ADD COLUMN start_time timestamptz,
  ADD COLUMN end_time timestamptz,
  ADD COLUMN revision integer NOT NULL DEFAULT 1 CHECK (revision >= 1),
  ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now(),
  ADD CONSTRAINT campaigns_schedule CHECK (end_time IS NULL OR start_time IS NULL OR end_time > start_time),
  -- A lifetime budget is spread over the campaign's run, so the run must end.
  ADD CONSTRAINT campaigns_lifetime_end CHECK (budget_type = 'daily' OR end_time IS NOT NULL);

-- Defaults for the columns below exist only to fill rows seeded before this migration; new rows
-- name every value.
ALTER TABLE campaigns
  ALTER COLUMN objective DROP DEFAULT,
  ALTER COLUMN budget_micros DROP DEFAULT,
  ALTER COLUMN budget_type DROP DEFAULT;

CREATE INDEX campaigns_account_seq ON campaigns (account_id, seq);

CREATE TABLE product_feeds (
  seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  id text PRIMARY KEY CHECK (id ~ '^pf_[0-9a-f]{16}$'),
  account_id text NOT NULL REFERENCES accounts (id),
  name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 1000),
  status text NOT NULL CHECK (status IN ('active', 'archived')),
  source_url text NOT NULL,
  product_count integer NOT NULL CHECK (product_count >= 0),
  revision integer NOT NULL DEFAULT 1 CHECK (revision >= 1),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX product_feeds_account_seq ON product_feeds (account_id, seq);

ALTER TABLE ad_groups
  ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  ADD COLUMN description text,
  ADD COLUMN context_hints jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(context_hints) = 'array'),
  ADD COLUMN bidding_config jsonb NOT NULL
    DEFAULT '{"billing_event_type": "impression", "strategy": "maximize_clicks"}'
    CHECK (jsonb_typeof(bidding_config) = 'object'),
  -- SQL NULL is the API's null (no product set, no landing page configuration).
  ADD COLUMN product_set jsonb CHECK (jsonb_typeof(product_set) = 'object'),
  ADD COLUMN landing_page_configuration jsonb CHECK (jsonb_typeof(landing_page_configuration) = 'object'),
  ADD COLUMN revision integer NOT NULL DEFAULT 1 CHECK (revision >= 1),
  ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now(),
  DROP CONSTRAINT ad_groups_name_check,
  ADD CONSTRAINT ad_groups_name_check CHECK (char_length(name) BETWEEN 3 AND 1000);

ALTER TABLE ad_groups ALTER COLUMN bidding_config DROP DEFAULT;

CREATE INDEX ad_groups_account_seq ON ad_groups (account_id, seq);

-- A bulk job keeps its operations and their outcomes; its progress (queued, running, done) is
-- derived from `created_at` and the platform's clock, so it needs no worker.
CREATE TABLE bulk_mutation_jobs (
  id text PRIMARY KEY CHECK (id ~ '^job_[0-9a-f]{16}$'),
  account_id text NOT NULL REFERENCES accounts (id),
  partial_failure boolean NOT NULL,
  operations jsonb NOT NULL CHECK (jsonb_typeof(operations) = 'array'),
  results jsonb NOT NULL CHECK (jsonb_typeof(results) = 'array'),
  created_at timestamptz NOT NULL
);

CREATE INDEX bulk_mutation_jobs_account_id ON bulk_mutation_jobs (account_id);
