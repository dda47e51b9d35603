-- Conversion tracking and custom audiences: an account's conversion pixels, the conversion event
-- settings that count events from them, its custom audiences and the operations that fill them.
-- Audience members are never stored: only counts, rounded when they are shown.

CREATE TABLE conversion_pixels (
  -- The creation sequence: the list order, and what list cursors point at.
  seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  id text PRIMARY KEY CHECK (id ~ '^px_[0-9a-f]{16}$'),
  account_id text NOT NULL REFERENCES accounts (id),
  name text NOT NULL CHECK (char_length(name) BETWEEN 3 AND 1000),
  client_type text NOT NULL CHECK (client_type IN ('web')),
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX conversion_pixels_account_seq ON conversion_pixels (account_id, seq);

CREATE TABLE conversion_event_settings (
  seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  id text PRIMARY KEY CHECK (id ~ '^evs_[0-9a-f]{16}$'),
  account_id text NOT NULL REFERENCES accounts (id),
  name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 1000),
  event_type text NOT NULL,
  custom_event_name text,
  attribution_window_days integer NOT NULL CHECK (attribution_window_days IN (1, 7, 28)),
  -- The pixel ids the setting counts events from (checked to be the account's on create).
  source_ids jsonb NOT NULL CHECK (jsonb_typeof(source_ids) = 'array'),
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX conversion_event_settings_account_seq ON conversion_event_settings (account_id, seq);

CREATE TABLE custom_audiences (
  seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  id text PRIMARY KEY CHECK (id ~ '^ca_[0-9a-f]{16}$'),
  account_id text NOT NULL REFERENCES accounts (id),
  name text NOT NULL CHECK (char_length(name) BETWEEN 3 AND 1000),
  status text NOT NULL CHECK (status IN ('active', 'archived')),
  -- Bumped by every mutation; a replace names the revision it expects.
  revision integer NOT NULL DEFAULT 0 CHECK (revision >= 0),
  -- The SHA-256 (hex) of the audience data-use policy the audience was accepted under.
  policy_revision text NOT NULL CHECK (policy_revision ~ '^[0-9a-f]{64}$'),
  -- How many members matched before any operation: set for seeded audiences, NULL for new ones.
  initial_matched_count integer CHECK (initial_matched_count >= 0),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (id, account_id)
);

CREATE INDEX custom_audiences_account_seq ON custom_audiences (account_id, seq);

-- An operation's state is derived from created_at and the clock when it is read (pending,
-- processing, completed), so nothing runs in the background.
CREATE TABLE custom_audience_operations (
  seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  id text PRIMARY KEY CHECK (id ~ '^op_[0-9a-f]{16}$'),
  account_id text NOT NULL,
  custom_audience_id text NOT NULL,
  type text NOT NULL CHECK (type IN ('replace', 'merge')),
  -- The audience revision the operation produced.
  revision integer NOT NULL CHECK (revision >= 0),
  -- The exact count the operation will have matched once completed; shown only rounded.
  matched_count integer NOT NULL CHECK (matched_count >= 0),
  -- From the sandbox clock, which tests fake: the lifecycle is measured from it.
  created_at timestamptz NOT NULL,
  FOREIGN KEY (custom_audience_id, account_id) REFERENCES custom_audiences (id, account_id)
);

CREATE INDEX custom_audience_operations_audience ON custom_audience_operations (custom_audience_id, seq);
