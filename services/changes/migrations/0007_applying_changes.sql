-- The changes being applied, across workspaces: the sweep for changes whose apply message was
-- lost reads only these.
CREATE INDEX changes_applying ON changes (apply_requested_at) WHERE status = 'applying';
