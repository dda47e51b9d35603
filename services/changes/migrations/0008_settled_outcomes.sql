-- A person settles a change whose apply outcome is unknown (sent, no answer from the platform):
-- sent again with the same key, found applied, or found not applied on the platform. The latest
-- settlement, who made it, when, and their note.
ALTER TABLE changes
  ADD COLUMN resolution text CHECK (resolution IN ('send_again', 'applied', 'not_applied')),
  ADD COLUMN resolved_by text,
  ADD COLUMN resolved_at timestamptz,
  ADD COLUMN resolution_note text;
-- The workspace's changes whose outcome is unknown, for the dashboard's filter and the operators' list.
CREATE INDEX changes_outcome_unknown ON changes (workspace_id, prepared_at)
  WHERE status = 'failed' AND sent_at IS NOT NULL AND upstream_status IS NULL
    AND resolution IS DISTINCT FROM 'not_applied';
