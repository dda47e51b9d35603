-- A workspace's saved marketing items. An item id is unique within its workspace; every query
-- names the workspace, so one workspace never reaches another's items.

CREATE TABLE marketing_items (
  workspace_id uuid NOT NULL,
  item_id uuid NOT NULL,
  kind text NOT NULL CHECK (kind IN ('brand', 'brief', 'playbook', 'inspiration', 'batch', 'creative')),
  name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
  collection text NOT NULL DEFAULT '' CHECK (char_length(collection) <= 200),
  tags text[] NOT NULL DEFAULT '{}' CHECK (cardinality(tags) <= 30),
  data jsonb NOT NULL CHECK (jsonb_typeof(data) = 'object'),
  revision integer NOT NULL CHECK (revision >= 1),
  archived_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  -- What a query matches: the name and every text value of the data (not its property names,
  -- so searching "offer" does not find every brief).
  search_text text NOT NULL GENERATED ALWAYS AS (
    name || ' ' || jsonb_path_query_array(data, 'strict $.** ? (@.type() == "string")')::text
  ) STORED,
  PRIMARY KEY (workspace_id, item_id)
);

-- Listing: a workspace's live items, most recently updated first, with or without a kind.
CREATE INDEX marketing_items_live_by_update
  ON marketing_items (workspace_id, updated_at DESC, item_id DESC)
  WHERE archived_at IS NULL;
CREATE INDEX marketing_items_live_by_kind
  ON marketing_items (workspace_id, kind, updated_at DESC, item_id DESC)
  WHERE archived_at IS NULL;
CREATE INDEX marketing_items_live_by_collection
  ON marketing_items (workspace_id, collection, updated_at DESC)
  WHERE archived_at IS NULL;
-- The tag filter (tags @> ARRAY[tag]).
CREATE INDEX marketing_items_tags ON marketing_items USING gin (tags) WHERE archived_at IS NULL;

-- Search (search_text ILIKE '%text%'): a trigram index. pg_trgm is a trusted extension; it is
-- installed in this schema unless the database already has it elsewhere, so the operator class
-- is named with the schema it actually lives in.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
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
