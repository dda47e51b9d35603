-- Account standards and templates: a workspace's rules for the changes made to one of its ad
-- accounts, checked when a change is prepared and again before it is applied.
CREATE TABLE account_standards (
  standard_id uuid PRIMARY KEY,
  workspace_id uuid NOT NULL,
  account_id uuid NOT NULL,
  name text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('standard', 'template')),
  -- StandardData in its proto JSON form (snake_case field names).
  data jsonb NOT NULL,
  revision integer NOT NULL DEFAULT 1 CHECK (revision >= 1),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  archived_at timestamptz
);
CREATE INDEX account_standards_account ON account_standards (workspace_id, account_id, updated_at DESC)
  WHERE archived_at IS NULL;

-- Spend guards: the caps a workspace admin set for an ad account, in micros of its currency.
CREATE TABLE account_spend_guards (
  workspace_id uuid NOT NULL,
  account_id uuid NOT NULL,
  max_daily_budget_micros bigint CHECK (max_daily_budget_micros > 0),
  max_bid_micros bigint CHECK (max_bid_micros > 0),
  updated_by text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, account_id)
);

-- Which standards (id, name, revision, guidance) a change was checked against when prepared.
ALTER TABLE changes ADD COLUMN standards_checked jsonb NOT NULL DEFAULT '[]';
