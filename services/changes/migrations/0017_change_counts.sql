-- The changes list's exact `total` without counting every match on each call: counts kept per
-- workspace, ad account, stored status and whether the outcome is unknown (the list's filters),
-- moved by triggers on `changes` in the transaction that moves a change.
--
-- A key's count is a sum of rows, not one row updated in place. Every transaction that moves a
-- change also appends to the workspace's audit log, locking its head row; one row per key updated
-- in place would add a second row lock per transaction, taken in whatever order the statements
-- come (a change inserted before its event, an event appended before a bulk update), and two
-- transactions taking the two in opposite orders deadlock. Here a transaction inserts its delta as
-- a new row and folds into it only the key's rows no one else holds (`FOR UPDATE SKIP LOCKED`): it
-- never waits on another writer, so it adds no lock order to the audit head's, and a key keeps
-- about one row per transaction writing it at that moment.
--
-- Prepared and approved changes past their expiry list as `expired` (src/store/change-store.ts),
-- which depends on the time and the workspace's settings, so that split is not kept: the store
-- counts the changes still within their window (the partial indexes below bound that read to the
-- window) and derives the expired ones by subtraction.
CREATE TABLE change_counts (
  workspace_id uuid NOT NULL,
  account_id uuid NOT NULL,
  status text NOT NULL,
  outcome_unknown boolean NOT NULL,
  n bigint NOT NULL
);
CREATE INDEX change_counts_key ON change_counts (workspace_id, status, account_id, outcome_unknown);

-- The list's outcome-unknown filter (domain/change.ts outcomeUnknown), on one row's columns.
CREATE FUNCTION change_outcome_unknown(status text, sent_at timestamptz, upstream_status integer, resolution text)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
  SELECT status = 'failed' AND sent_at IS NOT NULL AND upstream_status IS NULL
         AND resolution IS DISTINCT FROM 'not_applied'
$$;

-- Adds one statement's delta (per key: workspace_id, account_id, status, outcome_unknown, n) to
-- the kept counts, folding in the key's rows that no other transaction holds.
-- PL/pgSQL rather than SQL so that a session plans the statement once, not on every call.
CREATE FUNCTION change_counts_add(delta jsonb) RETURNS void LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  WITH d AS (
         SELECT workspace_id, account_id, status, outcome_unknown, sum(n) AS n
           FROM jsonb_to_recordset(delta)
                  AS x(workspace_id uuid, account_id uuid, status text, outcome_unknown boolean, n bigint)
          GROUP BY 1, 2, 3, 4 HAVING sum(n) <> 0
       ),
       folded AS (
         DELETE FROM change_counts k
          WHERE k.ctid = ANY (ARRAY(
                  -- Per key, so that each is an index lookup whatever the planner guesses of d.
                  SELECT h.ctid FROM d CROSS JOIN LATERAL (
                    SELECT h.ctid FROM change_counts h
                     WHERE h.workspace_id = d.workspace_id AND h.status = d.status
                       AND h.account_id = d.account_id AND h.outcome_unknown = d.outcome_unknown
                       FOR UPDATE SKIP LOCKED) h))
         RETURNING k.workspace_id, k.account_id, k.status, k.outcome_unknown, k.n
       )
  INSERT INTO change_counts (workspace_id, account_id, status, outcome_unknown, n)
  SELECT workspace_id, account_id, status, outcome_unknown, sum(n)
    FROM (SELECT workspace_id, account_id, status, outcome_unknown, n FROM d
          UNION ALL SELECT workspace_id, account_id, status, outcome_unknown, n FROM folded) s
   GROUP BY 1, 2, 3, 4 HAVING sum(n) <> 0;
END $$;

-- Inserts and deletes are counted per statement, with transition tables: a statement writing many
-- changes (a bulk insert) adds one delta per key, not one per row.
CREATE FUNCTION change_counts_on_insert() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM change_counts_add(coalesce(jsonb_agg(d), '[]'))
     FROM (SELECT workspace_id, account_id, status,
                  change_outcome_unknown(status, sent_at, upstream_status, resolution) AS outcome_unknown,
                  count(*) AS n
             FROM new_rows GROUP BY 1, 2, 3, 4) d;
  RETURN NULL;
END $$;

-- An update moves a count only when it changes a row's key (the trigger's WHEN), which most
-- updates (an apply's progress, a note) do not: per row, so that the others cost nothing.
CREATE FUNCTION change_counts_on_update() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM change_counts_add(jsonb_build_array(
    jsonb_build_object('workspace_id', OLD.workspace_id, 'account_id', OLD.account_id, 'status', OLD.status,
                       'outcome_unknown', change_outcome_unknown(OLD.status, OLD.sent_at, OLD.upstream_status, OLD.resolution),
                       'n', -1),
    jsonb_build_object('workspace_id', NEW.workspace_id, 'account_id', NEW.account_id, 'status', NEW.status,
                       'outcome_unknown', change_outcome_unknown(NEW.status, NEW.sent_at, NEW.upstream_status, NEW.resolution),
                       'n', 1)));
  RETURN NULL;
END $$;

CREATE FUNCTION change_counts_on_delete() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM change_counts_add(coalesce(jsonb_agg(d), '[]'))
     FROM (SELECT workspace_id, account_id, status,
                  change_outcome_unknown(status, sent_at, upstream_status, resolution) AS outcome_unknown,
                  -count(*) AS n
             FROM old_rows GROUP BY 1, 2, 3, 4) d;
  RETURN NULL;
END $$;

CREATE FUNCTION change_counts_on_truncate() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  DELETE FROM change_counts;
  RETURN NULL;
END $$;

CREATE TRIGGER change_counts_insert AFTER INSERT ON changes REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION change_counts_on_insert();
CREATE TRIGGER change_counts_update AFTER UPDATE ON changes FOR EACH ROW
  WHEN (OLD.workspace_id IS DISTINCT FROM NEW.workspace_id OR OLD.account_id IS DISTINCT FROM NEW.account_id
        OR OLD.status IS DISTINCT FROM NEW.status
        OR change_outcome_unknown(OLD.status, OLD.sent_at, OLD.upstream_status, OLD.resolution)
           IS DISTINCT FROM change_outcome_unknown(NEW.status, NEW.sent_at, NEW.upstream_status, NEW.resolution))
  EXECUTE FUNCTION change_counts_on_update();
CREATE TRIGGER change_counts_delete AFTER DELETE ON changes REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION change_counts_on_delete();
CREATE TRIGGER change_counts_truncate AFTER TRUNCATE ON changes
  FOR EACH STATEMENT EXECUTE FUNCTION change_counts_on_truncate();

-- The counts of the changes already there (the triggers hold writes off until this commits).
INSERT INTO change_counts (workspace_id, account_id, status, outcome_unknown, n)
SELECT workspace_id, account_id, status,
       change_outcome_unknown(status, sent_at, upstream_status, resolution), count(*)
  FROM changes GROUP BY 1, 2, 3, 4;

-- The prepared and approved changes still within their expiry window, read by the window's
-- range: these partial indexes hold only changes in those two statuses.
CREATE INDEX changes_prepared_window ON changes (workspace_id, prepared_at) INCLUDE (account_id)
  WHERE status = 'prepared';
CREATE INDEX changes_approved_window ON changes (workspace_id, approved_at) INCLUDE (account_id)
  WHERE status = 'approved';
