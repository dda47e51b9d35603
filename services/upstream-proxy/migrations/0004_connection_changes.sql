-- A count of the changes made to connections, moved in the same transaction as each change, so
-- that a replica holding connections in memory (with their credentials opened) can tell with one
-- tiny read whether any of them may have changed since it read them: a credential replaced or a
-- connection removed is never used by a call that reaches a replica after the change committed.
-- New connections do not move it: a replica never holds a connection it has not read.

CREATE TABLE connection_changes (
  only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  version bigint NOT NULL
);
INSERT INTO connection_changes (only_row, version) VALUES (true, 0);

-- The schema this migration runs in, whatever the search path of the session making the change.
CREATE FUNCTION count_connection_change() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  UPDATE connection_changes SET version = version + 1;
  RETURN NULL;
END
$$;

CREATE TRIGGER connections_changed AFTER UPDATE OR DELETE ON connections
  FOR EACH STATEMENT EXECUTE FUNCTION count_connection_change();
CREATE TRIGGER connections_truncated AFTER TRUNCATE ON connections
  FOR EACH STATEMENT EXECUTE FUNCTION count_connection_change();
