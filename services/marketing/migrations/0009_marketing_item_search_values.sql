-- What a query matches, again: the name and every text value of the data, as the text itself. The
-- column of 0001 held the JSON encoding of the values (`["Say \"wow\"", "b"]`), so a query with
-- a quote or a backslash did not find the text that holds it, and `", "` found every item with
-- two values. Here each value is its own line: a query cannot hold a line break (the gateway
-- refuses control characters), so it never matches across two values. Property names are still
-- not searched.
CREATE FUNCTION marketing_item_search_text(name text, data jsonb) RETURNS text
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$
    SELECT name || E'\n' || coalesce(string_agg(v #>> '{}', E'\n'), '')
      FROM jsonb_path_query(data, 'strict $.** ? (@.type() == "string")') AS v
  $$;

-- Dropping the column drops its trigram index; both are made anew below.
ALTER TABLE marketing_items DROP COLUMN search_text;
ALTER TABLE marketing_items
  ADD COLUMN search_text text NOT NULL GENERATED ALWAYS AS (marketing_item_search_text(name, data)) STORED;

DO $$
DECLARE
  trgm_schema text;
BEGIN
  SELECT n.nspname INTO STRICT trgm_schema
    FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
   WHERE e.extname = 'pg_trgm';
  EXECUTE format(
    'CREATE INDEX marketing_items_search ON marketing_items USING gin (search_text %I.gin_trgm_ops) '
    'WHERE archived_at IS NULL',
    trgm_schema
  );
END
$$;
