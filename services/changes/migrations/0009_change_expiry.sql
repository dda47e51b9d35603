-- How long a prepared change nobody decided, and an approval no apply request followed, stay usable,
-- per workspace. Each row is one setting made by a person (append-only): the newest is in force,
-- the others are the audit log's record of who changed it, when, and from what.
CREATE TABLE change_expiry_settings (
  workspace_id uuid NOT NULL,
  set_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  set_by text NOT NULL,
  prepared_valid_hours integer NOT NULL CHECK (prepared_valid_hours BETWEEN 1 AND 720),
  approval_valid_hours integer NOT NULL CHECK (approval_valid_hours BETWEEN 1 AND 720),
  PRIMARY KEY (workspace_id, set_at)
);
