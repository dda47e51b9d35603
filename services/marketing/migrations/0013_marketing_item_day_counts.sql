-- A deep page of the marketing items list without skipping every item before it: the kept counts
-- of 0012 (live items only) also kept per UTC day of `updated_at`, the list's order, as the changes
-- service's `change_day_counts` (its migration 0019 says why a day and why a sum of rows). To read
-- the page at offset k, the store sums the days newest first to find the day holding the k-th match
-- and the r matches of the days after it, then skips only k - r items from that day's end
-- (src/store/item-store.ts listItems). A list with free text (`query`) keeps the plain offset.
--
-- The list orders by the update time, so an update moves its item to the head: a save on a later
-- day than the item's last moves its count from the old day to the new one.
--
-- Each live item is counted under every combination of the list's filters it matches: its kind or
-- every kind, its collection or every collection, no tag or each of its tags (an item has at most
-- 30, so at most 124 keys). A key is the JSON array [kind, collection, tag], null standing for the
-- filter not given: no kind, collection or tag is JSON null, so the key of a filter is unambiguous
-- whatever text a collection or tag holds, and every list reads one row a day.
CREATE TABLE marketing_item_day_counts (
  workspace_id uuid NOT NULL,
  key text NOT NULL,
  day timestamptz NOT NULL,
  n bigint NOT NULL
);
-- The fold's key, and every read: one filter, newest day first.
CREATE INDEX marketing_item_day_counts_key ON marketing_item_day_counts (workspace_id, key, day DESC) INCLUDE (n);

-- The day (UTC) an item updated at `at` is counted in: whatever the session's time zone.
CREATE FUNCTION marketing_item_day(at timestamptz) RETURNS timestamptz LANGUAGE sql IMMUTABLE AS $$
  SELECT date_trunc('day', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
$$;

-- The key of the list filter of `kind`, `collection` and `tag`, each null when not given.
CREATE FUNCTION marketing_item_day_key(kind text, collection text, tag text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_build_array(kind, collection, tag)::text
$$;

-- The keys one item is counted under: none when it is archived.
CREATE FUNCTION marketing_item_day_keys(kind text, collection text, tags text[], archived_at timestamptz)
RETURNS SETOF text LANGUAGE sql IMMUTABLE AS $$
  SELECT marketing_item_day_key(k, c, t)
    FROM (VALUES (kind), (NULL)) AS ks(k)
         CROSS JOIN (VALUES (collection), (NULL)) AS cs(c)
         CROSS JOIN (SELECT NULL::text AS t UNION ALL SELECT DISTINCT u FROM unnest(tags) AS u) AS ts
   WHERE archived_at IS NULL
$$;

-- Adds one statement's delta (per key: workspace_id, key, day, n), folding in the key's rows that
-- no other transaction holds (as marketing_item_counts_add).
CREATE FUNCTION marketing_item_day_counts_add(delta jsonb) RETURNS void LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  WITH d AS (
         SELECT workspace_id, key, day, sum(n) AS n
           FROM jsonb_to_recordset(delta) AS x(workspace_id uuid, key text, day timestamptz, n bigint)
          GROUP BY 1, 2, 3 HAVING sum(n) <> 0
       ),
       folded AS (
         DELETE FROM marketing_item_day_counts k
          WHERE k.ctid = ANY (ARRAY(
                  SELECT h.ctid FROM d CROSS JOIN LATERAL (
                    SELECT h.ctid FROM marketing_item_day_counts h
                     WHERE h.workspace_id = d.workspace_id AND h.key = d.key AND h.day = d.day
                       FOR UPDATE SKIP LOCKED) h))
         RETURNING k.workspace_id, k.key, k.day, k.n
       )
  INSERT INTO marketing_item_day_counts (workspace_id, key, day, n)
  SELECT workspace_id, key, day, sum(n)
    FROM (SELECT workspace_id, key, day, n FROM d UNION ALL SELECT workspace_id, key, day, n FROM folded) s
   GROUP BY 1, 2, 3 HAVING sum(n) <> 0;
END $$;

CREATE FUNCTION marketing_item_day_counts_on_insert() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM marketing_item_day_counts_add(coalesce(jsonb_agg(d), '[]'))
     FROM (SELECT r.workspace_id, k.key, marketing_item_day(r.updated_at) AS day, count(*) AS n
             FROM new_rows r
                  CROSS JOIN LATERAL marketing_item_day_keys(r.kind, r.collection, r.tags, r.archived_at) AS k(key)
            GROUP BY 1, 2, 3) d;
  RETURN NULL;
END $$;

CREATE FUNCTION marketing_item_day_counts_on_update() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM marketing_item_day_counts_add(coalesce(jsonb_agg(d), '[]'))
     FROM (SELECT OLD.workspace_id, k.key, marketing_item_day(OLD.updated_at) AS day, -1 AS n
             FROM marketing_item_day_keys(OLD.kind, OLD.collection, OLD.tags, OLD.archived_at) AS k(key)
           UNION ALL
           SELECT NEW.workspace_id, k.key, marketing_item_day(NEW.updated_at) AS day, 1 AS n
             FROM marketing_item_day_keys(NEW.kind, NEW.collection, NEW.tags, NEW.archived_at) AS k(key)) d;
  RETURN NULL;
END $$;

CREATE FUNCTION marketing_item_day_counts_on_delete() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM marketing_item_day_counts_add(coalesce(jsonb_agg(d), '[]'))
     FROM (SELECT r.workspace_id, k.key, marketing_item_day(r.updated_at) AS day, -count(*) AS n
             FROM old_rows r
                  CROSS JOIN LATERAL marketing_item_day_keys(r.kind, r.collection, r.tags, r.archived_at) AS k(key)
            GROUP BY 1, 2, 3) d;
  RETURN NULL;
END $$;

CREATE FUNCTION marketing_item_day_counts_on_truncate() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  DELETE FROM marketing_item_day_counts;
  RETURN NULL;
END $$;

CREATE TRIGGER marketing_item_day_counts_insert AFTER INSERT ON marketing_items REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION marketing_item_day_counts_on_insert();
-- As 0012's, and also when a save moves the item to another day: a save on the item's day (and an
-- archived item's save) moves no count.
CREATE TRIGGER marketing_item_day_counts_update AFTER UPDATE ON marketing_items FOR EACH ROW
  WHEN (OLD.workspace_id IS DISTINCT FROM NEW.workspace_id OR OLD.kind IS DISTINCT FROM NEW.kind
        OR OLD.collection IS DISTINCT FROM NEW.collection OR OLD.tags IS DISTINCT FROM NEW.tags
        OR (OLD.archived_at IS NULL) <> (NEW.archived_at IS NULL)
        OR (NEW.archived_at IS NULL AND marketing_item_day(OLD.updated_at) IS DISTINCT FROM marketing_item_day(NEW.updated_at)))
  EXECUTE FUNCTION marketing_item_day_counts_on_update();
CREATE TRIGGER marketing_item_day_counts_delete AFTER DELETE ON marketing_items REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION marketing_item_day_counts_on_delete();
CREATE TRIGGER marketing_item_day_counts_truncate AFTER TRUNCATE ON marketing_items
  FOR EACH STATEMENT EXECUTE FUNCTION marketing_item_day_counts_on_truncate();

-- The counts of the items already there (the triggers hold writes off until this commits).
INSERT INTO marketing_item_day_counts (workspace_id, key, day, n)
SELECT i.workspace_id, k.key, marketing_item_day(i.updated_at), count(*)
  FROM marketing_items i
       CROSS JOIN LATERAL marketing_item_day_keys(i.kind, i.collection, i.tags, i.archived_at) AS k(key)
 GROUP BY 1, 2, 3;
