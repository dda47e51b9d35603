-- Competitor watch: public pages a workspace watches, the observations its checks recorded, and
-- the politeness slots that keep fetches of one host apart.

-- A source is either enabled (next_check_at says when the scheduler enqueues its next check) or
-- paused (paused_at says since when). The baseline is the first successful check since the url
-- or the literals were set; it is what later checks compare with, and is reset when they change.
CREATE TABLE competitor_sources (
  source_id uuid PRIMARY KEY,
  workspace_id uuid NOT NULL,
  account_id uuid NOT NULL,
  name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
  url text NOT NULL CHECK (char_length(url) BETWEEN 9 AND 2048),
  -- The URL's host, lowercased: the key of the politeness slot.
  host text NOT NULL,
  literals jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(literals) = 'array'),
  interval_hours integer NOT NULL CHECK (interval_hours BETWEEN 1 AND 744),
  enabled boolean NOT NULL,
  paused_at timestamptz,
  next_check_at timestamptz,
  created_by text NOT NULL,
  revision integer NOT NULL CHECK (revision >= 1),
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  baseline_at timestamptz,
  baseline_title text,
  baseline_text text,
  -- [{ "phrase": ..., "present": ... }] for a source with literals.
  baseline_literals jsonb,
  last_observation_id uuid,
  last_checked_at timestamptz,
  last_outcome text,
  last_http_status integer,
  last_summary text,
  CHECK (enabled = (paused_at IS NULL)),
  CHECK (enabled = (next_check_at IS NOT NULL))
);

-- Lists, newest first: the whole workspace, or one account of it.
CREATE INDEX competitor_sources_by_workspace ON competitor_sources (workspace_id, created_at DESC, source_id DESC);
CREATE INDEX competitor_sources_by_account
  ON competitor_sources (workspace_id, account_id, created_at DESC, source_id DESC);
-- The scheduler's question: which enabled sources are due.
CREATE INDEX competitor_sources_due ON competitor_sources (next_check_at) WHERE enabled;

-- One check of a source and its evidence (see CompetitorObservation in competitors.proto).
CREATE TABLE competitor_observations (
  observation_id uuid PRIMARY KEY,
  source_id uuid NOT NULL REFERENCES competitor_sources (source_id),
  workspace_id uuid NOT NULL,
  checked_at timestamptz NOT NULL,
  trigger text NOT NULL CHECK (trigger IN ('manual', 'scheduled')),
  -- Who asked for a manual check.
  requested_by text,
  outcome text NOT NULL CHECK (outcome IN ('baseline', 'unchanged', 'changed', 'refused', 'failed')),
  summary text NOT NULL,
  url text NOT NULL,
  final_url text,
  http_status integer,
  reason text,
  reason_message text,
  title text,
  -- title_changed, body_changed, body_changes, body_change_count, baseline_title, literals.
  evidence jsonb NOT NULL CHECK (jsonb_typeof(evidence) = 'object')
);

CREATE INDEX competitor_observations_by_source
  ON competitor_observations (workspace_id, source_id, checked_at DESC, observation_id DESC);

-- Politeness across sources and workspaces: a host is fetched at most once per spacing; next_at
-- is the earliest time the next fetch of the host may start.
CREATE TABLE competitor_host_slots (
  host text PRIMARY KEY,
  next_at timestamptz NOT NULL
);
