-- A workspace's performance reports. A report is computed once and kept as computed: its rows and
-- totals are JSON whose figures are exact decimal strings (never binary floats), with null for an
-- unknown figure. Every query names the workspace, so one workspace never reaches another's.

CREATE TABLE performance_reports (
  workspace_id uuid NOT NULL,
  report_id uuid NOT NULL,
  name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
  account_id uuid NOT NULL,
  campaign_id text CHECK (campaign_id ~ '^[A-Za-z0-9_-]{1,255}$'),
  since date NOT NULL,
  until date NOT NULL,
  previous_since date NOT NULL,
  previous_until date NOT NULL,
  currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  time_zone text NOT NULL CHECK (char_length(time_zone) BETWEEN 1 AND 64),
  preliminary boolean NOT NULL,
  -- One object per ad (see the marketing service's performance-report.ts), and the totals.
  rows jsonb NOT NULL CHECK (jsonb_typeof(rows) = 'array'),
  totals jsonb NOT NULL CHECK (jsonb_typeof(totals) = 'object'),
  ad_count integer NOT NULL CHECK (ad_count >= 0),
  revision integer NOT NULL DEFAULT 1 CHECK (revision >= 1),
  -- The user who made it; null for a credential that acts for no user.
  created_by uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  CHECK (since <= until AND previous_since <= previous_until AND previous_until < since),
  PRIMARY KEY (workspace_id, report_id)
);

-- Listing: a workspace's reports, most recent first.
CREATE INDEX performance_reports_by_creation
  ON performance_reports (workspace_id, created_at DESC, report_id DESC);

-- The creative labels a report joins: a workspace's live creative items by account and ad.
CREATE INDEX marketing_items_creative_by_ad
  ON marketing_items (workspace_id, lower(data ->> 'account_id'), (data ->> 'ad_id'))
  WHERE kind = 'creative' AND archived_at IS NULL;
