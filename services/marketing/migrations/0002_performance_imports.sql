-- A workspace's performance imports and their rows. Every row carries the workspace, every query
-- names it. Money and fractional metrics are NUMERIC (exact decimals in the import's currency);
-- a metric the source did not report is NULL (unknown), never 0.

CREATE TABLE performance_imports (
  workspace_id uuid NOT NULL,
  import_id uuid NOT NULL,
  source text NOT NULL CHECK (source IN ('vendor_a_ads', 'vendor_b_ads', 'other')),
  name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
  currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  timezone text NOT NULL CHECK (char_length(timezone) BETWEEN 1 AND 100),
  attribution text NOT NULL CHECK (char_length(attribution) BETWEEN 1 AND 1000),
  since date NOT NULL,
  until date NOT NULL CHECK (since <= until),
  format text NOT NULL CHECK (format IN ('rows', 'csv')),
  -- SHA-256 (hex) of the normalised content and metadata: the same content is one import.
  content_hash text NOT NULL CHECK (content_hash ~ '^[0-9a-f]{64}$'),
  status text NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
  -- Failed because the work could not be done (not because of its rows): the same content may be
  -- imported again as a new import.
  gave_up boolean NOT NULL DEFAULT false,
  -- What the worker reads: the rows (a JSON array) or the CSV and its mapping. Cleared once the
  -- import finished, so the content is kept once (as rows) and not twice.
  input_rows jsonb,
  input_csv text,
  column_mapping jsonb NOT NULL DEFAULT '{}',
  row_count integer NOT NULL DEFAULT 0,
  rows_saved integer NOT NULL DEFAULT 0,
  ad_count integer NOT NULL DEFAULT 0,
  error_count integer NOT NULL DEFAULT 0,
  -- The first 100 errors: [{row, column?, message, line?}].
  errors jsonb NOT NULL DEFAULT '[]',
  -- Once completed: per metric, the exact sum (text) over the rows that reported it and how many did.
  totals jsonb,
  created_by text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz,
  finished_at timestamptz,
  PRIMARY KEY (workspace_id, import_id)
);

CREATE UNIQUE INDEX performance_imports_content ON performance_imports (workspace_id, content_hash)
  WHERE NOT gave_up;
CREATE INDEX performance_imports_newest ON performance_imports (workspace_id, created_at DESC, import_id DESC);

CREATE TABLE performance_import_rows (
  workspace_id uuid NOT NULL,
  import_id uuid NOT NULL,
  -- 1 for the first data row, in the order given.
  row_number integer NOT NULL CHECK (row_number >= 1),
  ad_id text NOT NULL CHECK (char_length(ad_id) BETWEEN 1 AND 255),
  name text CHECK (char_length(name) <= 1000),
  headline text CHECK (char_length(headline) <= 1000),
  body text CHECK (char_length(body) <= 5000),
  campaign text CHECK (char_length(campaign) <= 1000),
  audience text CHECK (char_length(audience) <= 1000),
  hook text CHECK (char_length(hook) <= 200),
  offer text CHECK (char_length(offer) <= 200),
  impressions bigint CHECK (impressions BETWEEN 0 AND 9007199254740991),
  clicks bigint CHECK (clicks BETWEEN 0 AND 9007199254740991),
  spend numeric CHECK (spend >= 0),
  conversions numeric CHECK (conversions >= 0),
  revenue numeric,
  -- No foreign key to performance_imports: rows are written only by the worker, with one COPY,
  -- in the transaction that holds their import locked; a per-row check would cost more than the
  -- COPY itself.
  PRIMARY KEY (workspace_id, import_id, row_number)
);

-- Reports read an ad's rows across imports.
CREATE INDEX performance_import_rows_by_ad ON performance_import_rows (workspace_id, ad_id);
