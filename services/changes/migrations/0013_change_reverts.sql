-- Undo: a change that reverts another names it, and the reverted change lists its reverts, so each
-- is read with its link both ways without a join in every query that reads changes.
ALTER TABLE changes ADD COLUMN reverts_change_id uuid REFERENCES changes (change_id);
ALTER TABLE changes ADD COLUMN reverted_by uuid[] NOT NULL DEFAULT '{}';
CREATE INDEX changes_reverts ON changes (workspace_id, reverts_change_id) WHERE reverts_change_id IS NOT NULL;
