-- The changes sent to the platform whose outcome is not known yet, by the object they change: an
-- approved change to the same object waits for them (apply-worker.ts).

CREATE INDEX changes_sent_by_target ON changes (account_id, target_path)
  WHERE status = 'applying' AND sent_at IS NOT NULL;
