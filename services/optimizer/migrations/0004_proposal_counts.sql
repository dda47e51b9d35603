-- The proposals list's `total` without counting every match on each call: counts kept per
-- workspace, optimizer, ad account and stored status, moved by triggers on `proposals`
-- in the transaction that moves a proposal. As the changes service's `change_counts`: a key's
-- count is a sum of rows, each writer inserting its delta and folding in only the key's rows no one
-- else holds (`FOR UPDATE SKIP LOCKED`), so a writer never waits on another for a count and adds no
-- lock order to its transaction.
--
-- A pending or approved proposal past its deadline lists as `expired` (src/store/review-store.ts),
-- which depends on the time, so that split is not kept: the store counts the ones still within
-- their deadline (bounded by the partial indexes below) and derives the rest by subtraction. A
-- list by run or by creation time counts in the indexes instead (a run holds a few proposals).
CREATE TABLE proposal_counts (
  workspace_id uuid NOT NULL,
  optimizer_id uuid NOT NULL,
  account_id uuid NOT NULL,
  status text NOT NULL,
  n bigint NOT NULL
);
CREATE INDEX proposal_counts_key ON proposal_counts (workspace_id, status, optimizer_id, account_id);

-- Adds one statement's delta (per key: workspace_id, optimizer_id, account_id, status, n),
-- folding in the key's rows that no other transaction holds.
-- PL/pgSQL rather than SQL so that a session plans the statement once, not on every call.
CREATE FUNCTION proposal_counts_add(delta jsonb) RETURNS void LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  WITH d AS (
         SELECT workspace_id, optimizer_id, account_id, status, sum(n) AS n
           FROM jsonb_to_recordset(delta)
                  AS x(workspace_id uuid, optimizer_id uuid, account_id uuid, status text, n bigint)
          GROUP BY 1, 2, 3, 4 HAVING sum(n) <> 0
       ),
       folded AS (
         DELETE FROM proposal_counts k
          WHERE k.ctid = ANY (ARRAY(
                  -- Per key, so that each is an index lookup whatever the planner guesses of d.
                  SELECT h.ctid FROM d CROSS JOIN LATERAL (
                    SELECT h.ctid FROM proposal_counts h
                     WHERE h.workspace_id = d.workspace_id AND h.status = d.status
                       AND h.optimizer_id = d.optimizer_id AND h.account_id = d.account_id
                       FOR UPDATE SKIP LOCKED) h))
         RETURNING k.workspace_id, k.optimizer_id, k.account_id, k.status, k.n
       )
  INSERT INTO proposal_counts (workspace_id, optimizer_id, account_id, status, n)
  SELECT workspace_id, optimizer_id, account_id, status, sum(n)
    FROM (SELECT workspace_id, optimizer_id, account_id, status, n FROM d
          UNION ALL SELECT workspace_id, optimizer_id, account_id, status, n FROM folded) s
   GROUP BY 1, 2, 3, 4 HAVING sum(n) <> 0;
END $$;

CREATE FUNCTION proposal_counts_on_insert() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM proposal_counts_add(coalesce(jsonb_agg(d), '[]'))
     FROM (SELECT workspace_id, optimizer_id, account_id, status, count(*) AS n FROM new_rows GROUP BY 1, 2, 3, 4) d;
  RETURN NULL;
END $$;

-- An update moves a count only when it changes a row's key (the trigger's WHEN), which most
-- updates (a revision, a note) do not: per row, so that the others cost nothing.
CREATE FUNCTION proposal_counts_on_update() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM proposal_counts_add(jsonb_build_array(
    jsonb_build_object('workspace_id', OLD.workspace_id, 'optimizer_id', OLD.optimizer_id,
                       'account_id', OLD.account_id, 'status', OLD.status, 'n', -1),
    jsonb_build_object('workspace_id', NEW.workspace_id, 'optimizer_id', NEW.optimizer_id,
                       'account_id', NEW.account_id, 'status', NEW.status, 'n', 1)));
  RETURN NULL;
END $$;

CREATE FUNCTION proposal_counts_on_delete() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM proposal_counts_add(coalesce(jsonb_agg(d), '[]'))
     FROM (SELECT workspace_id, optimizer_id, account_id, status, -count(*) AS n FROM old_rows GROUP BY 1, 2, 3, 4) d;
  RETURN NULL;
END $$;

CREATE FUNCTION proposal_counts_on_truncate() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  DELETE FROM proposal_counts;
  RETURN NULL;
END $$;

CREATE TRIGGER proposal_counts_insert AFTER INSERT ON proposals REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION proposal_counts_on_insert();
CREATE TRIGGER proposal_counts_update AFTER UPDATE ON proposals FOR EACH ROW
  WHEN ((OLD.workspace_id, OLD.optimizer_id, OLD.account_id, OLD.status)
        IS DISTINCT FROM (NEW.workspace_id, NEW.optimizer_id, NEW.account_id, NEW.status))
  EXECUTE FUNCTION proposal_counts_on_update();
CREATE TRIGGER proposal_counts_delete AFTER DELETE ON proposals REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION proposal_counts_on_delete();
CREATE TRIGGER proposal_counts_truncate AFTER TRUNCATE ON proposals
  FOR EACH STATEMENT EXECUTE FUNCTION proposal_counts_on_truncate();

-- The counts of the proposals already there (the triggers hold writes off until this commits).
INSERT INTO proposal_counts (workspace_id, optimizer_id, account_id, status, n)
SELECT workspace_id, optimizer_id, account_id, status, count(*) FROM proposals GROUP BY 1, 2, 3, 4;

-- Pending and approved proposals still within their deadline, read by the deadline's range.
CREATE INDEX proposals_pending_window ON proposals (workspace_id, review_expires_at) INCLUDE (optimizer_id, account_id)
  WHERE status = 'pending_review';
CREATE INDEX proposals_approved_window ON proposals (workspace_id, publish_by) INCLUDE (optimizer_id, account_id)
  WHERE status = 'approved';
