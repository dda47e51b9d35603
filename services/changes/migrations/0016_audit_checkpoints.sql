-- How far each workspace's audit chain has been verified: the row a check ended at and its hash,
-- so the next check (the dashboard's, on every page) verifies only the rows after it, and when the
-- whole chain was last verified from its first row (`npm run admin -- verify-audit`, or the audit
-- page's "verify the whole chain"). A break found stays recorded until a whole check passes.
CREATE TABLE audit_checkpoints (
  workspace_id uuid PRIMARY KEY,
  seq bigint NOT NULL,
  hash text NOT NULL,
  checked_at timestamptz NOT NULL,
  whole_checked_at timestamptz,
  whole_rows bigint,
  broken jsonb
);
