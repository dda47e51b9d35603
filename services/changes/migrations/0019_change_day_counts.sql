-- A deep page of the changes list without skipping every change before it: the kept counts of
-- 0017 (workspace, ad account, stored status, unknown outcome) also kept per day of `prepared_at`,
-- the list's order. To read the page at offset k, the store sums the days newest first to find the
-- day holding the k-th match and the r matches of the days after it, then skips only k - r
-- entries of the list index from that day's end (src/store/change-store.ts listChanges).
--
-- A day (UTC), not an hour: a bucket pays only when it holds many changes of each key, or summing
-- the buckets reads as many rows as the changes it stands for. A workspace with a few hundred
-- changes a day has under one per key an hour; a busy one (a million a year, 2,700 a day) still
-- has a day's skip within 3% of the offset bound, and at offset 100,000 sums a few weeks of rows.
--
-- Each change is counted four times: under its ad account and under the nil UUID, which stands
-- for every account (no account has it: account ids are random UUIDs), each with its status and
-- with `*`, which stands for every status (with outcome_unknown false). The list of the whole
-- workspace or of one account then sums one row a day, of one status at most two (failed by its
-- unknown outcome), however many accounts and statuses there are.
--
-- The same sum-of-rows counts as 0017 (a writer inserts its delta and folds in only the key's rows
-- no other transaction holds, `FOR UPDATE SKIP LOCKED`), for the same reason: no lock order
-- against the audit log's, and no writer waiting on another for a count.
CREATE TABLE change_day_counts (
  workspace_id uuid NOT NULL,
  day timestamptz NOT NULL,
  account_id uuid NOT NULL,
  status text NOT NULL,
  outcome_unknown boolean NOT NULL,
  n bigint NOT NULL
);
-- The fold's key, and every read: one account (or all) and one status (or all), newest day first.
CREATE INDEX change_day_counts_key ON change_day_counts (workspace_id, account_id, status, day DESC, outcome_unknown)
  INCLUDE (n);

-- The day (UTC) a change prepared at `at` is counted in: whatever the session's time zone.
CREATE FUNCTION change_day(at timestamptz) RETURNS timestamptz LANGUAGE sql IMMUTABLE AS $$
  SELECT date_trunc('day', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
$$;

-- The account id the counts of every account are kept under.
CREATE FUNCTION change_day_every_account() RETURNS uuid LANGUAGE sql IMMUTABLE AS $$
  SELECT '00000000-0000-0000-0000-000000000000'::uuid
$$;

-- The four keys a change of `account_id`, `status` and `outcome_unknown` is counted under.
CREATE FUNCTION change_day_keys(account_id uuid, status text, outcome_unknown boolean)
RETURNS TABLE (account_id uuid, status text, outcome_unknown boolean) LANGUAGE sql IMMUTABLE AS $$
  VALUES ($1, $2, $3), (change_day_every_account(), $2, $3), ($1, '*', false), (change_day_every_account(), '*', false)
$$;

-- Adds one statement's delta (per key: workspace_id, day, account_id, status, outcome_unknown, n),
-- folding in the key's rows that no other transaction holds (as change_counts_add).
CREATE FUNCTION change_day_counts_add(delta jsonb) RETURNS void LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  WITH d AS (
         SELECT workspace_id, day, account_id, status, outcome_unknown, sum(n) AS n
           FROM jsonb_to_recordset(delta)
                  AS x(workspace_id uuid, day timestamptz, account_id uuid, status text, outcome_unknown boolean, n bigint)
          GROUP BY 1, 2, 3, 4, 5 HAVING sum(n) <> 0
       ),
       folded AS (
         DELETE FROM change_day_counts k
          WHERE k.ctid = ANY (ARRAY(
                  SELECT h.ctid FROM d CROSS JOIN LATERAL (
                    SELECT h.ctid FROM change_day_counts h
                     WHERE h.workspace_id = d.workspace_id AND h.day = d.day AND h.status = d.status
                       AND h.account_id = d.account_id AND h.outcome_unknown = d.outcome_unknown
                       FOR UPDATE SKIP LOCKED) h))
         RETURNING k.workspace_id, k.day, k.account_id, k.status, k.outcome_unknown, k.n
       )
  INSERT INTO change_day_counts (workspace_id, day, account_id, status, outcome_unknown, n)
  SELECT workspace_id, day, account_id, status, outcome_unknown, sum(n)
    FROM (SELECT workspace_id, day, account_id, status, outcome_unknown, n FROM d
          UNION ALL SELECT workspace_id, day, account_id, status, outcome_unknown, n FROM folded) s
   GROUP BY 1, 2, 3, 4, 5 HAVING sum(n) <> 0;
END $$;

CREATE FUNCTION change_day_counts_on_insert() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM change_day_counts_add(coalesce(jsonb_agg(d), '[]'))
     FROM (SELECT r.workspace_id, change_day(r.prepared_at) AS day, k.account_id, k.status, k.outcome_unknown,
                  count(*) AS n
             FROM new_rows r
                  CROSS JOIN LATERAL change_day_keys(r.account_id, r.status,
                    change_outcome_unknown(r.status, r.sent_at, r.upstream_status, r.resolution)) k
            GROUP BY 1, 2, 3, 4, 5) d;
  RETURN NULL;
END $$;

-- A move to another account leaves the every-account rows as they were, a status move the
-- every-status rows (their deltas cancel).
CREATE FUNCTION change_day_counts_on_update() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
DECLARE
  before_day timestamptz := change_day(OLD.prepared_at);
  after_day timestamptz := change_day(NEW.prepared_at);
  before_unknown boolean := change_outcome_unknown(OLD.status, OLD.sent_at, OLD.upstream_status, OLD.resolution);
  after_unknown boolean := change_outcome_unknown(NEW.status, NEW.sent_at, NEW.upstream_status, NEW.resolution);
BEGIN
  PERFORM change_day_counts_add(jsonb_agg(jsonb_build_object(
            'workspace_id', m.workspace_id, 'day', m.day, 'account_id', k.account_id, 'status', k.status,
            'outcome_unknown', k.outcome_unknown, 'n', m.n)))
     FROM (VALUES (OLD.workspace_id, before_day, OLD.account_id, OLD.status, before_unknown, -1),
                  (NEW.workspace_id, after_day, NEW.account_id, NEW.status, after_unknown, 1))
            m (workspace_id, day, account_id, status, outcome_unknown, n)
          CROSS JOIN LATERAL change_day_keys(m.account_id, m.status, m.outcome_unknown) k;
  RETURN NULL;
END $$;

CREATE FUNCTION change_day_counts_on_delete() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM change_day_counts_add(coalesce(jsonb_agg(d), '[]'))
     FROM (SELECT r.workspace_id, change_day(r.prepared_at) AS day, k.account_id, k.status, k.outcome_unknown,
                  -count(*) AS n
             FROM old_rows r
                  CROSS JOIN LATERAL change_day_keys(r.account_id, r.status,
                    change_outcome_unknown(r.status, r.sent_at, r.upstream_status, r.resolution)) k
            GROUP BY 1, 2, 3, 4, 5) d;
  RETURN NULL;
END $$;

CREATE FUNCTION change_day_counts_on_truncate() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  DELETE FROM change_day_counts;
  RETURN NULL;
END $$;

CREATE TRIGGER change_day_counts_insert AFTER INSERT ON changes REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION change_day_counts_on_insert();
-- As 0017's, and also when the change's day moves.
CREATE TRIGGER change_day_counts_update AFTER UPDATE ON changes FOR EACH ROW
  WHEN (OLD.workspace_id IS DISTINCT FROM NEW.workspace_id OR OLD.account_id IS DISTINCT FROM NEW.account_id
        OR OLD.status IS DISTINCT FROM NEW.status
        OR change_day(OLD.prepared_at) IS DISTINCT FROM change_day(NEW.prepared_at)
        OR change_outcome_unknown(OLD.status, OLD.sent_at, OLD.upstream_status, OLD.resolution)
           IS DISTINCT FROM change_outcome_unknown(NEW.status, NEW.sent_at, NEW.upstream_status, NEW.resolution))
  EXECUTE FUNCTION change_day_counts_on_update();
CREATE TRIGGER change_day_counts_delete AFTER DELETE ON changes REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION change_day_counts_on_delete();
CREATE TRIGGER change_day_counts_truncate AFTER TRUNCATE ON changes
  FOR EACH STATEMENT EXECUTE FUNCTION change_day_counts_on_truncate();

-- The counts of the changes already there (the triggers hold writes off until this commits).
INSERT INTO change_day_counts (workspace_id, day, account_id, status, outcome_unknown, n)
SELECT c.workspace_id, change_day(c.prepared_at), k.account_id, k.status, k.outcome_unknown, count(*)
  FROM changes c
       CROSS JOIN LATERAL change_day_keys(c.account_id, c.status,
         change_outcome_unknown(c.status, c.sent_at, c.upstream_status, c.resolution)) k
 GROUP BY 1, 2, 3, 4, 5;
