-- A workspace's business outcomes (qualified leads, bookings, orders, refunds) imported from a
-- CRM, and the imports that brought them. No personal data: the columns are all there is.
-- An outcome is identified by its source's external_id within the workspace; `fingerprint` is
-- the SHA-256 of its normalised content, so a repeat is told from a conflict exactly.

CREATE TABLE business_outcome_imports (
  workspace_id uuid NOT NULL,
  import_id uuid NOT NULL,
  account_id uuid NOT NULL,
  source text NOT NULL CHECK (source ~ '^[A-Za-z0-9_-]{1,255}$'),
  name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
  currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  attribution text NOT NULL CHECK (char_length(attribution) BETWEEN 1 AND 1000),
  received integer NOT NULL CHECK (received >= 1),
  saved integer NOT NULL CHECK (saved >= 0),
  skipped_duplicates integer NOT NULL CHECK (skipped_duplicates >= 0),
  created_by text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, import_id)
);

CREATE TABLE business_outcomes (
  workspace_id uuid NOT NULL,
  source text NOT NULL,
  external_id text NOT NULL CHECK (char_length(external_id) BETWEEN 1 AND 255),
  import_id uuid NOT NULL,
  account_id uuid NOT NULL,
  currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  kind text NOT NULL CHECK (kind IN ('qualified_lead', 'booking', 'order', 'refund')),
  occurred_at timestamptz NOT NULL,
  ad_id text NOT NULL CHECK (char_length(ad_id) BETWEEN 1 AND 255),
  value numeric CHECK (value >= 0),
  quantity integer CHECK (quantity BETWEEN 1 AND 1000000),
  campaign_id text CHECK (char_length(campaign_id) BETWEEN 1 AND 255),
  ad_group_id text CHECK (char_length(ad_group_id) BETWEEN 1 AND 255),
  refund_of text CHECK (char_length(refund_of) BETWEEN 1 AND 255),
  fingerprint text NOT NULL CHECK (fingerprint ~ '^[0-9a-f]{64}$'),
  PRIMARY KEY (workspace_id, source, external_id),
  FOREIGN KEY (workspace_id, import_id) REFERENCES business_outcome_imports (workspace_id, import_id)
);

CREATE INDEX business_outcomes_by_ad ON business_outcomes (workspace_id, account_id, ad_id, occurred_at);
