-- A deep page of the proposals list without skipping every proposal before it: the kept counts of
-- 0004 also kept per UTC day of `created_at`, the list's order, as the changes service's
-- `change_day_counts` (its migration 0019 says why a day and why a sum of rows). To read the page
-- at offset k, the store sums the days newest first to find the day holding the k-th match and
-- the r matches of the days after it, then skips only k - r proposals from that day's end
-- (src/store/review-store.ts listProposals).
--
-- Each proposal is counted four times: under its optimizer and ad account and under the nil UUID
-- for both, which stands for every optimizer and account (no optimizer or account has it: their
-- ids are random UUIDs), each with its status and with `*`, which stands for every status. A list
-- of the whole workspace, of one optimizer or of one account, with one status or none, then sums
-- one row a day however many optimizers and statuses there are.
CREATE TABLE proposal_day_counts (
  workspace_id uuid NOT NULL,
  day timestamptz NOT NULL,
  optimizer_id uuid NOT NULL,
  account_id uuid NOT NULL,
  status text NOT NULL,
  n bigint NOT NULL
);
-- The fold's key.
CREATE INDEX proposal_day_counts_key ON proposal_day_counts (workspace_id, optimizer_id, account_id, status, day);
-- The reads, newest day first: of one optimizer (or, under the nil UUID, of every one), and of one
-- account, each of one status or of `*`.
CREATE INDEX proposal_day_counts_optimizer ON proposal_day_counts (workspace_id, optimizer_id, status, day DESC)
  INCLUDE (account_id, n);
CREATE INDEX proposal_day_counts_account ON proposal_day_counts (workspace_id, account_id, status, day DESC)
  INCLUDE (optimizer_id, n);

-- The day (UTC) a proposal created at `at` is counted in: whatever the session's time zone.
CREATE FUNCTION proposal_day(at timestamptz) RETURNS timestamptz LANGUAGE sql IMMUTABLE AS $$
  SELECT date_trunc('day', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
$$;

-- The id the counts of every optimizer and every account are kept under.
CREATE FUNCTION proposal_day_every() RETURNS uuid LANGUAGE sql IMMUTABLE AS $$
  SELECT '00000000-0000-0000-0000-000000000000'::uuid
$$;

-- The four keys a proposal of `optimizer_id`, `account_id` and `status` is counted under.
CREATE FUNCTION proposal_day_keys(optimizer_id uuid, account_id uuid, status text)
RETURNS TABLE (optimizer_id uuid, account_id uuid, status text) LANGUAGE sql IMMUTABLE AS $$
  VALUES ($1, $2, $3), (proposal_day_every(), proposal_day_every(), $3), ($1, $2, '*'),
         (proposal_day_every(), proposal_day_every(), '*')
$$;

-- Adds one statement's delta (per key: workspace_id, day, optimizer_id, account_id, status, n),
-- folding in the key's rows that no other transaction holds (as proposal_counts_add).
CREATE FUNCTION proposal_day_counts_add(delta jsonb) RETURNS void LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  WITH d AS (
         SELECT workspace_id, day, optimizer_id, account_id, status, sum(n) AS n
           FROM jsonb_to_recordset(delta)
                  AS x(workspace_id uuid, day timestamptz, optimizer_id uuid, account_id uuid, status text, n bigint)
          GROUP BY 1, 2, 3, 4, 5 HAVING sum(n) <> 0
       ),
       folded AS (
         DELETE FROM proposal_day_counts k
          WHERE k.ctid = ANY (ARRAY(
                  SELECT h.ctid FROM d CROSS JOIN LATERAL (
                    SELECT h.ctid FROM proposal_day_counts h
                     WHERE h.workspace_id = d.workspace_id AND h.optimizer_id = d.optimizer_id
                       AND h.account_id = d.account_id AND h.status = d.status AND h.day = d.day
                       FOR UPDATE SKIP LOCKED) h))
         RETURNING k.workspace_id, k.day, k.optimizer_id, k.account_id, k.status, k.n
       )
  INSERT INTO proposal_day_counts (workspace_id, day, optimizer_id, account_id, status, n)
  SELECT workspace_id, day, optimizer_id, account_id, status, sum(n)
    FROM (SELECT workspace_id, day, optimizer_id, account_id, status, n FROM d
          UNION ALL SELECT workspace_id, day, optimizer_id, account_id, status, n FROM folded) s
   GROUP BY 1, 2, 3, 4, 5 HAVING sum(n) <> 0;
END $$;

CREATE FUNCTION proposal_day_counts_on_insert() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM proposal_day_counts_add(coalesce(jsonb_agg(d), '[]'))
     FROM (SELECT r.workspace_id, proposal_day(r.created_at) AS day, k.optimizer_id, k.account_id, k.status, count(*) AS n
             FROM new_rows r CROSS JOIN LATERAL proposal_day_keys(r.optimizer_id, r.account_id, r.status) k
            GROUP BY 1, 2, 3, 4, 5) d;
  RETURN NULL;
END $$;

-- A move to another optimizer or account leaves the rows of every one as they were, a status move
-- the rows of every status (their deltas cancel).
CREATE FUNCTION proposal_day_counts_on_update() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM proposal_day_counts_add(jsonb_agg(jsonb_build_object(
            'workspace_id', m.workspace_id, 'day', m.day, 'optimizer_id', k.optimizer_id,
            'account_id', k.account_id, 'status', k.status, 'n', m.n)))
     FROM (VALUES (OLD.workspace_id, proposal_day(OLD.created_at), OLD.optimizer_id, OLD.account_id, OLD.status, -1),
                  (NEW.workspace_id, proposal_day(NEW.created_at), NEW.optimizer_id, NEW.account_id, NEW.status, 1))
            m (workspace_id, day, optimizer_id, account_id, status, n)
          CROSS JOIN LATERAL proposal_day_keys(m.optimizer_id, m.account_id, m.status) k;
  RETURN NULL;
END $$;

CREATE FUNCTION proposal_day_counts_on_delete() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM proposal_day_counts_add(coalesce(jsonb_agg(d), '[]'))
     FROM (SELECT r.workspace_id, proposal_day(r.created_at) AS day, k.optimizer_id, k.account_id, k.status, -count(*) AS n
             FROM old_rows r CROSS JOIN LATERAL proposal_day_keys(r.optimizer_id, r.account_id, r.status) k
            GROUP BY 1, 2, 3, 4, 5) d;
  RETURN NULL;
END $$;

CREATE FUNCTION proposal_day_counts_on_truncate() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  DELETE FROM proposal_day_counts;
  RETURN NULL;
END $$;

CREATE TRIGGER proposal_day_counts_insert AFTER INSERT ON proposals REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION proposal_day_counts_on_insert();
CREATE TRIGGER proposal_day_counts_update AFTER UPDATE ON proposals FOR EACH ROW
  WHEN ((OLD.workspace_id, OLD.optimizer_id, OLD.account_id, OLD.status, proposal_day(OLD.created_at))
        IS DISTINCT FROM (NEW.workspace_id, NEW.optimizer_id, NEW.account_id, NEW.status, proposal_day(NEW.created_at)))
  EXECUTE FUNCTION proposal_day_counts_on_update();
CREATE TRIGGER proposal_day_counts_delete AFTER DELETE ON proposals REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION proposal_day_counts_on_delete();
CREATE TRIGGER proposal_day_counts_truncate AFTER TRUNCATE ON proposals
  FOR EACH STATEMENT EXECUTE FUNCTION proposal_day_counts_on_truncate();

-- The counts of the proposals already there (the triggers hold writes off until this commits).
INSERT INTO proposal_day_counts (workspace_id, day, optimizer_id, account_id, status, n)
SELECT p.workspace_id, proposal_day(p.created_at), k.optimizer_id, k.account_id, k.status, count(*)
  FROM proposals p CROSS JOIN LATERAL proposal_day_keys(p.optimizer_id, p.account_id, p.status) k
 GROUP BY 1, 2, 3, 4, 5;
