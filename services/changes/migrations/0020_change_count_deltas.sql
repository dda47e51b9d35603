-- A change's status move adds its deltas to the kept counts (0017's change_counts, 0019's
-- change_day_counts) as new rows, and folds a key's rows only now and then, not at every move.
--
-- Until now every move folded each key it touched (two of change_counts, four of change_day_counts):
-- it locked the key's rows no other transaction held, deleted them and inserted their sum. Under
-- concurrent applies that was most of a move's cost in the database: every fold read the key's
-- index range again, among the dead rows the folds before it had left (about 0.5 ms of CPU a move
-- with 16 writers, where the update without the counts takes 0.25 to 0.7 ms). Readers already sum
-- a key's rows, so a key's count is exact whether its rows were folded or not.
--
-- Now a move inserts its deltas (the keys whose sum moved, six rows at most) and reads nothing;
-- about one move in eight (random, FOLD_ONE_IN) folds its keys as before, so a key written often
-- keeps a few rows, about eight on average and more only while many writers add at once. The two
-- tables' triggers are one, so a move runs one trigger function, not two. Inserts and deletes of
-- changes still fold at once (one statement for many rows), as before. Nothing waits on another
-- writer: an insert takes no lock on the key's rows, and a fold still skips the rows others hold.
CREATE FUNCTION change_counts_on_move() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
DECLARE
  -- FOLD_ONE_IN: one move in this many folds the keys it touched.
  fold boolean := random() < 1.0 / 8;
  before_unknown boolean := change_outcome_unknown(OLD.status, OLD.sent_at, OLD.upstream_status, OLD.resolution);
  after_unknown boolean := change_outcome_unknown(NEW.status, NEW.sent_at, NEW.upstream_status, NEW.resolution);
  before_day timestamptz := change_day(OLD.prepared_at);
  after_day timestamptz := change_day(NEW.prepared_at);
BEGIN
  IF fold THEN
    PERFORM change_counts_add(jsonb_build_array(
      jsonb_build_object('workspace_id', OLD.workspace_id, 'account_id', OLD.account_id, 'status', OLD.status,
                         'outcome_unknown', before_unknown, 'n', -1),
      jsonb_build_object('workspace_id', NEW.workspace_id, 'account_id', NEW.account_id, 'status', NEW.status,
                         'outcome_unknown', after_unknown, 'n', 1)));
    PERFORM change_day_counts_add(jsonb_agg(jsonb_build_object(
              'workspace_id', m.workspace_id, 'day', m.day, 'account_id', k.account_id, 'status', k.status,
              'outcome_unknown', k.outcome_unknown, 'n', m.n)))
       FROM (VALUES (OLD.workspace_id, before_day, OLD.account_id, OLD.status, before_unknown, -1),
                    (NEW.workspace_id, after_day, NEW.account_id, NEW.status, after_unknown, 1))
              m (workspace_id, day, account_id, status, outcome_unknown, n)
            CROSS JOIN LATERAL change_day_keys(m.account_id, m.status, m.outcome_unknown) k;
    RETURN NULL;
  END IF;
  -- The keys whose sum moved: a move of the day alone leaves change_counts as it was, a status
  -- move the every-status rows of change_day_counts.
  INSERT INTO change_counts (workspace_id, account_id, status, outcome_unknown, n)
  SELECT workspace_id, account_id, status, outcome_unknown, sum(n)
    FROM (VALUES (OLD.workspace_id, OLD.account_id, OLD.status, before_unknown, -1),
                 (NEW.workspace_id, NEW.account_id, NEW.status, after_unknown, 1))
           m (workspace_id, account_id, status, outcome_unknown, n)
   GROUP BY 1, 2, 3, 4 HAVING sum(n) <> 0;
  INSERT INTO change_day_counts (workspace_id, day, account_id, status, outcome_unknown, n)
  SELECT m.workspace_id, m.day, k.account_id, k.status, k.outcome_unknown, sum(m.n)
    FROM (VALUES (OLD.workspace_id, before_day, OLD.account_id, OLD.status, before_unknown, -1),
                 (NEW.workspace_id, after_day, NEW.account_id, NEW.status, after_unknown, 1))
           m (workspace_id, day, account_id, status, outcome_unknown, n)
         CROSS JOIN LATERAL change_day_keys(m.account_id, m.status, m.outcome_unknown) k
   GROUP BY 1, 2, 3, 4, 5 HAVING sum(m.n) <> 0;
  RETURN NULL;
END $$;

DROP TRIGGER change_counts_update ON changes;
DROP TRIGGER change_day_counts_update ON changes;
DROP FUNCTION change_counts_on_update();
DROP FUNCTION change_day_counts_on_update();

-- 0019's condition (0017's, and the day), so that an update that moves no key costs nothing.
CREATE TRIGGER change_counts_move AFTER UPDATE ON changes FOR EACH ROW
  WHEN (OLD.workspace_id IS DISTINCT FROM NEW.workspace_id OR OLD.account_id IS DISTINCT FROM NEW.account_id
        OR OLD.status IS DISTINCT FROM NEW.status
        OR change_day(OLD.prepared_at) IS DISTINCT FROM change_day(NEW.prepared_at)
        OR change_outcome_unknown(OLD.status, OLD.sent_at, OLD.upstream_status, OLD.resolution)
           IS DISTINCT FROM change_outcome_unknown(NEW.status, NEW.sent_at, NEW.upstream_status, NEW.resolution))
  EXECUTE FUNCTION change_counts_on_move();
