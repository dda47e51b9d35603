-- Saves and archives of an account standard that would loosen it, asked for by an agent: kept
-- here until a person confirms or rejects them; the standard in force stays as it is meanwhile.
CREATE TABLE pending_standard_changes (
  pending_id uuid PRIMARY KEY,
  workspace_id uuid NOT NULL,
  account_id uuid NOT NULL,
  standard_id uuid NOT NULL REFERENCES account_standards (standard_id),
  action text NOT NULL CHECK (action IN ('save', 'archive')),
  -- The revision of the standard the loosenings were computed against: confirming refuses when
  -- the standard moved since.
  base_revision integer NOT NULL,
  -- For a save: the name and data (StandardData's proto JSON form) it would store.
  proposed_name text,
  proposed_data jsonb,
  -- Each loosening in words, as standard-loosening.ts names them.
  loosenings jsonb NOT NULL,
  requested_by text NOT NULL,
  requested_at timestamptz NOT NULL DEFAULT now(),
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'confirmed', 'rejected')),
  decided_by text,
  decided_at timestamptz,
  CHECK (action = 'archive' OR (proposed_name IS NOT NULL AND proposed_data IS NOT NULL)),
  CHECK ((status = 'pending') = (decided_at IS NULL))
);
CREATE INDEX pending_standard_changes_account ON pending_standard_changes (workspace_id, account_id, requested_at)
  WHERE status = 'pending';
