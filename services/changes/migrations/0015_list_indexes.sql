-- The orders ListChanges reads in: newest first with the change id breaking ties, for the
-- workspace, one ad account, and one status. The account and status indexes hold what the
-- status filter reads (approved_at for the expiry of approved changes), so a page's ids, and the
-- count of every match, come from the index alone; the rows are read only for the page itself.
-- Without the change id the newest-first index still had to sort each run of equal times, and
-- without an account index a count for one account read the whole table. The workspace's index
-- holds nothing more: the count of all its changes reads every entry, and a wider entry made it
-- slower.
CREATE INDEX changes_list ON changes (workspace_id, prepared_at DESC, change_id);
CREATE INDEX changes_list_account ON changes (workspace_id, account_id, prepared_at DESC, change_id)
  INCLUDE (status, approved_at);
CREATE INDEX changes_list_status ON changes (workspace_id, status, prepared_at DESC, change_id) INCLUDE (approved_at);
-- Subsumed by the indexes above.
DROP INDEX changes_workspace_prepared;
DROP INDEX changes_workspace_status;
