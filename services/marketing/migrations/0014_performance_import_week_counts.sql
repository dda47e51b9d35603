-- The performance imports list's `total`, and a page deep into it, without counting and skipping
-- every import of the workspace on each call: the number of imports kept per workspace and UTC
-- week of `created_at`, the list's order, moved by triggers on `performance_imports` in the
-- transaction that writes the import. The list has no filter, so one key a week.
--
-- A week, not a day as the other lists' counts (0013): an import is rarer than a save, and a
-- workspace importing a few a day would have a day row for every few imports, as dear to read as
-- the entries they stand for. A week of an import an hour is 168 rows, a year 52 week rows.
-- To read the page at offset k, the store sums the weeks newest first to find the week holding the
-- k-th import and the r imports of the weeks after it, then skips only k - r imports from that
-- week's end (src/store/import-store.ts listImports).
--
-- As 0012 and 0013: a key's count is a sum of rows, each writer inserting its delta and folding in
-- only the key's rows no one else holds (`FOR UPDATE SKIP LOCKED`), so a writer never waits on
-- another for a count and adds no lock order to its transaction.
CREATE TABLE performance_import_week_counts (
  workspace_id uuid NOT NULL,
  week timestamptz NOT NULL,
  n bigint NOT NULL
);
-- The fold's key, the total (every row of the workspace) and the deep page (newest week first).
CREATE INDEX performance_import_week_counts_key ON performance_import_week_counts (workspace_id, week DESC) INCLUDE (n);

-- The UTC week (from Monday 00:00 UTC) an import created at `at` is counted in, whatever the
-- session's time zone.
CREATE FUNCTION performance_import_week(at timestamptz) RETURNS timestamptz LANGUAGE sql IMMUTABLE AS $$
  SELECT date_trunc('week', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
$$;

-- Adds one statement's delta (per key: workspace_id, week, n), folding in the key's rows that no
-- other transaction holds. PL/pgSQL so that a session plans the statement once.
CREATE FUNCTION performance_import_week_counts_add(delta jsonb) RETURNS void LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  WITH d AS (
         SELECT workspace_id, week, sum(n) AS n
           FROM jsonb_to_recordset(delta) AS x(workspace_id uuid, week timestamptz, n bigint)
          GROUP BY 1, 2 HAVING sum(n) <> 0
       ),
       folded AS (
         DELETE FROM performance_import_week_counts k
          WHERE k.ctid = ANY (ARRAY(
                  -- Per key, so that each is an index lookup whatever the planner guesses of d.
                  SELECT h.ctid FROM d CROSS JOIN LATERAL (
                    SELECT h.ctid FROM performance_import_week_counts h
                     WHERE h.workspace_id = d.workspace_id AND h.week = d.week
                       FOR UPDATE SKIP LOCKED) h))
         RETURNING k.workspace_id, k.week, k.n
       )
  INSERT INTO performance_import_week_counts (workspace_id, week, n)
  SELECT workspace_id, week, sum(n)
    FROM (SELECT workspace_id, week, n FROM d UNION ALL SELECT workspace_id, week, n FROM folded) s
   GROUP BY 1, 2 HAVING sum(n) <> 0;
END $$;

-- Inserts and deletes are counted per statement, with transition tables: a statement writing many
-- imports adds one delta per week.
CREATE FUNCTION performance_import_week_counts_on_insert() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM performance_import_week_counts_add(coalesce(jsonb_agg(d), '[]'))
     FROM (SELECT workspace_id, performance_import_week(created_at) AS week, count(*) AS n
             FROM new_rows GROUP BY 1, 2) d;
  RETURN NULL;
END $$;

CREATE FUNCTION performance_import_week_counts_on_delete() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM performance_import_week_counts_add(coalesce(jsonb_agg(d), '[]'))
     FROM (SELECT workspace_id, performance_import_week(created_at) AS week, -count(*) AS n
             FROM old_rows GROUP BY 1, 2) d;
  RETURN NULL;
END $$;

-- The service never moves an import to another workspace or time; should anything, its count moves.
CREATE FUNCTION performance_import_week_counts_on_update() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM performance_import_week_counts_add(jsonb_build_array(
    jsonb_build_object('workspace_id', OLD.workspace_id, 'week', performance_import_week(OLD.created_at), 'n', -1),
    jsonb_build_object('workspace_id', NEW.workspace_id, 'week', performance_import_week(NEW.created_at), 'n', 1)));
  RETURN NULL;
END $$;

CREATE FUNCTION performance_import_week_counts_on_truncate() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  DELETE FROM performance_import_week_counts;
  RETURN NULL;
END $$;

CREATE TRIGGER performance_import_week_counts_insert AFTER INSERT ON performance_imports
  REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION performance_import_week_counts_on_insert();
-- A status update, the only update the service makes, runs no trigger.
CREATE TRIGGER performance_import_week_counts_update AFTER UPDATE ON performance_imports FOR EACH ROW
  WHEN (OLD.workspace_id IS DISTINCT FROM NEW.workspace_id
        OR performance_import_week(OLD.created_at) IS DISTINCT FROM performance_import_week(NEW.created_at))
  EXECUTE FUNCTION performance_import_week_counts_on_update();
CREATE TRIGGER performance_import_week_counts_delete AFTER DELETE ON performance_imports
  REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION performance_import_week_counts_on_delete();
CREATE TRIGGER performance_import_week_counts_truncate AFTER TRUNCATE ON performance_imports
  FOR EACH STATEMENT EXECUTE FUNCTION performance_import_week_counts_on_truncate();

-- The counts of the imports already there (the triggers hold writes off until this commits).
INSERT INTO performance_import_week_counts (workspace_id, week, n)
SELECT workspace_id, performance_import_week(created_at), count(*)
  FROM performance_imports GROUP BY 1, 2;
