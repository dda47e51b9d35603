-- The marketing items list's `total` without counting every match on each call, for the filters
-- that hold no free text: counts of live items kept per workspace, kind and collection, and per
-- workspace, tag, kind and collection (an item has at most 30 tags, so it moves at most 31 keys),
-- moved by triggers on `marketing_items` in the transaction that writes the item. An archived item
-- is in no count. The free-text filter (`query`) still counts its matches, in the trigram index.
--
-- As the changes service's `change_counts`: a key's count is a sum of rows, each writer inserting
-- its delta and folding in only the key's rows no one else holds (`FOR UPDATE SKIP LOCKED`), so a
-- writer never waits on another for a count and adds no lock order to its transaction.
CREATE TABLE marketing_item_counts (
  workspace_id uuid NOT NULL,
  kind text NOT NULL,
  collection text NOT NULL,
  n bigint NOT NULL
);
CREATE INDEX marketing_item_counts_key ON marketing_item_counts (workspace_id, kind, collection);

CREATE TABLE marketing_item_tag_counts (
  workspace_id uuid NOT NULL,
  tag text NOT NULL,
  kind text NOT NULL,
  collection text NOT NULL,
  n bigint NOT NULL
);
CREATE INDEX marketing_item_tag_counts_key ON marketing_item_tag_counts (workspace_id, tag, kind, collection);

-- The keys one item is counted under besides its workspace, kind and collection: none when it is
-- archived; else the whole-item key (a null tag) and each of its tags once (the tag filter,
-- `tags @> ARRAY[tag]`, matches an item once however often it repeats the tag).
CREATE FUNCTION marketing_item_count_tags(tags text[], archived_at timestamptz) RETURNS SETOF text
LANGUAGE sql IMMUTABLE AS $$
  SELECT NULL::text WHERE archived_at IS NULL
  UNION ALL
  SELECT DISTINCT t FROM unnest(tags) AS t WHERE archived_at IS NULL
$$;

-- Adds one statement's delta (per key: workspace_id, kind, collection, tag or null for the whole
-- item, n) to the kept counts, folding in the key's rows that no other transaction holds.
-- PL/pgSQL rather than SQL so that a session plans the statements once, not on every call.
CREATE FUNCTION marketing_item_counts_add(delta jsonb) RETURNS void LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  WITH d AS (
         SELECT workspace_id, kind, collection, sum(n) AS n
           FROM jsonb_to_recordset(delta) AS x(workspace_id uuid, kind text, collection text, tag text, n bigint)
          WHERE tag IS NULL
          GROUP BY 1, 2, 3 HAVING sum(n) <> 0
       ),
       folded AS (
         DELETE FROM marketing_item_counts k
          WHERE k.ctid = ANY (ARRAY(
                  -- Per key, so that each is an index lookup whatever the planner guesses of d.
                  SELECT h.ctid FROM d CROSS JOIN LATERAL (
                    SELECT h.ctid FROM marketing_item_counts h
                     WHERE h.workspace_id = d.workspace_id AND h.kind = d.kind AND h.collection = d.collection
                       FOR UPDATE SKIP LOCKED) h))
         RETURNING k.workspace_id, k.kind, k.collection, k.n
       )
  INSERT INTO marketing_item_counts (workspace_id, kind, collection, n)
  SELECT workspace_id, kind, collection, sum(n)
    FROM (SELECT workspace_id, kind, collection, n FROM d
          UNION ALL SELECT workspace_id, kind, collection, n FROM folded) s
   GROUP BY 1, 2, 3 HAVING sum(n) <> 0;

  WITH d AS (
         SELECT workspace_id, tag, kind, collection, sum(n) AS n
           FROM jsonb_to_recordset(delta) AS x(workspace_id uuid, kind text, collection text, tag text, n bigint)
          WHERE tag IS NOT NULL
          GROUP BY 1, 2, 3, 4 HAVING sum(n) <> 0
       ),
       folded AS (
         DELETE FROM marketing_item_tag_counts k
          WHERE k.ctid = ANY (ARRAY(
                  SELECT h.ctid FROM d CROSS JOIN LATERAL (
                    SELECT h.ctid FROM marketing_item_tag_counts h
                     WHERE h.workspace_id = d.workspace_id AND h.tag = d.tag AND h.kind = d.kind
                       AND h.collection = d.collection
                       FOR UPDATE SKIP LOCKED) h))
         RETURNING k.workspace_id, k.tag, k.kind, k.collection, k.n
       )
  INSERT INTO marketing_item_tag_counts (workspace_id, tag, kind, collection, n)
  SELECT workspace_id, tag, kind, collection, sum(n)
    FROM (SELECT workspace_id, tag, kind, collection, n FROM d
          UNION ALL SELECT workspace_id, tag, kind, collection, n FROM folded) s
   GROUP BY 1, 2, 3, 4 HAVING sum(n) <> 0;
END $$;

-- Inserts and deletes are counted per statement, with transition tables: a statement writing many
-- items adds one delta per key, not one per row.
CREATE FUNCTION marketing_item_counts_on_insert() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM marketing_item_counts_add(coalesce(jsonb_agg(d), '[]'))
     FROM (SELECT r.workspace_id, r.kind, r.collection, k.tag, count(*) AS n
             FROM new_rows r CROSS JOIN LATERAL marketing_item_count_tags(r.tags, r.archived_at) AS k(tag)
            GROUP BY 1, 2, 3, 4) d;
  RETURN NULL;
END $$;

-- An update moves counts only when it changes what the item is counted under (the trigger's
-- WHEN): an edit of the name or the data, the most common update, runs no trigger.
CREATE FUNCTION marketing_item_counts_on_update() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM marketing_item_counts_add(coalesce(jsonb_agg(d), '[]'))
     FROM (SELECT OLD.workspace_id, OLD.kind, OLD.collection, k.tag, -1 AS n
             FROM marketing_item_count_tags(OLD.tags, OLD.archived_at) AS k(tag)
           UNION ALL
           SELECT NEW.workspace_id, NEW.kind, NEW.collection, k.tag, 1 AS n
             FROM marketing_item_count_tags(NEW.tags, NEW.archived_at) AS k(tag)) d;
  RETURN NULL;
END $$;

CREATE FUNCTION marketing_item_counts_on_delete() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM marketing_item_counts_add(coalesce(jsonb_agg(d), '[]'))
     FROM (SELECT r.workspace_id, r.kind, r.collection, k.tag, -count(*) AS n
             FROM old_rows r CROSS JOIN LATERAL marketing_item_count_tags(r.tags, r.archived_at) AS k(tag)
            GROUP BY 1, 2, 3, 4) d;
  RETURN NULL;
END $$;

CREATE FUNCTION marketing_item_counts_on_truncate() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  DELETE FROM marketing_item_counts;
  DELETE FROM marketing_item_tag_counts;
  RETURN NULL;
END $$;

CREATE TRIGGER marketing_item_counts_insert AFTER INSERT ON marketing_items REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION marketing_item_counts_on_insert();
CREATE TRIGGER marketing_item_counts_update AFTER UPDATE ON marketing_items FOR EACH ROW
  WHEN (OLD.workspace_id IS DISTINCT FROM NEW.workspace_id OR OLD.kind IS DISTINCT FROM NEW.kind
        OR OLD.collection IS DISTINCT FROM NEW.collection OR OLD.tags IS DISTINCT FROM NEW.tags
        OR (OLD.archived_at IS NULL) <> (NEW.archived_at IS NULL))
  EXECUTE FUNCTION marketing_item_counts_on_update();
CREATE TRIGGER marketing_item_counts_delete AFTER DELETE ON marketing_items REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION marketing_item_counts_on_delete();
CREATE TRIGGER marketing_item_counts_truncate AFTER TRUNCATE ON marketing_items
  FOR EACH STATEMENT EXECUTE FUNCTION marketing_item_counts_on_truncate();

-- The counts of the items already there (the triggers hold writes off until this commits).
INSERT INTO marketing_item_counts (workspace_id, kind, collection, n)
SELECT workspace_id, kind, collection, count(*)
  FROM marketing_items WHERE archived_at IS NULL GROUP BY 1, 2, 3;
INSERT INTO marketing_item_tag_counts (workspace_id, tag, kind, collection, n)
SELECT workspace_id, t, kind, collection, count(*)
  FROM marketing_items CROSS JOIN LATERAL (SELECT DISTINCT t FROM unnest(tags) AS t) AS u
 WHERE archived_at IS NULL GROUP BY 1, 2, 3, 4;
